package log

import (
	"errors"
	"fmt"
	"io"

	"github.com/cockroachdb/pebble/v2/vfs"
)

// Truncate drops every batch that holds an offset >= to (replication,
// KIP-101): a batch straddling to is dropped whole, so the new log end offset
// is the base offset of the first dropped batch (<= to). Later segments are
// deleted, the cut segment becomes the active one, the epoch cache is
// truncated from the end, and the cut is fsynced before Truncate returns. If
// to is below the first segment, the log is emptied and restarts at to (the
// log start offset becomes to). to >= LogEndOffset is a no-op.
func (l *Log) Truncate(to int64) error {
	if to < 0 {
		return fmt.Errorf("%w: truncate to %d", ErrOffsetOutOfRange, to)
	}
	l.appendMu.Lock()
	defer l.appendMu.Unlock()
	if err := l.writableLocked(); err != nil {
		return err
	}
	if to >= l.leo.Load() {
		return nil
	}
	l.syncMu.Lock()
	defer l.syncMu.Unlock()
	if to < l.mu.segments[0].base {
		return l.restartAtLocked(to)
	}
	if err := l.truncateLocked(to); err != nil {
		l.fail(err)
		return fmt.Errorf("%w: %w", ErrFailed, err)
	}
	return nil
}

// truncateLocked is Truncate's common case. appendMu and syncMu held.
func (l *Log) truncateLocked(to int64) error {
	k, s := l.segmentForLocked(to)

	// Find the cut: the first batch whose last offset is >= to.
	// to may lie in a gap compaction left at the segment's end.
	cutPos, newNext := s.size, min(s.next, to)
	w := newWalker(s.file.f, s.offIdx.floor(to-s.base), s.size)
	for {
		h, pos, _, err := w.next(false)
		if err == io.EOF {
			break
		}
		if err != nil {
			w.release()
			return fmt.Errorf("log: truncate to %d: %w", to, err)
		}
		if h.LastOffset() >= to {
			cutPos, newNext = pos, h.BaseOffset
			break
		}
	}
	w.release()

	// Work out the segment's state after the cut (reads only bytes we keep).
	nOff := s.offIdx.search(newNext-s.base-1) * offsetEntrySize
	offIdx := s.offIdx[:nOff]
	timeIdx := s.timeIdx
	timeIdx.truncate(newNext - s.base)
	tailStart := int64(0)
	if _, pos, ok := offIdx.last(); ok {
		tailStart = int64(pos)
	}
	maxTs, maxTsOffset, idxTs := int64(-1), int64(-1), int64(-1)
	if ts, rel, ok := timeIdx.last(); ok {
		maxTs, maxTsOffset, idxTs = ts, s.base+int64(rel), ts
	}
	w = newWalker(s.file.f, tailStart, cutPos)
	for {
		h, _, _, err := w.next(false)
		if err == io.EOF {
			break
		}
		if err != nil {
			w.release()
			return fmt.Errorf("log: truncate to %d: %w", to, err)
		}
		if h.MaxTimestamp > maxTs {
			maxTs, maxTsOffset = h.MaxTimestamp, h.BaseOffset
		}
	}
	w.release()

	// Publish: readers never see the dropped bytes again.
	wasActive := k == len(l.mu.segments)-1
	l.readMu.Lock()
	l.mu.Lock()
	removed := append([]*segment(nil), l.mu.segments[k+1:]...)
	l.mu.segments = l.mu.segments[:k+1]
	s.size, s.next = cutPos, newNext
	s.offIdx, s.timeIdx = offIdx, timeIdx
	s.maxTs, s.maxTsOffset, s.idxTs = maxTs, maxTsOffset, idxTs
	s.bytesSinceIdx = cutPos - tailStart
	txnsCut := s.truncateTxns(newNext)
	l.leo.Store(newNext)
	if l.firstDirty.Load() > newNext {
		l.firstDirty.Store(newNext)
	}
	lsoChanged := newNext < l.lso.Load()
	if lsoChanged {
		l.lso.Store(newNext)
	}
	l.mu.Unlock()
	l.readMu.Unlock()

	// Make it durable: later segments first (newest first), then the cut.
	for i, j := 0, len(removed)-1; i < j; i, j = i+1, j-1 {
		removed[i], removed[j] = removed[j], removed[i]
	}
	if len(removed) > 0 {
		if err := l.deleteSegmentsLocked(removed); err != nil {
			return err
		}
	}
	nf, err := l.truncateFile(s, cutPos)
	if err != nil {
		return err
	}
	if nf != s.file {
		l.readMu.Lock()
		l.mu.Lock()
		old := s.file
		s.file = nf
		l.mu.Unlock()
		l.readMu.Unlock()
		old.release()
	}
	s.syncedSize.Store(cutPos)
	l.syncedTo.Store(newNext)
	if txnsCut {
		// Now, not at the next roll: a crash must not find entries for
		// offsets that later appends reuse.
		if err := l.writeTxnIndexLocked(s); err != nil {
			return err
		}
		if err := syncDir(l.fs, l.dir); err != nil {
			return err
		}
	}
	if cutPos == 0 {
		s.rollBaseMs = -1
	} else if !wasActive || s.rollBaseMs < 0 {
		if err := l.setRollBase(s); err != nil {
			return err
		}
	}
	if lsoChanged {
		if err := l.writeLogStartOffsetLocked(newNext); err != nil {
			return err
		}
	}
	if err := l.epochs.TruncateFromEnd(newNext); err != nil {
		return err
	}
	l.logger.Info("log: truncated", "dir", l.dir, "to", to, "logEndOffset", newNext, "segmentsDeleted", len(removed))
	return nil
}

