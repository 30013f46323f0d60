package postgres

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"

	"github.com/runnel-io/runnel/connect"
	"github.com/runnel-io/runnel/connect/connectors/postgres/internal/pgwrite"
)

// The sink's keys, with the names of Confluent's JDBC sink where it has
// one (exactly.once is Runnel's).
const (
	keyTableFormat   = "table.name.format"
	keyInsertMode    = "insert.mode"
	keyPKMode        = "pk.mode"
	keyPKFields      = "pk.fields"
	keyAutoCreate    = "auto.create"
	keyAutoEvolve    = "auto.evolve"
	keyDeleteEnabled = "delete.enabled"
	keyBatchSize     = "batch.size"
	keyExactlyOnce   = "exactly.once"
)

// The primary key modes.
const (
	pkNone        = "none"
	pkKafka       = "kafka"
	pkRecordKey   = "record_key"
	pkRecordValue = "record_value"
)

// kafkaPKFields are the columns of pk.mode=kafka when pk.fields is empty.
var kafkaPKFields = []string{"__connect_topic", "__connect_partition", "__connect_offset"}

func sinkPlugin() connect.Plugin {
	keys := append(connectionKeys(),
		connect.ConfigKey{Name: keyTableFormat, Type: connect.TypeString, Default: "${topic}", Importance: connect.Medium, Group: "Writes", DisplayName: "Table Name Format",
			Doc: "The table each topic's records go to; ${topic} is replaced by the topic's name. Text before the first dot of the format is the schema " +
				"(analytics.${topic}); dots of the topic's name stay in the table's name. Without a schema the search_path finds (or auto.create creates) the table.",
			Check: checkTableFormat},
		connect.ConfigKey{Name: keyInsertMode, Type: connect.TypeString, Default: "insert", Importance: connect.High, Group: "Writes", DisplayName: "Insert Mode",
			Doc: "insert: rows are appended (COPY); a key already in the table fails the batch. " +
				"upsert: a row is inserted or updates the row of its primary key (INSERT ... ON CONFLICT DO UPDATE); within a batch the last record of a key wins.",
			Check: connect.OneOf("insert", "upsert"), Recommended: []string{"insert", "upsert"}},
		connect.ConfigKey{Name: keyBatchSize, Type: connect.TypeInt, Default: "3000", Importance: connect.Medium, Group: "Writes", DisplayName: "Batch Size",
			Doc:   "The most rows written to a table in one statement and transaction; records are buffered until there are this many or the worker flushes (offset.flush.interval.ms).",
			Check: connect.AtLeast(1)},
		connect.ConfigKey{Name: keyDeleteEnabled, Type: connect.TypeBoolean, Default: "false", Importance: connect.Medium, Group: "Writes", DisplayName: "Enable deletes",
			Doc: "A tombstone (a record whose value is null) deletes the row of its key. Needs pk.mode=record_key and insert.mode=upsert; without it tombstones are skipped."},
		connect.ConfigKey{Name: keyExactlyOnce, Type: connect.TypeBoolean, Default: "false", Importance: connect.Medium, Group: "Writes", DisplayName: "Exactly once",
			Doc: "Store the next offset of each topic partition in the table runnel_connect_offsets, in the same transaction as the rows, and start each partition " +
				"where that table says (whatever the consumer group committed): no record is written twice, in any insert mode."},
		connect.ConfigKey{Name: keyPKMode, Type: connect.TypeString, Default: pkNone, Importance: connect.High, Group: "Data Mapping", DisplayName: "Primary Key Mode",
			Doc: "Where the primary key comes from. none: no key (insert only). kafka: the record's topic, partition and offset. " +
				"record_key: the record's key (an object's fields, or a primitive key as the one column of pk.fields). record_value: fields of the value.",
			Check: connect.OneOf(pkNone, pkKafka, pkRecordKey, pkRecordValue), Recommended: []string{pkNone, pkKafka, pkRecordKey, pkRecordValue}},
		connect.ConfigKey{Name: keyPKFields, Type: connect.TypeList, Importance: connect.Medium, Group: "Data Mapping", DisplayName: "Primary Key Fields",
			Doc: "The primary key's columns. record_value: the value fields that make it (required). record_key: the key's fields to use (empty: all of them), " +
				"or for a primitive key the one column it goes to. kafka: three column names (default __connect_topic,__connect_partition,__connect_offset)."},
		connect.ConfigKey{Name: keyAutoCreate, Type: connect.TypeBoolean, Default: "false", Importance: connect.Medium, Group: "DDL Support", DisplayName: "Auto-Create",
			Doc: "Create a missing table (CREATE TABLE) from the fields of the first batch, with the primary key of pk.mode: integers bigint, other numbers double precision, " +
				"strings text, booleans boolean, bytes bytea, objects and arrays jsonb."},
		connect.ConfigKey{Name: keyAutoEvolve, Type: connect.TypeBoolean, Default: "false", Importance: connect.Medium, Group: "DDL Support", DisplayName: "Auto-Evolve",
			Doc: "Add a nullable column (ALTER TABLE ... ADD COLUMN) for a field the table lacks; without it such a record fails."},
	)
	return connect.Plugin{
		Class:    "io.runnel.connect.postgres.PostgresSinkConnector",
		Aliases:  []string{"PostgresSink", "PostgresSinkConnector", "postgres-sink"},
		Type:     connect.SinkPlugin,
		Version:  connect.Version,
		Doc:      "Writes the records of topics as rows of PostgreSQL tables: COPY inserts or upserts, deletes on tombstones, tables created and widened, offsets in the same transaction for exactly once.",
		Config:   connect.NewConfigDef(keys...),
		Validate: validateSink,
		TaskConfigs: func(cfg connect.Config, maxTasks int) ([]connect.Config, error) {
			// Every task has the same config: the consumer group spreads
			// the partitions.
			tasks := make([]connect.Config, maxTasks)
			for i := range tasks {
				tasks[i] = cfg.Clone()
			}
			return tasks, nil
		},
		NewSinkTask: func() connect.SinkTask { return &sinkTask{} },
	}
}

