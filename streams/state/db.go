package state

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/bloom"
	"github.com/cockroachdb/pebble/v2/vfs"
)

// Options configure Open.
type Options struct {
	// FS is the file system; nil means the real disk. vfs.NewMem() gives a
	// store that never touches the disk.
	FS vfs.FS
	// CacheBytes is the size of pebble's block cache; 0 means 8 MiB.
	CacheBytes int64
	// MemTableBytes is the size of one of pebble's memtables (at most two
	// fill before writes wait for a flush); 0 means 16 MiB.
	MemTableBytes uint64
	// Logger receives pebble's log lines; nil discards them.
	Logger *slog.Logger
}

// DB is one app instance's state: one pebble DB holding every store of every
// task, and the one pending write batch. A DB and everything obtained from it
// (store handles, iterators, returned slices) is used by one goroutine at a
// time; it has no locks of its own.
type DB struct {
	pdb   *pebble.DB
	batch *pebble.Batch // indexed; nil once closed
	// restored holds key-value changelog records applied by Restore: not
	// indexed (nothing reads a partition while it restores), not in
	// Changes, committed before batch (see commit).
	restored *pebble.Batch
	// dropped: the batch holds a Drop, which must apply before the
	// restored records that follow it (see commit).
	dropped bool
	gen     uint64 // incremented by Discard: invalidates the handles' expiry memos
	byName  map[string]regEntry
	byID    map[uint64]regEntry
	nextID  uint64

	kvs      map[handleKey]*KeyValue
	windows  map[handleKey]*Window
	sessions map[handleKey]*Session

	scratch []byte  // checkpoint keys
	chg     changes // Changes' reusable buffers
}

type handleKey struct {
	name      string
	partition int32
}

