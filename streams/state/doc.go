// Package state is the local state of Runnel Streams: the byte-level
// key-value, window and session stores of every task of one app instance, in
// one pebble DB, with the changelog and checkpoint bookkeeping that makes
// them restorable. The typed layer above it serializes keys and values; this
// package sees only bytes.
//
// # Stores
//
// A store is addressed by name and partition (the task's partition, which is
// also the changelog topic's partition): db.KeyValue("counts", 3),
// db.Window("clicks-per-minute", 3, 24*time.Hour), db.Session(...). Store
// names map to small numeric ids persisted in the DB, so every key carries a
// few bytes of prefix, not the name. A name is bound to its kind for good;
// opening it as another kind gives a handle whose every call fails with
// ErrKindMismatch.
//
// Window and session stores are segmented by time (window start, session
// end) with Kafka Streams' segment interval, max(retention/2, 60s), fixed
// when the store is first created. Expire(streamTime) deletes every segment
// that holds only expired times with one DeleteRange; reads skip the expired
// records of the oldest live segment, and Put drops records already expired.
// Each store tracks its stream time as the max of the times put (window
// starts, session ends) and of Expire's argument; it lives in memory only and
// is rebuilt by restoring or processing.
//
// # One batch, reads of own writes
//
// Every write of every store goes into the DB's one indexed pebble batch:
// "one write batch per commit". Get, Range, Fetch and the rest read through
// it, so a task sees its own uncommitted writes at once. An iterator sees the
// batch as it was when the iterator was created.
//
// Commit applies the batch atomically and fsyncs pebble's WAL before
// returning; then a new empty batch begins. Discard drops the batch (the
// exactly-once abort). Close drops it too. Store handles, iterators and the
// slices returned by Get belong to one goroutine at a time: a returned slice
// is valid until the next call on the same store, an iterator's until its
// next Next. Close every iterator before Commit, Discard or Close.
//
// # Changelog and checkpoints
//
// Changes reports every entry changed since the last Commit once, with its
// latest value (nil for a delete), in Kafka Streams' changelog key format:
//
//	KeyValue: key
//	Window:   key, 8-byte big-endian window start, 4-byte big-endian seqnum (0)
//	Session:  key, 8-byte big-endian end, 8-byte big-endian start
//
// It reads the pending batch itself, so the write path keeps no dirty set
// and allocates nothing per write. Expire and Drop are not reported: a
// windowed changelog topic expires by its own retention, and Drop is local.
// Restore applies one changelog record to a store; a key too short for its
// kind fails with ErrCorruptChangelog. Window and session records go into
// the pending batch as if written; key-value records into a batch of their
// own, unindexed (nothing reads a partition while it restores), not in
// Changes, and visible once committed, ahead of the pending batch (or after
// it when the batch holds a Drop, so that the drop cannot delete them).
//
// SetCheckpoint puts the next changelog offset to read for a store partition
// into the same pending batch as the data, so both become durable in the same
// Commit. A runtime that (1) writes, (2) produces Changes to the changelog
// and waits for the acks, (3) SetCheckpoint(offset after them) and (4)
// Commits, never has local state ahead of its checkpoint: after a crash the
// DB holds exactly the last committed batch, with its checkpoint, and
// restoring from that checkpoint replays at most records already applied
// (changelog records are idempotent puts of latest values). With
// exactly-once, Commit follows the Kafka transaction's commit and Discard
// follows its abort.
//
// # Crash behaviour
//
// Only a completed Commit is durable; a crash loses the pending batch and
// nothing else. pebble replays its WAL on Open, so a Commit is applied
// entirely or not at all. Store registrations are written and synced at once,
// outside the batch, so a Discard never leaves data under an unknown id.
package state
