package pgwrite

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/jackc/pgx/v5"
)

// table is what the Writer knows of its table.
type table struct {
	cols map[string]*column
	pk   []*column // Config.PKFields' columns, when the table has them all
}

// loadTable reads the table's columns from the catalog; nil when the table
// does not exist.
func (w *Writer) loadTable(ctx context.Context, tx pgx.Tx) (*table, error) {
	var oid *uint32
	if err := tx.QueryRow(ctx, `SELECT to_regclass($1)::oid`, w.name).Scan(&oid); err != nil {
		return nil, fmt.Errorf("pgwrite: look up table %s: %w", w.name, err)
	}
	if oid == nil {
		return nil, nil
	}
	rows, err := tx.Query(ctx, `
		SELECT attname, atttypid, format_type(atttypid, atttypmod)
		FROM pg_attribute
		WHERE attrelid = $1 AND attnum > 0 AND NOT attisdropped
		ORDER BY attnum`, *oid)
	if err != nil {
		return nil, fmt.Errorf("pgwrite: read columns of %s: %w", w.name, err)
	}
	t := &table{cols: map[string]*column{}}
	var (
		name, typ string
		typOID    uint32
	)
	_, err = pgx.ForEachRow(rows, []any{&name, &typOID, &typ}, func() error {
		t.cols[name] = newColumn(name, typOID, typ)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("pgwrite: read columns of %s: %w", w.name, err)
	}
	for _, f := range w.cfg.PKFields {
		c, ok := t.cols[f]
		if !ok {
			if w.cfg.Mode == Upsert {
				return nil, fmt.Errorf("%w: table %s has no column %s for primary key field %q",
					ErrNoColumn, w.name, quote(f), f)
			}
			t.pk = nil
			break
		}
		t.pk = append(t.pk, c)
	}
	return t, nil
}

// newFields returns the fields of rows that the table lacks (all of them
// when t is nil), with the type each would get and the first record with
// a value for it. A field whose values are all nil gets "".
func (w *Writer) newFields(t *table, rows []Row) ([]string, map[string]string, map[string]int, error) {
	var (
		order []string
		types = map[string]string{}
		first = map[string]int{}
	)
	for i, r := range rows {
		if r.Tombstone {
			continue
		}
		for m := range 2 {
			fields := r.Key
			if m == 1 {
				fields = r.Value
			}
			for f, v := range fields {
				if t != nil && t.cols[f] != nil {
					continue
				}
				typ, err := inferType(v)
				if err != nil {
					return nil, nil, nil, recordError(i, fmt.Errorf("%w: table %s, field %q, record %d: %v", ErrWrongType, w.name, f, i, err))
				}
				old, seen := types[f]
				if !seen {
					order = append(order, f)
				}
				merged := mergeTypes(old, typ)
				if merged == "" && old != "" && typ != "" {
					return nil, nil, nil, recordError(i, fmt.Errorf("%w: table %s, new field %q has %s and %s values in one batch (record %d: %s)",
						ErrWrongType, w.name, f, old, typ, i, describe(v)))
				}
				if _, ok := first[f]; !ok && typ != "" {
					first[f] = i
				}
				types[f] = merged
			}
		}
	}
	return order, types, first, nil
}

// ensureTable returns the table, created or widened for rows as the
// Config allows; nil when there is no table and rows are all tombstones.
func (w *Writer) ensureTable(ctx context.Context, tx pgx.Tx, rows []Row) (*table, error) {
	t := w.table
	if t == nil {
		var err error
		if t, err = w.loadTable(ctx, tx); err != nil {
			return nil, err
		}
	}
	order, types, first, err := w.newFields(t, rows)
	if err != nil {
		return nil, err
	}
	slices.Sort(order)
	var ddl string
	switch {
	case t == nil && len(order) == 0:
		return nil, nil // only tombstones: nothing to delete
	case t == nil && !w.cfg.AutoCreate:
		return nil, fmt.Errorf("%w: %s (auto.create is off)", ErrNoTable, w.name)
	case t == nil:
		if ddl, err = w.createSQL(order, types); err != nil {
			return nil, err
		}
	default:
		var add []string
		for _, f := range order {
			if types[f] == "" {
				continue // only nulls: nothing to store yet
			}
			if !w.cfg.AutoEvolve {
				return nil, recordError(first[f], fmt.Errorf("%w: table %s has no column %s (auto.evolve is off; record %d has the field)",
					ErrNoColumn, w.name, quote(f), first[f]))
			}
			add = append(add, "ADD COLUMN IF NOT EXISTS "+quote(f)+" "+types[f])
		}
		if len(add) > 0 {
			ddl = "ALTER TABLE " + w.name + " " + strings.Join(add, ", ")
		}
	}
	if ddl == "" {
		w.table = t
		return t, nil
	}
	// Writers of other tasks may create or widen the table at the same
	// time; CREATE TABLE IF NOT EXISTS alone would collide in the catalog.
	if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtext($1))`, w.name); err != nil {
		return nil, fmt.Errorf("pgwrite: lock %s: %w", w.name, err)
	}
	if _, err := tx.Exec(ctx, ddl); err != nil {
		return nil, fmt.Errorf("pgwrite: %s: %w", ddl, err)
	}
	if t, err = w.loadTable(ctx, tx); err != nil {
		return nil, err
	}
	w.table = t
	return t, nil
}

// createSQL returns the CREATE TABLE of a table for the fields found
// (sorted): the primary key's first, then the others.
func (w *Writer) createSQL(order []string, types map[string]string) (string, error) {
	var defs []string
	for _, f := range w.cfg.PKFields {
		if types[f] == "" {
			return "", fmt.Errorf("%w: cannot create table %s: no record of the batch has a value for primary key field %q",
				ErrMissingKey, w.name, f)
		}
		defs = append(defs, quote(f)+" "+types[f]+" NOT NULL")
	}
	for _, f := range order {
		if types[f] != "" && !slices.Contains(w.cfg.PKFields, f) {
			defs = append(defs, quote(f)+" "+types[f])
		}
	}
	if len(w.cfg.PKFields) > 0 {
		pk := make([]string, len(w.cfg.PKFields))
		for i, f := range w.cfg.PKFields {
			pk[i] = quote(f)
		}
		defs = append(defs, "PRIMARY KEY ("+strings.Join(pk, ", ")+")")
	}
	return "CREATE TABLE IF NOT EXISTS " + w.name + " (" + strings.Join(defs, ", ") + ")", nil
}

// quote quotes an identifier for SQL.
func quote(name string) string { return pgx.Identifier{name}.Sanitize() }