func checkTableFormat(v string) error {
	schema, table := splitTableFormat(v)
	if strings.TrimSpace(table) == "" || (strings.Contains(v, ".") && strings.TrimSpace(schema) == "") {
		return errors.New("needs a table name, optionally after a schema and a dot (schema.${topic})")
	}
	return nil
}

// splitTableFormat splits table.name.format at its first dot into the
// schema's and the table's formats.
func splitTableFormat(format string) (schema, table string) {
	if s, t, ok := strings.Cut(format, "."); ok {
		return s, t
	}
	return "", format
}

// validateSink checks the rules that span keys.
func validateSink(cfg connect.Config) []connect.KeyError {
	var errs []connect.KeyError
	mode, pk, fields := strings.ToLower(cfg.String(keyInsertMode)), strings.ToLower(cfg.String(keyPKMode)), cfg.List(keyPKFields)
	if mode == "upsert" && pk == pkNone {
		errs = append(errs, connect.KeyError{Key: keyPKMode, Message: "insert.mode=upsert needs a primary key: set pk.mode to record_key, record_value or kafka"})
	}
	switch pk {
	case pkNone:
		if len(fields) > 0 {
			errs = append(errs, connect.KeyError{Key: keyPKFields, Message: "pk.fields is set but pk.mode is none: set pk.mode to say where the key fields come from"})
		}
	case pkRecordValue:
		if len(fields) == 0 {
			errs = append(errs, connect.KeyError{Key: keyPKFields, Message: "pk.mode=record_value needs pk.fields: the value fields that make the primary key"})
		}
	case pkKafka:
		if len(fields) != 0 && len(fields) != 3 {
			errs = append(errs, connect.KeyError{Key: keyPKFields, Message: "pk.mode=kafka needs three pk.fields (the topic, partition and offset columns) or none (" +
				strings.Join(kafkaPKFields, ",") + ")"})
		}
	}
	for i, f := range fields {
		if slices.Contains(fields[:i], f) {
			errs = append(errs, connect.KeyError{Key: keyPKFields, Message: fmt.Sprintf("pk.fields names %q twice", f)})
		}
	}
	if cfg.Bool(keyDeleteEnabled) {
		if pk != pkRecordKey {
			errs = append(errs, connect.KeyError{Key: keyDeleteEnabled, Message: "delete.enabled=true needs pk.mode=record_key: a tombstone has only its key"})
		}
		if mode != "upsert" {
			errs = append(errs, connect.KeyError{Key: keyDeleteEnabled, Message: "delete.enabled=true needs insert.mode=upsert"})
		}
	}
	return errs
}

