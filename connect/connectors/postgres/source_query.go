package postgres

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/runnel-io/runnel/connect"
)

// querySpec is what the pollers of a task share: the mode and its
// columns.
type querySpec struct {
	mode    string
	inc     string   // incrementing.column.name
	ts      []string // timestamp.column.name
	delay   time.Duration
	zone    *time.Location // db.timezone
	bestFit bool           // numeric.mapping=best_fit
}

func newQuerySpec(cfg connect.Config) querySpec {
	return querySpec{
		mode:    strings.ToLower(cfg.String(keyMode)),
		inc:     strings.TrimSpace(cfg.String(keyIncColumn)),
		ts:      cfg.List(keyTSColumns),
		delay:   cfg.Millis(keyTSDelay),
		bestFit: strings.EqualFold(cfg.String(keyNumericMapping), numBestFit),
	}
}

func (q *querySpec) usesInc() bool { return q.mode == modeInc || q.mode == modeTSInc }
func (q *querySpec) usesTS() bool  { return q.mode == modeTS || q.mode == modeTSInc }

// poller reads one table, or the query, and keeps its offset: that of the
// last record it returned.
type poller struct {
	q         querySpec
	table     string // as configured; "" for the query
	query     string
	topic     string
	partition map[string]any // nil in bulk mode: no offsets

	inc    int64
	hasInc bool
	ts     time.Time
	hasTS  bool

	// The open query, between polls.
	conn     *pgx.Conn // the task's, while the query is open
	rows     pgx.Rows
	cols     []srcColumn
	incAt    int
	tsAt     []int
	held     *heldRow // timestamp mode: the last row read, whose offset waits for the next row
	next     time.Time
	failures int // connection failures in a row
}

// srcColumn is one column of the result.
type srcColumn struct {
	name string
	oid  uint32
}

// heldRow is a record whose offset is not known yet.
type heldRow struct {
	rec connect.Record
	ts  time.Time
}

func newPoller(q querySpec, table, query, topic string) *poller {
	p := &poller{q: q, table: table, query: query, topic: topic}
	if q.mode != modeBulk {
		if table != "" {
			p.partition = map[string]any{"table": table}
		} else {
			p.partition = map[string]any{"query": query}
		}
	}
	return p
}

func (p *poller) describe() string {
	if p.table != "" {
		return "table " + p.table
	}
	return "the query"
}

// loadOffset sets where the poller starts: the stored offset, else
// timestamp.initial (-1: now; empty: the first row).
func (p *poller) loadOffset(tc connect.SourceTaskContext, initial string) error {
	if p.partition == nil {
		return nil
	}
	off, err := tc.Offset(p.partition)
	if err != nil {
		return err
	}
	if off != nil {
		if n, ok := asInt(off["incrementing"]); ok {
			p.inc, p.hasInc = n, true
		}
		if ms, ok := asInt(off["timestamp"]); ok {
			nanos, _ := asInt(off["timestamp_nanos"])
			sec := ms / 1000
			if ms%1000 < 0 {
				sec--
			}
			p.ts, p.hasTS = time.Unix(sec, nanos).UTC(), true
		}
		return nil
	}
	if initial = strings.TrimSpace(initial); initial != "" && p.q.usesTS() {
		ms, err := strconv.ParseInt(initial, 10, 64)
		if err != nil {
			return fmt.Errorf("%s: %w", keyTSInitial, err)
		}
		p.ts, p.hasTS = time.UnixMilli(ms).UTC(), true
		if ms == -1 {
			p.ts = time.Now().UTC()
		}
	}
	return nil
}

func asInt(v any) (int64, bool) {
	switch n := v.(type) {
	case int64:
		return n, true
	case float64:
		return int64(n), n == math.Trunc(n)
	case int:
		return int64(n), true
	}
	return 0, false
}

// offset returns the source offset of the poller's position: Confluent's
// {"incrementing": n} and {"timestamp": epoch ms, "timestamp_nanos":
// nanoseconds of the second}; nil before there is one.
func (p *poller) offset() map[string]any {
	off := map[string]any{}
	if p.hasInc && p.q.usesInc() {
		off["incrementing"] = p.inc
	}
	if p.hasTS && p.q.usesTS() {
		off["timestamp"] = p.ts.UnixMilli()
		off["timestamp_nanos"] = int64(p.ts.Nanosecond())
	}
	if len(off) == 0 {
		return nil
	}
	return off
}

func (p *poller) from() string {
	if p.table != "" {
		schema, table := splitTableName(p.table)
		id := pgx.Identifier{table}
		if schema != "" {
			id = pgx.Identifier{schema, table}
		}
		return id.Sanitize() + " AS runnel_t"
	}
	return "(" + p.query + ") AS runnel_t"
}

