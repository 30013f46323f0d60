package log

import (
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
)

// Log is one partition's durable segmented log. It is safe for concurrent
// use; see doc.go for what runs concurrently and the lock order.
type Log struct {
	fs     vfs.FS
	dir    string
	now    func() time.Time
	logger *slog.Logger
	epochs *EpochCache

	// appendMu serializes every mutation: appends, rolls, truncation,
	// retention, SetConfig, Close.
	appendMu sync.Mutex
	cfg      Config // guarded by appendMu

	// syncMu serializes fsyncs (group commit). syncedTo is the log end offset
	// covered by the last completed fsync.
	syncMu   sync.Mutex
	syncedTo atomic.Int64

	// readMu is held shared by readers for the whole of a read, and exclusive
	// (briefly) by whoever removes a segment, shrinks a file or closes the log.
	readMu sync.RWMutex

	// mu guards the segment list and the published state readers look at.
	// Never held across IO.
	mu struct {
		sync.RWMutex
		segments []*segment // ordered by base offset; the last one is active
		closed   bool
	}
	leo atomic.Int64 // log end offset; stored with mu held
	lso atomic.Int64 // log start offset; stored with mu held

	// cleanMu serializes Clean (see clean.go); taken before appendMu.
	cleanMu     sync.Mutex
	cleanCfg    atomic.Pointer[Config] // cfg as of the last SetConfig, for the cleaner
	firstDirty  atomic.Int64           // cleaner checkpoint: offsets below were cleaned
	tombHorizon atomic.Int64           // earliest delete horizon of a kept tombstone; 0: none
	cleanHook   func(step string)      // tests: called at each step of a swap

	// txnDamaged: Open removed a .txnindex file it could not read
	// (TxnIndexDamaged). Set only during Open.
	txnDamaged bool

	flushNever    atomic.Bool
	indexInterval atomic.Int32          // cfg.IndexIntervalBytes, for readers
	failure       atomic.Pointer[error] // first write/fsync error; set once
}

// AppendResult describes an appended batch.
type AppendResult struct {
	BaseOffset    int64 // offset assigned to the batch's first record
	LastOffset    int64 // offset of the batch's last record
	LogAppendTime int64 // the log's clock at append, in milliseconds
}

// LogStartOffset returns the first offset that can be read.
func (l *Log) LogStartOffset() int64 { return l.lso.Load() }

// LogEndOffset returns the offset the next appended record gets.
func (l *Log) LogEndOffset() int64 { return l.leo.Load() }

// Epochs returns the leader-epoch cache.
func (l *Log) Epochs() *EpochCache { return l.epochs }

// Dir returns the partition directory.
func (l *Log) Dir() string { return l.dir }

// Size returns the bytes of all segments.
func (l *Log) Size() int64 {
	l.mu.RLock()
	defer l.mu.RUnlock()
	var n int64
	for _, s := range l.mu.segments {
		n += s.size
	}
	return n
}

// NumSegments returns the number of segments.
func (l *Log) NumSegments() int {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return len(l.mu.segments)
}

// SetConfig applies a changed topic configuration. It takes effect at the
// next append, roll check or retention run.
func (l *Log) SetConfig(c Config) {
	l.appendMu.Lock()
	defer l.appendMu.Unlock()
	l.cfg = c.withDefaults()
	cfg := l.cfg
	l.cleanCfg.Store(&cfg)
	l.flushNever.Store(l.cfg.FlushNever)
	l.indexInterval.Store(l.cfg.IndexIntervalBytes)
}

// Close fsyncs the active segment, writes its indexes and the clean-shutdown
// marker (so the next Open skips the recovery scan), and closes every file.
// It waits for running fsyncs and reads. Close is idempotent; a failed log is
// closed without the marker.
func (l *Log) Close() error {
	l.appendMu.Lock()
	defer l.appendMu.Unlock()
	l.mu.RLock()
	closed := l.mu.closed
	l.mu.RUnlock()
	if closed {
		return nil
	}
	var err error
	if err = l.failedErr(); err == nil {
		err = l.closeCleanLocked()
	}
	l.syncMu.Lock()
	if err == nil {
		l.syncedTo.Store(l.leo.Load())
	}
	l.readMu.Lock()
	l.mu.Lock()
	segs := l.mu.segments
	l.mu.segments, l.mu.closed = nil, true
	l.mu.Unlock()
	l.readMu.Unlock()
	l.syncMu.Unlock()
	for _, s := range segs {
		s.file.release()
	}
	if err != nil {
		return fmt.Errorf("log: close %s: %w", l.dir, err)
	}
	return nil
}