// restartAtLocked empties the log and restarts it at offset: the log start
// offset is persisted first, every segment file deleted (newest first), a new
// empty segment created, and the epoch cache cleared. appendMu and syncMu
// held (or during Open).
func (l *Log) restartAtLocked(offset int64) error {
	err := l.restartAt(offset)
	if err != nil && !errors.Is(err, ErrFailed) {
		l.fail(err)
		err = fmt.Errorf("%w: %w", ErrFailed, err)
	}
	return err
}

func (l *Log) restartAt(offset int64) error {
	if err := l.writeLogStartOffsetLocked(offset); err != nil {
		return err
	}
	old := l.mu.segments
	bases := make([]int64, len(old))
	for i, s := range old {
		bases[len(old)-1-i] = s.base
	}
	if err := l.removeSegmentFiles(bases); err != nil {
		return err
	}
	s, err := l.createSegment(offset)
	if err != nil {
		return err
	}
	l.readMu.Lock()
	l.mu.Lock()
	l.mu.segments = []*segment{s}
	l.firstDirty.Store(min(l.firstDirty.Load(), offset))
	l.leo.Store(offset)
	l.lso.Store(offset)
	l.mu.Unlock()
	l.readMu.Unlock()
	for _, s := range old {
		s.file.release()
	}
	l.syncedTo.Store(offset)
	l.logger.Warn("log: emptied and restarted", "dir", l.dir, "offset", offset, "segmentsDeleted", len(old))
	return l.epochs.clear()
}

// truncateFile cuts s's file to size bytes and fsyncs it. Files that cannot
// be truncated in place (MemFS, errorfs) are rewritten: the kept prefix is
// copied to a temp file that is renamed over the segment. It returns the file
// to use from now on: s.file, or a new file that the caller installs (with
// readMu and mu held once the Log is shared) before releasing the old one.
// Readers must not look past size while this runs.
func (l *Log) truncateFile(s *segment, size int64) (*segFile, error) {
	name := segmentFileName(s.base, logSuffix)
	if t, ok := s.file.f.(interface{ Truncate(int64) error }); ok {
		if err := t.Truncate(size); err != nil {
			return nil, fmt.Errorf("log: truncate %s: %w", name, err)
		}
		if err := s.file.f.Sync(); err != nil {
			return nil, fmt.Errorf("log: fsync %s: %w", name, err)
		}
		return s.file, nil
	}
	tmp := l.path(name + tmpSuffix)
	nf, err := l.fs.Create(tmp, vfs.WriteCategoryUnspecified)
	if err != nil {
		return nil, fmt.Errorf("log: truncate %s: %w", name, err)
	}
	if err := copyPrefix(nf, s.file.f, size); err != nil {
		_ = nf.Close()
		return nil, fmt.Errorf("log: truncate %s: %w", name, err)
	}
	if err := nf.Sync(); err != nil {
		_ = nf.Close()
		return nil, fmt.Errorf("log: fsync %s: %w", tmp, err)
	}
	if err := l.fs.Rename(tmp, l.path(name)); err != nil {
		_ = nf.Close()
		return nil, fmt.Errorf("log: truncate %s: %w", name, err)
	}
	if err := syncDir(l.fs, l.dir); err != nil {
		_ = nf.Close()
		return nil, err
	}
	return newSegFile(nf), nil
}

func copyPrefix(dst, src vfs.File, size int64) error {
	buf := make([]byte, min(size, 1<<20))
	for off := int64(0); off < size; {
		n := min(int64(len(buf)), size-off)
		if err := readAt(src, buf[:n], off); err != nil {
			return err
		}
		if _, err := dst.WriteAt(buf[:n], off); err != nil {
			return err
		}
		off += n
	}
	return nil
}

// TruncateFullyAndStartAt empties the log and restarts it at offset: log
// start and log end become offset (Kafka's truncateFullyAndStartAt). A
// follower whose log ends below the leader's log start does this before
// it fetches from there. The new start is fsynced before any segment is
// deleted.
func (l *Log) TruncateFullyAndStartAt(offset int64) error {
	if offset < 0 {
		return fmt.Errorf("%w: restart at %d", ErrOffsetOutOfRange, offset)
	}
	l.appendMu.Lock()
	defer l.appendMu.Unlock()
	if err := l.writableLocked(); err != nil {
		return err
	}
	l.syncMu.Lock()
	defer l.syncMu.Unlock()
	return l.restartAtLocked(offset)
}