// splitTableName splits schema.table.
func splitTableName(name string) (schema, table string) {
	if s, t, ok := strings.Cut(name, "."); ok {
		return s, t
	}
	return "", name
}

// open looks up the columns and starts the query from the offset.
func (p *poller) open(ctx context.Context, conn *pgx.Conn) error {
	p.conn = conn
	if err := p.probe(ctx); err != nil {
		return err
	}
	sql, args := p.sql()
	rows, err := conn.Query(ctx, sql, args...)
	if err != nil {
		return err
	}
	p.rows = rows
	return nil
}

// probe reads the result's columns (again at each query: the table may
// have changed) and checks the mode's.
func (p *poller) probe(ctx context.Context) error {
	rows, err := p.conn.Query(ctx, "SELECT * FROM "+p.from()+" LIMIT 0")
	if err != nil {
		return err
	}
	fds := rows.FieldDescriptions()
	p.cols = p.cols[:0]
	for _, fd := range fds {
		p.cols = append(p.cols, srcColumn{name: fd.Name, oid: fd.DataTypeOID})
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return err
	}
	find := func(name, key string, ok func(uint32) bool, want string) (int, error) {
		i := slices.IndexFunc(p.cols, func(c srcColumn) bool { return c.name == name })
		if i < 0 {
			return 0, fmt.Errorf("%s has no column %q (%s)", p.describe(), name, key)
		}
		if !ok(p.cols[i].oid) {
			return 0, fmt.Errorf("column %q of %s (%s) is not %s", name, p.describe(), key, want)
		}
		return i, nil
	}
	if p.q.usesInc() {
		if p.incAt, err = find(p.q.inc, keyIncColumn, isIntegral, "an integer"); err != nil {
			return err
		}
	}
	p.tsAt = p.tsAt[:0]
	if p.q.usesTS() {
		for _, name := range p.q.ts {
			i, err := find(name, keyTSColumns, isTime, "a timestamp, timestamptz or date")
			if err != nil {
				return err
			}
			p.tsAt = append(p.tsAt, i)
		}
	}
	return nil
}

func isIntegral(oid uint32) bool {
	return oid == pgtype.Int2OID || oid == pgtype.Int4OID || oid == pgtype.Int8OID || oid == pgtype.NumericOID
}

func isTime(oid uint32) bool {
	return oid == pgtype.TimestampOID || oid == pgtype.TimestamptzOID || oid == pgtype.DateOID
}

// native are the types read as they are; the rest are read as their
// PostgreSQL text (numeric included: exact; json decoded from it, so that
// its integers stay integers).
var native = map[uint32]bool{
	pgtype.Int2OID: true, pgtype.Int4OID: true, pgtype.Int8OID: true, pgtype.Float4OID: true, pgtype.Float8OID: true,
	pgtype.BoolOID: true, pgtype.TextOID: true, pgtype.VarcharOID: true, pgtype.BPCharOID: true, pgtype.NameOID: true,
	pgtype.ByteaOID:     true,
	pgtype.TimestampOID: true, pgtype.TimestamptzOID: true, pgtype.DateOID: true,
	pgtype.Int2ArrayOID: true, pgtype.Int4ArrayOID: true, pgtype.Int8ArrayOID: true, pgtype.Float4ArrayOID: true,
	pgtype.Float8ArrayOID: true, pgtype.BoolArrayOID: true, pgtype.TextArrayOID: true, pgtype.VarcharArrayOID: true,
}