// Open opens (creating) the instance's one pebble DB in dir. One DB holds
// every store of every task of one app instance.
func Open(dir string, opts Options) (*DB, error) {
	cacheBytes := opts.CacheBytes
	if cacheBytes <= 0 {
		cacheBytes = 8 << 20
	}
	cache := pebble.NewCache(cacheBytes)
	defer cache.Unref()
	logger := opts.Logger
	if logger == nil {
		logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	memtable := opts.MemTableBytes
	if memtable == 0 {
		memtable = 16 << 20
	}
	po := &pebble.Options{
		FS:                 opts.FS,
		Cache:              cache,
		Logger:             slogLogger{logger},
		FormatMajorVersion: pebble.FormatNewest,
		MemTableSize:       memtable,
	}
	// A store lookup is a point Get of a key that is often absent (a new
	// key) or in one table of many: bloom filters skip the tables that
	// cannot hold it (later levels inherit L0's policy).
	po.Levels[0].FilterPolicy = bloom.FilterPolicy(10)
	if po.FS == nil {
		po.FS = vfs.Default
	}
	pdb, err := pebble.Open(dir, po)
	if err != nil {
		return nil, fmt.Errorf("state: open %q: %w", dir, err)
	}
	db := &DB{
		pdb:      pdb,
		batch:    pdb.NewIndexedBatch(),
		byName:   map[string]regEntry{},
		byID:     map[uint64]regEntry{},
		nextID:   1,
		kvs:      map[handleKey]*KeyValue{},
		windows:  map[handleKey]*Window{},
		sessions: map[handleKey]*Session{},
	}
	if err := db.loadRegistry(); err != nil {
		_ = db.Close()
		return nil, fmt.Errorf("state: open %q: %w", dir, err)
	}
	return db, nil
}

// OpenInMemory opens a DB on a fresh in-memory file system:
// Open("", Options{FS: vfs.NewMem()}).
func OpenInMemory() (*DB, error) {
	return Open("", Options{FS: vfs.NewMem()})
}

// Close closes the DB, dropping uncommitted changes. It is idempotent. Close
// every iterator first.
func (db *DB) Close() error {
	if db.batch == nil {
		return nil
	}
	err := db.batch.Close()
	db.batch = nil
	if db.restored != nil {
		err = errors.Join(err, db.restored.Close())
		db.restored = nil
	}
	return errors.Join(err, db.pdb.Close())
}

// Commit applies the pending batch atomically and fsyncs the WAL before it
// returns, then starts a new empty batch. Close every iterator first.
func (db *DB) Commit() error { return db.commit(pebble.Sync) }

func (db *DB) commit(opts *pebble.WriteOptions) error {
	if db.batch == nil {
		return ErrClosed
	}
	// Restored records first, then the batch with their checkpoints: a
	// crash between the two leaves data ahead of its checkpoint, which a
	// restore applies again to the same result; never the other way. But
	// when the batch drops a store partition, that drop came before the
	// restored records (a partition lost, then restored or followed again):
	// they go into the batch after it, one commit in program order.
	if db.restored != nil && !db.restored.Empty() {
		var err error
		if db.dropped {
			err = db.batch.Apply(db.restored, nil)
		} else {
			err = db.restored.Commit(opts)
		}
		if err != nil {
			return fmt.Errorf("state: commit restored records: %w", err)
		}
	}
	if db.restored != nil {
		_ = db.restored.Close()
		db.restored = nil
	}
	db.dropped = false
	if !db.batch.Empty() {
		if err := db.batch.Commit(opts); err != nil {
			return fmt.Errorf("state: commit: %w", err)
		}
	}
	err := db.batch.Close()
	db.batch = db.pdb.NewIndexedBatch()
	return err
}

// CommitNoSync is Commit without waiting for the WAL to reach the disk:
// for data that can be read again (a restore), where a machine crash may
// lose the last batches but never splits one (state and checkpoint stay
// together).
func (db *DB) CommitNoSync() error { return db.commit(pebble.NoSync) }

// Discard drops every uncommitted change (exactly-once abort). Close every
// iterator first.
func (db *DB) Discard() {
	if db.batch == nil {
		return
	}
	_ = db.batch.Close()
	db.batch = db.pdb.NewIndexedBatch()
	if db.restored != nil {
		_ = db.restored.Close()
		db.restored = nil
	}
	db.dropped = false
	db.gen++
}

// restoredBatch is the batch Restore writes to.
func (db *DB) restoredBatch() *pebble.Batch {
	if db.restored == nil {
		db.restored = db.pdb.NewBatch()
	}
	return db.restored
}

// PendingBytes is the size of the uncommitted batch, for the runtime's memory
// bound. Every write adds to it, overwrites of the same key included.
func (db *DB) PendingBytes() int {
	if db.batch == nil {
		return 0
	}
	n := db.batch.Len()
	if db.restored != nil {
		n += db.restored.Len()
	}
	return n
}

// checkpointKey is keyed by store name, so a checkpoint needs no registered
// store: tagMeta 'c' uvarint(len(name)) name uvarint(partition).
func (db *DB) checkpointKey(store string, partition int32) []byte {
	b := append(db.scratch[:0], tagMeta, metaCheckpoint)
	b = binary.AppendUvarint(b, uint64(len(store)))
	b = append(b, store...)
	b = binary.AppendUvarint(b, uint64(uint32(partition)))
	db.scratch = b
	return b
}

// Checkpoint returns the next changelog offset to read for (store,
// partition), as last set by SetCheckpoint (pending or committed).
func (db *DB) Checkpoint(store string, partition int32) (offset int64, ok bool, err error) {
	if db.batch == nil {
		return 0, false, ErrClosed
	}
	v, closer, err := db.batch.Get(db.checkpointKey(store, partition))
	if errors.Is(err, pebble.ErrNotFound) {
		return 0, false, nil
	}
	if err != nil {
		return 0, false, fmt.Errorf("state: checkpoint %s/%d: %w", store, partition, err)
	}
	defer closer.Close()
	if len(v) != 8 {
		return 0, false, fmt.Errorf("%w: checkpoint %s/%d has %d bytes", ErrCorruptDB, store, partition, len(v))
	}
	return int64(binary.BigEndian.Uint64(v)), true, nil
}

// SetCheckpoint records the next changelog offset to read for (store,
// partition) in the pending batch: it becomes durable with the data it
// describes, at the next Commit. On a closed DB it does nothing.
func (db *DB) SetCheckpoint(store string, partition int32, offset int64) {
	if db.batch == nil {
		return
	}
	var v [8]byte
	binary.BigEndian.PutUint64(v[:], uint64(offset))
	_ = db.batch.Set(db.checkpointKey(store, partition), v[:], nil)
}

// Drop deletes a store partition's data and checkpoint. Like every change it
// takes effect in reads at once and is durable at the next Commit. Drop
// writes nothing to the changelog: Changes reports no tombstones for it.
func (db *DB) Drop(store string, partition int32) error {
	if db.batch == nil {
		return ErrClosed
	}
	if err := db.batch.Delete(db.checkpointKey(store, partition), nil); err != nil {
		return fmt.Errorf("state: drop %s/%d: %w", store, partition, err)
	}
	db.dropped = true
	e, ok := db.byName[store]
	if !ok {
		return nil
	}
	prefix := appendPrefix(nil, e.id, partition)
	if err := db.batch.DeleteRange(prefix, prefixEnd(prefix), nil); err != nil {
		return fmt.Errorf("state: drop %s/%d: %w", store, partition, err)
	}
	hk := handleKey{store, partition}
	if w := db.windows[hk]; w != nil {
		w.reset()
	}
	if s := db.sessions[hk]; s != nil {
		s.reset()
	}
	return nil
}

// Stats estimates a store partition's size for metrics, cheaply: it reads
// pebble's table metadata, never the data. approxBytes is the on-disk size of
// the partition's key range in flushed sstables (EstimateDiskUsage); entries
// is, over the sstables overlapping that range, (entries - deletions) of each
// table scaled by the share of the table's bytes inside the range. Both
// ignore the memtable and the pending batch, and count a key rewritten in
// several levels more than once; a window store's entries count each window
// once (its time-index entry is not counted).
func (db *DB) Stats(store string, partition int32) (entries int64, approxBytes int64) {
	if db.batch == nil {
		return 0, 0
	}
	e, ok := db.byName[store]
	if !ok {
		return 0, 0
	}
	lo := appendPrefix(nil, e.id, partition)
	hi := prefixEnd(lo)
	levels, err := db.pdb.SSTables(pebble.WithKeyRangeFilter(lo, hi), pebble.WithApproximateSpanBytes())
	if err != nil {
		return 0, 0
	}
	var est float64
	for _, level := range levels {
		for _, t := range level {
			approxBytes += int64(t.ApproximateSpanBytes)
			live := float64(t.TableStats.NumEntries) - float64(t.TableStats.NumDeletions)
			if t.Size > 0 && live > 0 {
				est += live * float64(t.ApproximateSpanBytes) / float64(t.Size)
			}
		}
	}
	if e.kind == kindWindow {
		est /= 2
	}
	return int64(est), approxBytes
}

// store is what every kind of store handle shares.
type store struct {
	db        *DB
	reg       regEntry
	partition int32
	prefix    []byte // data prefix of this store partition
	end       []byte // prefixEnd(prefix)
	key       []byte // scratch for building keys
	val       []byte // Get's returned value
	err       error  // registration error, returned by every call
}

func (db *DB) newStore(name string, partition int32, kind byte, interval int64) store {
	s := store{db: db, partition: partition}
	s.reg, s.err = db.register(name, kind, interval)
	if s.err == nil {
		s.prefix = appendPrefix(nil, s.reg.id, partition)
		s.end = prefixEnd(s.prefix)
	}
	return s
}

func (s *store) check() error {
	if s.err != nil {
		return s.err
	}
	if s.db.batch == nil {
		return ErrClosed
	}
	return nil
}

// get reads k through the pending batch and copies the value into s.val.
func (s *store) get(k []byte) ([]byte, bool, error) {
	v, closer, err := s.db.batch.Get(k)
	if errors.Is(err, pebble.ErrNotFound) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("state: get %s/%d: %w", s.reg.name, s.partition, err)
	}
	s.val = append(s.val[:0], v...)
	_ = closer.Close()
	return s.val, true, nil
}

func retentionMs(d time.Duration) int64 { return max(d.Milliseconds(), 0) }

// slogLogger adapts slog to pebble's Logger.
type slogLogger struct{ l *slog.Logger }

// Infof logs at debug level: pebble's info lines (WALs found, compactions)
// are noise to an app's operator.
func (l slogLogger) Infof(format string, args ...any) {
	l.l.Debug(fmt.Sprintf(format, args...), "component", "pebble")
}

func (l slogLogger) Errorf(format string, args ...any) {
	l.l.Error(fmt.Sprintf(format, args...), "component", "pebble")
}

func (l slogLogger) Fatalf(format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	l.l.Error(msg, "component", "pebble")
	panic("state: pebble fatal: " + msg)
}