// sinkSettings are a sink task's parsed keys.
type sinkSettings struct {
	connector   string
	tableFormat string
	mode        pgwrite.Mode
	pkMode      string
	pkFields    []string
	autoCreate  bool
	autoEvolve  bool
	deletes     bool
	batchSize   int
	exactlyOnce bool
	tolerate    bool // errors.tolerance=all: skip records the table cannot take
}

func parseSinkSettings(cfg connect.Config) sinkSettings {
	s := sinkSettings{
		connector:   cfg.String(connect.KeyName),
		tableFormat: cfg.String(keyTableFormat),
		pkMode:      strings.ToLower(cfg.String(keyPKMode)),
		pkFields:    cfg.List(keyPKFields),
		autoCreate:  cfg.Bool(keyAutoCreate),
		autoEvolve:  cfg.Bool(keyAutoEvolve),
		deletes:     cfg.Bool(keyDeleteEnabled),
		batchSize:   max(cfg.Int(keyBatchSize), 1),
		exactlyOnce: cfg.Bool(keyExactlyOnce),
		tolerate:    strings.EqualFold(cfg.String(connect.KeyErrorsTolerance), "all"),
	}
	if strings.EqualFold(cfg.String(keyInsertMode), "upsert") {
		s.mode = pgwrite.Upsert
	}
	if s.pkMode == pkKafka && len(s.pkFields) == 0 {
		s.pkFields = kafkaPKFields
	}
	return s
}

// sinkTask writes records to tables. Put converts records into rows and
// buffers them by table, writing every full batch (batch.size rows, one
// transaction); Flush writes the rest. With exactly.once each transaction
// also stores the next offsets of the batch's partitions.
//
// The runtime calls Put, Flush and StoredOffsets one at a time (the last
// from the consumer group's callback, under the runtime's lock).
type sinkTask struct {
	cfg connect.Config
	s   sinkSettings
	db  dbConn
	log *slog.Logger

	tables  map[string]*tableBuf // by topic
	order   []*tableBuf          // in the order first met: the order of writes
	byTable map[string]*tableBuf // by schema and table: topics may share one
	// accepted is the offset after the last record buffered of each
	// partition: a Put retried after a retriable error hands over records
	// that are buffered already.
	accepted map[connect.TopicPartition]int64
}

// tableBuf is one table: its writer and the records waiting for it.
type tableBuf struct {
	schema, table string
	w             *pgwrite.Writer // nil until the first write
	pending       []entry
}

// entry is one buffered record.
type entry struct {
	row  pgwrite.Row
	tp   connect.TopicPartition
	off  int64
	skip bool // the table cannot take it and errors.tolerance=all lets it go
}

func (t *sinkTask) Start(_ context.Context, cfg connect.Config, tc connect.SinkTaskContext) error {
	t.cfg, t.s, t.log = cfg, parseSinkSettings(cfg), tc.Logger()
	t.tables, t.byTable = map[string]*tableBuf{}, map[string]*tableBuf{}
	t.accepted = map[connect.TopicPartition]int64{}
	// The connection opens on first use: a database that is down at start
	// is retried like one that goes down later.
	var err error
	t.db.cfg, err = connConfig(cfg)
	return err
}