// closeCleanLocked makes the active segment and its indexes durable and
// writes the clean-shutdown marker. appendMu held.
func (l *Log) closeCleanLocked() error {
	act := l.activeLocked()
	if err := act.file.f.SyncData(); err != nil {
		l.fail(err)
		return err
	}
	act.syncedSize.Store(act.size)
	if err := l.writeIndexesLocked(act); err != nil {
		l.fail(err)
		return err
	}
	if err := writeFileAtomic(l.fs, l.dir, cleanShutdownFile, nil); err != nil {
		l.fail(err)
		return err
	}
	if err := syncDir(l.fs, l.dir); err != nil {
		l.fail(err)
		return err
	}
	return nil
}

// Delete closes the log and removes its directory (topic deletion). A
// cleaning pass still running stops at its next batch; Delete waits for it,
// so that the pass writes no file into the directory being removed.
func (l *Log) Delete() error {
	cerr := l.Close()
	l.cleanMu.Lock()
	defer l.cleanMu.Unlock()
	if err := l.fs.RemoveAll(l.dir); err != nil {
		return fmt.Errorf("log: remove %s: %w", l.dir, err)
	}
	if err := syncDir(l.fs, l.fs.PathDir(l.dir)); err != nil {
		return err
	}
	if cerr != nil && !errors.Is(cerr, ErrFailed) {
		return cerr
	}
	return nil
}

// isClosed reports whether Close has run.
func (l *Log) isClosed() bool {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return l.mu.closed
}

// fail puts the log in the failed state (first error wins).
func (l *Log) fail(err error) {
	if l.failure.CompareAndSwap(nil, &err) {
		l.logger.Error("log: IO error; the log refuses writes until reopened", "dir", l.dir, "err", err)
	}
}

// failedErr returns an error wrapping ErrFailed if the log has failed.
func (l *Log) failedErr() error {
	if p := l.failure.Load(); p != nil {
		return fmt.Errorf("%w: %w", ErrFailed, *p)
	}
	return nil
}

// writableLocked returns why the log cannot be written, if it cannot.
// appendMu held.
func (l *Log) writableLocked() error {
	if err := l.failedErr(); err != nil {
		return err
	}
	l.mu.RLock()
	closed := l.mu.closed
	l.mu.RUnlock()
	if closed {
		return ErrClosed
	}
	return nil
}

// activeLocked returns the active segment. appendMu or mu held.
func (l *Log) activeLocked() *segment {
	return l.mu.segments[len(l.mu.segments)-1]
}

// segmentForLocked returns the segment whose range holds offset (the last
// segment whose base is <= offset). mu held; offset >= the first base.
func (l *Log) segmentForLocked(offset int64) (int, *segment) {
	segs := l.mu.segments
	lo, hi := 0, len(segs)
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if segs[m].base <= offset {
			lo = m + 1
		} else {
			hi = m
		}
	}
	if lo == 0 {
		return 0, segs[0]
	}
	return lo - 1, segs[lo-1]
}

func (l *Log) nowMs() int64 { return l.now().UnixMilli() }

func (l *Log) path(name string) string { return l.fs.PathJoin(l.dir, name) }

// writeIndexesLocked writes s's indexes to <base>.index, <base>.timeindex
// and <base>.txnindex (atomically, fsynced; the caller fsyncs the directory
// or not as it needs: the files are rebuildable). The time index gets a final entry holding the
// segment's largest timestamp. appendMu held.
func (l *Log) writeIndexesLocked(s *segment) error {
	l.mu.Lock()
	s.addTimeEntry()
	l.mu.Unlock()
	// The slices are only appended to by the appender (us) and truncated by
	// Truncate (also appendMu), so reading them here without mu is safe.
	if err := writeFileAtomic(l.fs, l.dir, segmentFileName(s.base, indexSuffix), s.offIdx); err != nil {
		return err
	}
	if err := writeFileAtomic(l.fs, l.dir, segmentFileName(s.base, timeIndexSuffix), s.timeIdx); err != nil {
		return err
	}
	return l.writeTxnIndexLocked(s)
}
