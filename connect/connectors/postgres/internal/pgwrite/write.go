package pgwrite

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"
)

// DB begins transactions: a *pgx.Conn, or a pool of them.
type DB interface {
	Begin(ctx context.Context) (pgx.Tx, error)
}

// Writer writes batches of rows to one table.
type Writer struct {
	cfg   Config
	ident pgx.Identifier
	name  string // ident quoted, for SQL and messages
	table *table // nil until read; forgotten after a failure

	offsetsTable bool // runnel_connect_offsets is known to exist
}

// upsertFunc writes the rows of one group of an Upsert batch. The Writer
// uses upsertUnnest; the benchmarks compare it with other ways.
type upsertFunc func(w *Writer, ctx context.Context, tx pgx.Tx, g *group) error

// New returns a Writer of the table cfg names. It does not connect: the
// table is looked up by the first write.
func New(cfg Config) (*Writer, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	cfg.PKFields = slices.Clone(cfg.PKFields)
	w := &Writer{cfg: cfg, ident: pgx.Identifier{cfg.Table}}
	if cfg.Schema != "" {
		w.ident = pgx.Identifier{cfg.Schema, cfg.Table}
	}
	w.name = w.ident.Sanitize()
	return w, nil
}

// Write writes rows in one transaction.
func (w *Writer) Write(ctx context.Context, db DB, rows []Row) error {
	return w.WriteWithOffsets(ctx, db, rows, "", nil)
}

// WriteWithOffsets writes rows and stores offsets as connector's next
// offsets in one transaction: both commit or neither does.
func (w *Writer) WriteWithOffsets(ctx context.Context, db DB, rows []Row, connector string, offsets []Offset) error {
	if len(offsets) > 0 && connector == "" {
		return fmt.Errorf("%w: offsets without a connector name", ErrConfig)
	}
	err := pgx.BeginFunc(ctx, db, func(tx pgx.Tx) error {
		if err := w.write(ctx, tx, rows, (*Writer).upsertUnnest); err != nil {
			return err
		}
		if len(offsets) == 0 {
			return nil
		}
		return w.storeOffsets(ctx, tx, connector, offsets)
	})
	if err != nil {
		// A rolled-back CREATE or ALTER is no more: read the table again.
		w.table, w.offsetsTable = nil, false
	}
	return err
}

func (w *Writer) write(ctx context.Context, tx pgx.Tx, rows []Row, upsert upsertFunc) error {
	t, err := w.ensureTable(ctx, tx, rows)
	if err != nil || t == nil {
		return err
	}
	b, err := w.prepare(t, rows)
	if err != nil {
		return err
	}
	for _, g := range b.groups {
		if w.cfg.Mode == Insert {
			err = w.copyInto(ctx, tx, w.ident, g)
		} else {
			err = upsert(w, ctx, tx, g)
		}
		if err != nil {
			return err
		}
	}
	if len(b.deletes) > 0 {
		return w.delete(ctx, tx, t.pk, b.deletes)
	}
	return nil
}

func (w *Writer) copyInto(ctx context.Context, tx pgx.Tx, into pgx.Identifier, g *group) error {
	names := make([]string, len(g.cols))
	for i, c := range g.cols {
		names[i] = c.name
	}
	if _, err := tx.CopyFrom(ctx, into, names, pgx.CopyFromRows(g.rows)); err != nil {
		return fmt.Errorf("pgwrite: copy %d rows into %s: %w", len(g.rows), into.Sanitize(), err)
	}
	return nil
}

// upsertUnnest sends each column as one array.
func (w *Writer) upsertUnnest(ctx context.Context, tx pgx.Tx, g *group) error {
	args := make([]any, len(g.cols))
	arrays := make([]string, len(g.cols))
	for j, c := range g.cols {
		col := make([]any, len(g.rows))
		for i, r := range g.rows {
			col[i] = r[j]
		}
		args[j] = col
		arrays[j] = "$" + strconv.Itoa(j+1) + "::" + c.typ + "[]"
	}
	sql := w.upsertSQL(g, "SELECT * FROM unnest("+strings.Join(arrays, ", ")+")")
	if _, err := tx.Exec(ctx, sql, args...); err != nil {
		return fmt.Errorf("pgwrite: upsert %d rows into %s: %w", len(g.rows), w.name, err)
	}
	return nil
}

// upsertSQL returns the INSERT ... ON CONFLICT of g's rows, selected by from.
func (w *Writer) upsertSQL(g *group, from string) string {
	var set []string
	for j, c := range g.cols {
		if !slices.Contains(g.pkIdx, j) {
			set = append(set, quote(c.name)+" = EXCLUDED."+quote(c.name))
		}
	}
	pk := make([]*column, len(g.pkIdx))
	for i, k := range g.pkIdx {
		pk[i] = g.cols[k]
	}
	action := "DO NOTHING"
	if len(set) > 0 {
		action = "DO UPDATE SET " + strings.Join(set, ", ")
	}
	return "INSERT INTO " + w.name + " (" + quotedNames(g.cols) + ") " + from +
		" ON CONFLICT (" + quotedNames(pk) + ") " + action
}

// delete deletes the rows of keys.
func (w *Writer) delete(ctx context.Context, tx pgx.Tx, pk []*column, keys [][]any) error {
	args := make([]any, len(pk))
	arrays := make([]string, len(pk))
	match := make([]string, len(pk))
	for j, c := range pk {
		col := make([]any, len(keys))
		for i, k := range keys {
			col[i] = k[j]
		}
		args[j] = col
		arrays[j] = "$" + strconv.Itoa(j+1) + "::" + c.typ + "[]"
		match[j] = "t." + quote(c.name) + " = d." + quote(c.name)
	}
	sql := "DELETE FROM " + w.name + " AS t USING unnest(" + strings.Join(arrays, ", ") + ") AS d(" +
		quotedNames(pk) + ") WHERE " + strings.Join(match, " AND ")
	if _, err := tx.Exec(ctx, sql, args...); err != nil {
		return fmt.Errorf("pgwrite: delete %d rows from %s: %w", len(keys), w.name, err)
	}
	return nil
}

func quotedNames(cols []*column) string {
	names := make([]string, len(cols))
	for i, c := range cols {
		names[i] = quote(c.name)
	}
	return strings.Join(names, ", ")
}