func (t *sinkTask) Stop() error {
	t.db.close()
	return nil
}

// Put buffers the records and writes each table's full batches.
func (t *sinkTask) Put(ctx context.Context, records []connect.Record) error {
	for i := range records {
		r := &records[i]
		tp := connect.TopicPartition{Topic: r.Topic, Partition: r.Partition}
		if next, ok := t.accepted[tp]; ok && r.Offset < next {
			continue // buffered by the Put that failed
		}
		t.accepted[tp] = r.Offset + 1
		e := entry{tp: tp, off: r.Offset}
		var err error
		if e.row, err = t.s.toRow(r); err != nil {
			if err := t.bad(&e, err); err != nil {
				return err
			}
		}
		tb := t.tableOf(r.Topic)
		tb.pending = append(tb.pending, e)
	}
	for _, tb := range t.order {
		for len(tb.pending) >= t.s.batchSize {
			if err := t.write(ctx, tb, t.s.batchSize); err != nil {
				return err
			}
		}
	}
	return nil
}

// Flush writes every buffered record.
func (t *sinkTask) Flush(ctx context.Context) error {
	for _, tb := range t.order {
		for len(tb.pending) > 0 {
			if err := t.write(ctx, tb, min(len(tb.pending), t.s.batchSize)); err != nil {
				return err
			}
		}
	}
	return nil
}

