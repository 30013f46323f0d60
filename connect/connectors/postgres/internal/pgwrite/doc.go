// Package pgwrite is the SQL layer of the PostgreSQL sink: it writes batches
// of decoded records to one table, creating and widening the table when
// configured to, and can store the consumer offsets of the batch in the same
// transaction. It knows nothing of the connector API: the sink turns records
// into Rows and hands each batch to a Writer.
//
// A Row's columns are the fields of its Key and Value (Key's when both have
// one), with JSON's values: int64, float64, string, bool, nil, []byte, and
// maps and slices (written as jsonb). A row sets exactly the columns it has
// fields for; other columns keep their value (upsert) or get their default
// (insert).
//
// # Writing
//
// In Insert mode a batch is written with COPY, grouped by field set (most
// batches are one group). In Upsert mode the batch is first reduced to the
// last record of each primary key (a tombstone as the last record deletes
// the row when DeleteEnabled, and is dropped otherwise), then each group is
// written with one
//
//	INSERT INTO t (cols) SELECT * FROM unnest($1::type[], ...) ON CONFLICT (pk) DO UPDATE SET ...
//
// and the deletions with one DELETE ... USING unnest(...). The arrays travel
// in pgx's binary format. One statement ties with COPY into a temporary
// staging table followed by INSERT ... SELECT ... ON CONFLICT on large
// batches and beats it on small ones, and beats multi-row
// INSERT ... VALUES ... ON CONFLICT on large ones (BenchmarkUpsert;
// DESIGN.md has the numbers).
//
// # Schema
//
// The Writer reads the table's columns from the catalog on first use and
// remembers them. With AutoCreate a missing table is created from the
// batch's fields (int64 bigint, float64 double precision, bool boolean,
// string text, []byte bytea, maps and slices jsonb; a field with both int64
// and float64 values is double precision) with the configured primary key.
// With AutoEvolve a field the table lacks becomes a new nullable column. A
// field that is nil in every record of the batch creates no column. Values
// are checked against their column's type before anything is sent: a
// mismatch fails the batch with ErrWrongType naming table, column and
// record. Such failures of one record (a wrong type, a missing or null
// key, a field without a column) are a *RecordError with the record's
// index, so that the sink can name the record's offset or skip it. DDL
// takes a transaction-scoped advisory lock on the table's name first:
// tasks that create or widen one table at once take turns instead of
// colliding in the catalog.
//
// # Transactions and offsets
//
// Each Write is one transaction. WriteWithOffsets also upserts the next
// offsets of the batch's topic partitions into runnel_connect_offsets in
// that transaction, so the rows and the offsets commit together or not at
// all; ReadOffsets reads them back when a task starts. WriteOffsets stores
// offsets alone, for a batch whose records all came to nothing. After any failure
// the Writer forgets the table's columns and reads them again, since a
// rolled-back transaction may have undone a CREATE or ALTER.
//
// A Writer is used by one goroutine at a time.
package pgwrite
