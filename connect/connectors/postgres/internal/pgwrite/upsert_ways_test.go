package pgwrite

// The ways to write an Upsert group that lost to upsertUnnest
// (BenchmarkUpsert compares them; DESIGN.md has the numbers), kept to
// measure again.

import (
	"context"
	"fmt"
	"hash/fnv"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
)

// upsertWays are the ways to write an Upsert group, by name.
var upsertWays = []struct {
	name string
	fn   upsertFunc
}{
	{"unnest", (*Writer).upsertUnnest},
	{"stage", (*Writer).upsertStaged},
	{"values", (*Writer).upsertValues},
}

// eachUpsert runs test once for each way of writing an upsert.
func eachUpsert(t *testing.T, test func(t *testing.T, upsert upsertFunc, table string)) {
	for _, way := range upsertWays {
		t.Run(way.name, func(t *testing.T) { test(t, way.fn, "t_"+way.name) })
	}
}

// writeVia is Write with another way to upsert.
func (w *Writer) writeVia(ctx context.Context, db DB, rows []Row, upsert upsertFunc) error {
	err := pgx.BeginFunc(ctx, db, func(tx pgx.Tx) error { return w.write(ctx, tx, rows, upsert) })
	if err != nil {
		w.table = nil
	}
	return err
}

// maxParams is the most parameters one statement can have.
const maxParams = 65535

// upsertStaged copies the rows into a temporary table and upserts them from
// there. The table lives as long as the session and is emptied at each
// commit; its name is a hash of the target and its columns, so that a
// table with other columns gets another one.
func (w *Writer) upsertStaged(ctx context.Context, tx pgx.Tx, g *group) error {
	h := fnv.New64a()
	h.Write([]byte(w.name))
	for _, c := range g.cols {
		h.Write([]byte{0})
		h.Write([]byte(c.name))
		h.Write([]byte{0})
		h.Write([]byte(c.typ))
	}
	stage := pgx.Identifier{fmt.Sprintf("pgwrite_stage_%016x", h.Sum64())}
	cols := quotedNames(g.cols)
	create := "CREATE TEMP TABLE IF NOT EXISTS " + stage.Sanitize() + " ON COMMIT DELETE ROWS AS SELECT " + cols +
		" FROM " + w.name + " WITH NO DATA"
	if _, err := tx.Exec(ctx, create); err != nil {
		return fmt.Errorf("pgwrite: %s: %w", create, err)
	}
	if err := w.copyInto(ctx, tx, stage, g); err != nil {
		return err
	}
	sql := w.upsertSQL(g, "SELECT "+cols+" FROM "+stage.Sanitize())
	if _, err := tx.Exec(ctx, sql); err != nil {
		return fmt.Errorf("pgwrite: upsert %d rows into %s: %w", len(g.rows), w.name, err)
	}
	return nil
}

// upsertValues sends multi-row INSERT ... VALUES statements.
func (w *Writer) upsertValues(ctx context.Context, tx pgx.Tx, g *group) error {
	per := maxParams / len(g.cols)
	for rows := range slices.Chunk(g.rows, per) {
		var sb strings.Builder
		args := make([]any, 0, len(rows)*len(g.cols))
		sb.WriteString("VALUES ")
		for i, r := range rows {
			if i > 0 {
				sb.WriteString(", ")
			}
			sb.WriteByte('(')
			for j := range r {
				if j > 0 {
					sb.WriteString(", ")
				}
				args = append(args, r[j])
				sb.WriteString("$" + strconv.Itoa(len(args)))
			}
			sb.WriteByte(')')
		}
		if _, err := tx.Exec(ctx, w.upsertSQL(g, sb.String()), args...); err != nil {
			return fmt.Errorf("pgwrite: upsert %d rows into %s: %w", len(rows), w.name, err)
		}
	}
	return nil
}
