package pgwrite

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
)

// OffsetsTable holds the next offset of each topic partition of each sink
// connector that stores its offsets in PostgreSQL, in the search_path's
// first schema.
const OffsetsTable = "runnel_connect_offsets"

const createOffsets = `CREATE TABLE IF NOT EXISTS ` + OffsetsTable + ` (
	connector text NOT NULL,
	topic text NOT NULL,
	"partition" integer NOT NULL,
	next_offset bigint NOT NULL,
	PRIMARY KEY (connector, topic, "partition"))`

// Offset is the next offset to consume from a topic partition.
type Offset struct {
	Topic     string
	Partition int32
	Next      int64
}

// storeOffsets upserts a connector's offsets in tx.
func (w *Writer) storeOffsets(ctx context.Context, tx pgx.Tx, connector string, offsets []Offset) error {
	if !w.offsetsTable {
		if _, err := tx.Exec(ctx, createOffsets); err != nil {
			return fmt.Errorf("pgwrite: create %s: %w", OffsetsTable, err)
		}
		w.offsetsTable = true
	}
	topics := make([]string, len(offsets))
	parts := make([]int32, len(offsets))
	nexts := make([]int64, len(offsets))
	for i, o := range offsets {
		topics[i], parts[i], nexts[i] = o.Topic, o.Partition, o.Next
	}
	_, err := tx.Exec(ctx, `
		INSERT INTO `+OffsetsTable+` (connector, topic, "partition", next_offset)
		SELECT $1, * FROM unnest($2::text[], $3::integer[], $4::bigint[])
		ON CONFLICT (connector, topic, "partition") DO UPDATE SET next_offset = EXCLUDED.next_offset`,
		connector, topics, parts, nexts)
	if err != nil {
		return fmt.Errorf("pgwrite: store offsets of connector %q in %s: %w", connector, OffsetsTable, err)
	}
	return nil
}

// Querier runs queries: a *pgx.Conn, a pgx.Tx, or a pool.
type Querier interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
}

// ReadOffsets returns a connector's stored offsets by topic and partition;
// none when nothing was stored yet.
func ReadOffsets(ctx context.Context, q Querier, connector string) ([]Offset, error) {
	rows, err := q.Query(ctx, `SELECT to_regclass($1) IS NOT NULL`, OffsetsTable)
	if err != nil {
		return nil, fmt.Errorf("pgwrite: look up %s: %w", OffsetsTable, err)
	}
	exists, err := pgx.CollectExactlyOneRow(rows, pgx.RowTo[bool])
	if err != nil {
		return nil, fmt.Errorf("pgwrite: look up %s: %w", OffsetsTable, err)
	}
	if !exists {
		return nil, nil
	}
	rows, err = q.Query(ctx, `SELECT topic, "partition", next_offset FROM `+OffsetsTable+`
		WHERE connector = $1 ORDER BY topic, "partition"`, connector)
	if err != nil {
		return nil, fmt.Errorf("pgwrite: read offsets of connector %q: %w", connector, err)
	}
	offsets, err := pgx.CollectRows(rows, pgx.RowToStructByPos[Offset])
	if err != nil {
		return nil, fmt.Errorf("pgwrite: read offsets of connector %q: %w", connector, err)
	}
	return offsets, nil
}