// StoredOffsets returns, with exactly.once, the offsets stored in the
// database for the partitions just assigned. Whatever is still buffered
// of those partitions (left from before they were lost) is dropped: they
// are read again from where the table (or the group) says.
func (t *sinkTask) StoredOffsets(ctx context.Context, tps []connect.TopicPartition) (map[connect.TopicPartition]int64, error) {
	assigned := map[connect.TopicPartition]bool{}
	for _, tp := range tps {
		assigned[tp] = true
		delete(t.accepted, tp)
	}
	for _, tb := range t.order {
		tb.pending = slices.DeleteFunc(tb.pending, func(e entry) bool { return assigned[e.tp] })
	}
	if !t.s.exactlyOnce {
		return nil, nil
	}
	var stored []pgwrite.Offset
	err := attempts(ctx, t.cfg, func() error {
		conn, err := t.db.get(ctx)
		if err == nil {
			stored, err = pgwrite.ReadOffsets(ctx, conn, t.s.connector)
		}
		t.db.failed(err)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("reading the offsets of connector %s from %s: %w", t.s.connector, pgwrite.OffsetsTable, err)
	}
	out := map[connect.TopicPartition]int64{}
	for _, o := range stored {
		if tp := (connect.TopicPartition{Topic: o.Topic, Partition: o.Partition}); assigned[tp] {
			out[tp] = o.Next
		}
	}
	t.log.Info("starting partitions at the offsets stored in the database", "table", pgwrite.OffsetsTable, "offsets", len(out))
	return out, nil
}

// tableOf returns the buffer of topic's table.
func (t *sinkTask) tableOf(topic string) *tableBuf {
	if tb := t.tables[topic]; tb != nil {
		return tb
	}
	sf, tf := splitTableFormat(t.s.tableFormat)
	schema, table := strings.ReplaceAll(sf, "${topic}", topic), strings.ReplaceAll(tf, "${topic}", topic)
	key := schema + "\x00" + table
	tb := t.byTable[key]
	if tb == nil {
		tb = &tableBuf{schema: schema, table: table}
		t.byTable[key] = tb
		t.order = append(t.order, tb)
	}
	t.tables[topic] = tb
	return tb
}

// bad handles a record that cannot be written: it fails the task, or
// with errors.tolerance=all is logged and skipped (its offset is still
// stored). The runtime's dead letter queue takes only records that fail
// conversion or a transform, not those a sink rejects.
func (t *sinkTask) bad(e *entry, err error) error {
	err = fmt.Errorf("record %s@%d: %w", e.tp, e.off, err)
	if !t.s.tolerate {
		return err
	}
	t.log.Warn("skipping a record the table cannot take (errors.tolerance=all)", "err", err)
	e.skip = true
	return nil
}

// write writes the first n buffered records of tb in one transaction and
// drops them from the buffer. A record the table cannot take fails the
// task or, tolerated, is skipped and the rest written again.
func (t *sinkTask) write(ctx context.Context, tb *tableBuf, n int) error {
	chunk := tb.pending[:n]
	for {
		rows := make([]pgwrite.Row, 0, n)
		at := make([]int, 0, n) // chunk index of each row
		for i := range chunk {
			if !chunk[i].skip {
				rows = append(rows, chunk[i].row)
				at = append(at, i)
			}
		}
		var offsets []pgwrite.Offset
		if t.s.exactlyOnce {
			offsets = nextOffsets(chunk)
		}
		err := t.writeRows(ctx, tb, rows, offsets)
		if err == nil {
			break
		}
		if re := (*pgwrite.RecordError)(nil); errors.As(err, &re) && re.Index < len(at) {
			if err := t.bad(&chunk[at[re.Index]], err); err != nil {
				return err
			}
			continue
		}
		err = fmt.Errorf("writing %d records to %s: %w", len(rows), tableString(tb), err)
		if retriable(err) {
			return connect.Retriable(err)
		}
		return err
	}
	rest := copy(tb.pending, tb.pending[n:])
	clear(tb.pending[rest:])
	tb.pending = tb.pending[:rest]
	return nil
}

// writeRows writes rows and offsets to tb's table in one transaction.
func (t *sinkTask) writeRows(ctx context.Context, tb *tableBuf, rows []pgwrite.Row, offsets []pgwrite.Offset) error {
	if len(rows) == 0 && len(offsets) == 0 {
		return nil
	}
	conn, err := t.db.get(ctx)
	if err != nil {
		t.db.failed(err)
		return err
	}
	switch {
	case len(rows) > 0:
		if err = t.ensureWriter(tb, rows); err == nil {
			err = tb.w.WriteWithOffsets(ctx, conn, rows, t.s.connector, offsets)
		}
	default:
		err = pgwrite.WriteOffsets(ctx, conn, t.s.connector, offsets)
	}
	t.db.failed(err)
	return err
}

// ensureWriter makes tb's writer. With pk.mode=record_key and no
// pk.fields, the key's fields in the first batch make the primary key.
func (t *sinkTask) ensureWriter(tb *tableBuf, rows []pgwrite.Row) error {
	if tb.w != nil {
		return nil
	}
	pk := t.s.pkFields
	if t.s.pkMode == pkRecordKey && len(pk) == 0 {
		for _, r := range rows {
			if len(r.Key) > 0 {
				for f := range r.Key {
					pk = append(pk, f)
				}
				slices.Sort(pk)
				break
			}
		}
	}
	w, err := pgwrite.New(pgwrite.Config{
		Schema: tb.schema, Table: tb.table, Mode: t.s.mode, PKFields: pk,
		AutoCreate: t.s.autoCreate, AutoEvolve: t.s.autoEvolve, DeleteEnabled: t.s.deletes,
	})
	if err != nil {
		return err
	}
	tb.w = w
	return nil
}

// nextOffsets returns the offset after the last record of each partition
// in chunk.
func nextOffsets(chunk []entry) []pgwrite.Offset {
	next := map[connect.TopicPartition]int64{}
	for _, e := range chunk {
		next[e.tp] = max(next[e.tp], e.off+1)
	}
	out := make([]pgwrite.Offset, 0, len(next))
	for tp, o := range next {
		out = append(out, pgwrite.Offset{Topic: tp.Topic, Partition: tp.Partition, Next: o})
	}
	return out
}

func tableString(tb *tableBuf) string {
	if tb.schema == "" {
		return "table " + tb.table
	}
	return "table " + tb.schema + "." + tb.table
}
