package log

import (
	"fmt"
)

// DeleteRecords advances the log start offset to before (DeleteRecords API).
// The new offset is persisted (fsynced) in the log-start-offset file before
// anything is deleted; then the epoch cache is truncated from the start and
// every segment wholly below before is deleted (never the active one).
// before <= LogStartOffset is a no-op; before > LogEndOffset returns
// ErrOffsetOutOfRange.
func (l *Log) DeleteRecords(before int64) error {
	l.appendMu.Lock()
	defer l.appendMu.Unlock()
	if err := l.writableLocked(); err != nil {
		return err
	}
	if leo := l.leo.Load(); before > leo {
		return fmt.Errorf("%w: delete records before %d, log end offset is %d", ErrOffsetOutOfRange, before, leo)
	}
	if before <= l.lso.Load() {
		return nil
	}
	_, err := l.advanceStartLocked(before)
	return err
}

// EnforceRetention deletes the oldest non-active segments that retention.ms
// (the segment's largest timestamp is older than now-retention.ms) or
// retention.bytes (the log stays at or above retention.bytes without them)
// allow, and advances the log start offset past them. The active segment is
// never deleted. It does not know the high watermark: the caller must not let
// retention overtake replication (Kafka deletes only below the high
// watermark).
func (l *Log) EnforceRetention() (deleted int, err error) {
	l.appendMu.Lock()
	defer l.appendMu.Unlock()
	if err := l.writableLocked(); err != nil {
		return 0, err
	}
	segs := l.mu.segments // appendMu held: the list cannot change
	n := 0
	if l.cfg.RetentionMs >= 0 {
		limit := l.nowMs() - l.cfg.RetentionMs
		for n < len(segs)-1 && segs[n].maxTs < limit {
			n++
		}
	}
	if l.cfg.RetentionBytes >= 0 {
		var total int64
		for _, s := range segs {
			total += s.size
		}
		diff, k := total-l.cfg.RetentionBytes, 0
		for k < len(segs)-1 && diff-segs[k].size >= 0 {
			diff -= segs[k].size
			k++
		}
		n = max(n, k)
	}
	if n == 0 {
		return 0, nil
	}
	l.logger.Info("log: retention deletes segments", "dir", l.dir, "segments", n, "newLogStartOffset", segs[n].base)
	if start := segs[n].base; start > l.lso.Load() {
		return l.advanceStartLocked(start)
	}
	return n, l.removeFrontLocked(n)
}

// advanceStartLocked moves the log start offset up to start: persist it,
// truncate the epoch cache, delete the segments wholly below it except the
// active one. It returns the number of segments deleted. appendMu held.
func (l *Log) advanceStartLocked(start int64) (int, error) {
	if err := l.writeLogStartOffsetLocked(start); err != nil {
		return 0, err
	}
	l.mu.Lock()
	l.lso.Store(start)
	l.mu.Unlock()
	if err := l.epochs.TruncateFromStart(start); err != nil {
		return 0, fmt.Errorf("%w: %w", ErrFailed, err)
	}
	segs := l.mu.segments
	n := 0
	for n < len(segs)-1 && segs[n].next <= start {
		n++
	}
	return n, l.removeFrontLocked(n)
}

// writeLogStartOffsetLocked persists the log start offset. appendMu held.
func (l *Log) writeLogStartOffsetLocked(off int64) error {
	err := writeFileAtomic(l.fs, l.dir, logStartOffsetFile, encodeLogStartOffset(off))
	if err == nil {
		err = syncDir(l.fs, l.dir)
	}
	if err != nil {
		l.fail(err)
		return fmt.Errorf("%w: %w", ErrFailed, err)
	}
	return nil
}

// removeFrontLocked drops the first n segments from the list (waiting for
// running reads), then deletes their files. appendMu held.
func (l *Log) removeFrontLocked(n int) error {
	if n == 0 {
		return nil
	}
	l.readMu.Lock()
	l.mu.Lock()
	removed := l.mu.segments[:n:n]
	l.mu.segments = append([]*segment(nil), l.mu.segments[n:]...)
	l.mu.Unlock()
	l.readMu.Unlock()
	return l.deleteSegmentsLocked(removed)
}

// deleteSegmentsLocked releases removed segments (already out of the list)
// and deletes their files in the given order, then fsyncs the directory. Any
// error fails the log. appendMu held.
func (l *Log) deleteSegmentsLocked(removed []*segment) error {
	bases := make([]int64, len(removed))
	for i, s := range removed {
		bases[i] = s.base
		s.file.release()
	}
	if err := l.removeSegmentFiles(bases); err != nil {
		l.fail(err)
		return fmt.Errorf("%w: %w", ErrFailed, err)
	}
	return nil
}

// removeSegmentFiles deletes the .log, .index, .timeindex and .txnindex
// files of the segments at bases, in order, and fsyncs the directory.
func (l *Log) removeSegmentFiles(bases []int64) error {
	for _, base := range bases {
		for _, suffix := range []string{logSuffix, indexSuffix, timeIndexSuffix, txnIndexSuffix} {
			name := l.path(segmentFileName(base, suffix))
			if err := l.fs.Remove(name); err != nil && !isNotExist(err) {
				return fmt.Errorf("log: remove %s: %w", name, err)
			}
		}
	}
	return syncDir(l.fs, l.dir)
}
