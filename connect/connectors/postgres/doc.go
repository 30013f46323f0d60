// Package postgres holds the PostgreSQL connectors, configured with the key
// names of Confluent's JDBC connectors where they fit. Register adds both
// to a registry.
//
// PostgresSink (sink.go) writes the records of topics as rows: each
// topic's records go to the table table.name.format names, with COPY
// (insert.mode=insert) or INSERT ... ON CONFLICT DO UPDATE
// (insert.mode=upsert, the last record of a key in a batch wins), a
// tombstone deleting its key's row with delete.enabled. The primary key
// comes from the record's key, its value or its coordinates (pk.mode,
// pk.fields). auto.create and auto.evolve create and widen tables from the
// records' fields. Records are buffered per table and written batch.size
// rows per transaction; Flush writes the rest. With exactly.once the next
// offsets of the batch's partitions are stored in runnel_connect_offsets
// in the same transaction, and the task, an OffsetStorer, has the runtime
// start each partition there. The SQL layer is internal/pgwrite.
//
// PostgresSource (source.go) polls tables, or one query, into topics:
// mode bulk (everything, each time), incrementing (rows whose strictly
// increasing column grew), timestamp (rows whose timestamp column moved
// on) or timestamp+incrementing (both, for rows that share a timestamp).
// Each table is a source partition {"table": name} (a query:
// {"query": text}) with Confluent's offsets {"incrementing": n} and
// {"timestamp": epoch ms, "timestamp_nanos": nanoseconds of the second}.
// Rows become map values: integers int64, floats float64, numeric the
// exact decimal as a string (numeric.mapping=best_fit: int64 or
// float64), timestamps RFC 3339 strings in UTC with their fraction
// (a timestamp without time zone is read in db.timezone), dates
// YYYY-MM-DD, json and jsonb their decoded value, bytea bytes, arrays
// slices, anything else its text.
//
// Both connect with a pgx pool per task from connection.url (postgres://
// or jdbc:postgresql:// URLs), connection.user and connection.password. A
// connection that fails or breaks is a connect.RetriableError: the
// runtime retries the sink's writes until they succeed, reconnecting.
//
// Neither runs goroutines of its own: the runtime calls each task from
// one goroutine at a time. DESIGN.md has the file map and the decisions.
package postgres

import "github.com/runnel-io/runnel/connect"

// Register adds the PostgreSQL connectors to r.
func Register(r *connect.Registry) error {
	if err := r.Register(sinkPlugin()); err != nil {
		return err
	}
	return r.Register(sourcePlugin())
}
