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

// WriteOffsets stores a connector's offsets alone, in a transaction of
// their own: for a batch whose records all came to nothing (skipped, or
// tombstones that delete nothing), so that the offsets still move on.
func WriteOffsets(ctx context.Context, db DB, connector string, offsets []Offset) error {
	if connector == "" {
		return fmt.Errorf("%w: offsets without a connector name", ErrConfig)
	}
	return pgx.BeginFunc(ctx, db, func(tx pgx.Tx) error {
		return storeOffsets(ctx, tx, connector, offsets, true)
	})
}

// storeOffsets upserts a connector's offsets in tx.
func (w *Writer) storeOffsets(ctx context.Context, tx pgx.Tx, connector string, offsets []Offset) error {
	if err := storeOffsets(ctx, tx, connector, offsets, !w.offsetsTable); err != nil {
		return err
	}
	w.offsetsTable = true
	return nil
}

// storeOffsets upserts offsets in tx, creating the table first if asked.
func storeOffsets(ctx context.Context, tx pgx.Tx, connector string, offsets []Offset, create bool) error {
	if create {
		// Tasks that create the table at once would collide in the
		// catalog (a unique violation in pg_type): take turns.
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtext($1))`, OffsetsTable); err != nil {
			return fmt.Errorf("pgwrite: lock %s: %w", OffsetsTable, err)
		}
		if _, err := tx.Exec(ctx, createOffsets); err != nil {
			return fmt.Errorf("pgwrite: create %s: %w", OffsetsTable, err)
		}
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
