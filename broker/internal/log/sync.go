package log

import (
	"fmt"
	"sync/atomic"
)

// Sync makes everything appended before the call durable (group commit).
//
// Callers serialize on syncMu, but appends do not: the end of the log is
// recorded under a short read lock and the fsync runs outside it. A caller
// whose bytes an earlier or concurrent fsync already covered returns without
// another fsync, so many producers waiting at once share one fsync. With
// log.flush=never (Config.FlushNever) Sync does nothing. After an fsync error
// the log fails: this and every later Sync and Append return an error
// wrapping ErrFailed, because the kernel may have dropped the dirty pages.
func (l *Log) Sync() error {
	if err := l.failedErr(); err != nil {
		return err
	}
	if l.flushNever.Load() {
		return nil
	}
	need := l.leo.Load()
	if l.syncedTo.Load() >= need {
		return nil
	}
	l.syncMu.Lock()
	defer l.syncMu.Unlock()
	if err := l.failedErr(); err != nil {
		return err
	}
	if l.syncedTo.Load() >= need {
		return nil // a concurrent fsync covered us
	}

	// Record what to fsync: the end of every segment holding unsynced bytes
	// (normally just the active one; older ones were fsynced at roll).
	type work struct {
		s    *segment
		f    *segFile
		size int64
	}
	var buf [4]work
	todo := buf[:0]
	l.mu.RLock()
	if l.mu.closed {
		l.mu.RUnlock()
		return ErrClosed
	}
	target := l.leo.Load()
	synced := l.syncedTo.Load()
	segs := l.mu.segments
	for i := len(segs) - 1; i >= 0; i-- {
		s := segs[i]
		if s.syncedSize.Load() < s.size {
			todo = append(todo, work{s: s, f: s.file.acquire(), size: s.size})
		}
		if s.base <= synced {
			break
		}
	}
	l.mu.RUnlock()

	var err error
	for _, w := range todo {
		if err == nil {
			if e := w.f.f.SyncData(); e != nil {
				err = fmt.Errorf("log: fsync %s: %w", segmentFileName(w.s.base, logSuffix), e)
				l.fail(err)
			} else {
				storeMax(&w.s.syncedSize, w.size)
			}
		}
		w.f.release()
	}
	if err != nil {
		return fmt.Errorf("%w: %w", ErrFailed, err)
	}
	l.syncedTo.Store(target)
	return nil
}

// storeMax raises v to x if it is lower.
func storeMax(v *atomic.Int64, x int64) {
	for {
		old := v.Load()
		if old >= x || v.CompareAndSwap(old, x) {
			return
		}
	}
}