// sql returns the query of the mode from the poller's offset.
func (p *poller) sql() (string, []any) {
	sel := make([]string, len(p.cols))
	for i, c := range p.cols {
		q := pgx.Identifier{c.name}.Sanitize()
		if native[c.oid] {
			sel[i] = "runnel_t." + q
		} else {
			sel[i] = "runnel_t." + q + "::text AS " + q
		}
	}
	var (
		where []string
		order string
		args  []any
	)
	arg := func(v any) string {
		args = append(args, v)
		return "$" + strconv.Itoa(len(args))
	}
	inc := ""
	if p.q.usesInc() {
		inc = "runnel_t." + pgx.Identifier{p.q.inc}.Sanitize()
	}
	ts := ""
	if p.q.usesTS() {
		cols := make([]string, len(p.q.ts))
		for i, c := range p.q.ts {
			cols[i] = "runnel_t." + pgx.Identifier{c}.Sanitize()
		}
		ts = cols[0]
		if len(cols) > 1 {
			ts = "COALESCE(" + strings.Join(cols, ", ") + ")"
		}
		// The bound in the column's own type, so that an index serves.
		cast := map[uint32]string{pgtype.TimestampOID: "timestamp", pgtype.TimestamptzOID: "timestamptz", pgtype.DateOID: "date"}[p.cols[p.tsAt[0]].oid]
		where = append(where, ts+" < (now() - "+arg(p.q.delay.Milliseconds())+"::bigint * interval '1 millisecond')::"+cast)
	}
	switch p.q.mode {
	case modeInc:
		if p.hasInc {
			where = append(where, inc+" > "+arg(p.inc))
		}
		order = inc
	case modeTS:
		if p.hasTS {
			where = append(where, ts+" > "+arg(p.tsArg()))
		}
		order = ts
	case modeTSInc:
		switch {
		case p.hasTS && p.hasInc:
			t := arg(p.tsArg())
			where = append(where, "("+ts+" > "+t+" OR ("+ts+" = "+t+" AND "+inc+" > "+arg(p.inc)+"))")
		case p.hasTS:
			where = append(where, ts+" > "+arg(p.tsArg()))
		}
		order = ts + ", " + inc
	}
	sql := "SELECT " + strings.Join(sel, ", ") + " FROM " + p.from()
	if len(where) > 0 {
		sql += " WHERE " + strings.Join(where, " AND ")
	}
	if order != "" {
		sql += " ORDER BY " + order
	}
	return sql, args
}

// tsArg is the timestamp offset as a parameter: an instant for
// timestamptz, the wall clock of db.timezone for timestamp and date.
func (p *poller) tsArg() time.Time {
	if p.cols[p.tsAt[0]].oid == pgtype.TimestamptzOID {
		return p.ts
	}
	return p.ts.In(p.q.zone)
}

// read returns up to n records of the open query; done when the query
// was read to its end (and closed).
func (p *poller) read(n int) (recs []connect.Record, done bool, err error) {
	for len(recs) < n {
		if !p.rows.Next() {
			if err := p.rows.Err(); err != nil {
				return recs, false, err
			}
			if p.held != nil { // every row up to the bound is read: its timestamp is done with
				recs = append(recs, p.release(true, time.Time{}))
			}
			p.close()
			return recs, true, nil
		}
		vals, err := p.rows.Values()
		if err != nil {
			return recs, false, err
		}
		rec := connect.Record{Topic: p.topic, SourcePartition: p.partition}
		value := make(map[string]any, len(vals))
		for i, v := range vals {
			value[p.cols[i].name] = p.q.convert(p.cols[i].oid, v)
		}
		rec.Value = value
		var ts time.Time
		if p.q.usesTS() {
			ts = p.rowTime(vals)
		}
		switch p.q.mode {
		case modeInc, modeTSInc:
			n, ok := asInteger(vals[p.incAt])
			if !ok {
				return recs, false, fmt.Errorf("%s: incrementing column %q is %v, not an integer", p.describe(), p.q.inc, vals[p.incAt])
			}
			p.inc, p.hasInc = n, true
			if p.q.mode == modeTSInc {
				p.ts, p.hasTS = ts, true
			}
			rec.SourceOffset = p.offset()
		case modeTS:
			// Rows that share a timestamp: the offset moves to it only
			// with the last of them, so that a restart among them reads
			// them all again instead of skipping the rest.
			if p.held != nil {
				recs = append(recs, p.release(false, ts))
			}
			p.held = &heldRow{rec: rec, ts: ts}
			continue
		}
		recs = append(recs, rec)
	}
	return recs, false, nil
}

// release returns the held record with its offset: its own timestamp
// when the row after it is later (or there is none: end), else the
// offset before it.
func (p *poller) release(end bool, next time.Time) connect.Record {
	h := p.held
	p.held = nil
	if end || next.After(h.ts) {
		p.ts, p.hasTS = h.ts, true
	}
	h.rec.SourceOffset = p.offset()
	return h.rec
}

// rowTime returns the row's timestamp (the first of the columns that is
// not null) as an instant.
func (p *poller) rowTime(vals []any) time.Time {
	for _, i := range p.tsAt {
		if t, ok := vals[i].(time.Time); ok {
			if p.cols[i].oid == pgtype.TimestamptzOID {
				return t.UTC()
			}
			return wallIn(t, p.q.zone)
		}
	}
	return time.Time{}
}

func (p *poller) close() {
	if p.rows != nil {
		p.rows.Close()
		p.rows = nil
	}
	p.conn = nil
	p.held = nil
}
