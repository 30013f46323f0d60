package log

import (
	"fmt"
	"math"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/runnel-io/runnel/broker/internal/batch"
)

// Append appends b, exactly one record batch that the caller has validated
// (package batch). It assigns the batch base offset = LogEndOffset and writes
// it and leaderEpoch into b (outside the CRC), rolls first if the active
// segment is full or old, starts a new epoch in the epoch cache when
// leaderEpoch is newer than the latest, and writes b with a single WriteAt.
// It does not fsync: call Sync before acknowledging. Readers see the batch
// once Append returns.
func (l *Log) Append(b []byte, leaderEpoch int32) (AppendResult, error) {
	h, err := parseWhole(b)
	if err != nil {
		return AppendResult{}, err
	}
	if len(b) != h.Size() {
		return AppendResult{}, fmt.Errorf("%w: %d bytes hold a %d-byte batch and more", ErrInvalidBatch, len(b), h.Size())
	}
	l.appendMu.Lock()
	defer l.appendMu.Unlock()
	if err := l.writableLocked(); err != nil {
		return AppendResult{}, err
	}
	nowMs := l.nowMs()
	base := l.leo.Load()
	h.BaseOffset, h.PartitionLeaderEpoch = base, leaderEpoch
	if err := l.prepareLocked(&h, int64(len(b)), nowMs); err != nil {
		return AppendResult{}, err
	}
	batch.SetBaseOffset(b, base)
	batch.SetPartitionLeaderEpoch(b, leaderEpoch)
	if err := l.writeLocked(b, nowMs); err != nil {
		return AppendResult{}, err
	}
	return AppendResult{BaseOffset: base, LastOffset: h.LastOffset(), LogAppendTime: nowMs}, nil
}

// AppendFollower appends whole batches that already carry their offsets and
// leader epochs (replication). The first base offset must equal
// LogEndOffset and the batches must be contiguous; their CRCs are checked.
// Nothing is written unless every batch is valid. It does not fsync.
func (l *Log) AppendFollower(b []byte) error {
	l.appendMu.Lock()
	defer l.appendMu.Unlock()
	if err := l.writableLocked(); err != nil {
		return err
	}
	expect := l.leo.Load()
	for pos := 0; pos < len(b); {
		h, err := parseWhole(b[pos:])
		if err != nil {
			return fmt.Errorf("at byte %d: %w", pos, err)
		}
		if h.BaseOffset != expect {
			return fmt.Errorf("%w: batch at byte %d has offset %d, expected %d", ErrNonContiguous, pos, h.BaseOffset, expect)
		}
		if crc := batch.ComputeCRC(b[pos : pos+h.Size()]); crc != h.CRC {
			return fmt.Errorf("%w: batch at offset %d: %w", ErrInvalidBatch, h.BaseOffset, batch.ErrCRC)
		}
		expect = h.LastOffset() + 1
		pos += h.Size()
	}
	// Write runs of batches that go to the same segment with one WriteAt each.
	nowMs := l.nowMs()
	run := 0
	for pos := 0; pos < len(b); {
		h, _ := batch.ParseHeader(b[pos:])
		size := int64(h.Size())
		act := l.activeLocked()
		if run < pos && l.shouldRollLocked(act, int64(pos-run), size, h.LastOffset(), nowMs) {
			if err := l.writeLocked(b[run:pos], nowMs); err != nil {
				return err
			}
			run = pos
		}
		if run == pos {
			if err := l.prepareLocked(&h, size, nowMs); err != nil {
				return err
			}
		} else if err := l.assignEpochLocked(h.PartitionLeaderEpoch, h.BaseOffset); err != nil {
			return err
		}
		pos += int(size)
	}
	if run < len(b) {
		return l.writeLocked(b[run:], nowMs)
	}
	return nil
}

// parseWhole parses the header of the batch at the start of b and checks that
// the whole batch is present.
func parseWhole(b []byte) (batch.Header, error) {
	h, err := batch.ParseHeader(b)
	if err != nil {
		return h, fmt.Errorf("%w: %w", ErrInvalidBatch, err)
	}
	if h.Size() > len(b) {
		return h, fmt.Errorf("%w: header claims %d bytes, have %d", ErrInvalidBatch, h.Size(), len(b))
	}
	if h.LastOffsetDelta < 0 {
		return h, fmt.Errorf("%w: last offset delta %d", ErrInvalidBatch, h.LastOffsetDelta)
	}
	return h, nil
}

// prepareLocked readies the log for a batch h of size bytes that starts a
// write: it rolls if needed and assigns the batch's epoch. appendMu held.
func (l *Log) prepareLocked(h *batch.Header, size, nowMs int64) error {
	if l.shouldRollLocked(l.activeLocked(), 0, size, h.LastOffset(), nowMs) {
		if err := l.rollLocked(); err != nil {
			return err
		}
	}
	return l.assignEpochLocked(h.PartitionLeaderEpoch, h.BaseOffset)
}

// assignEpochLocked starts epoch at offset in the epoch cache if it is newer
// than the latest (Kafka does this before writing the batch). appendMu held.
func (l *Log) assignEpochLocked(epoch int32, offset int64) error {
	if epoch < 0 {
		return nil // NO_PARTITION_LEADER_EPOCH
	}
	if latest, _ := l.epochs.Latest(); epoch <= latest {
		return nil
	}
	if err := l.epochs.Assign(epoch, offset); err != nil {
		return fmt.Errorf("%w: %w", ErrFailed, err) // Assign failed the log
	}
	return nil
}

// writeLocked writes whole batches b at the end of the active segment and
// publishes them to readers. Any write error fails the log. appendMu held.
func (l *Log) writeLocked(b []byte, nowMs int64) error {
	act := l.activeLocked()
	pos := act.size
	if _, err := act.file.f.WriteAt(b, pos); err != nil {
		err = fmt.Errorf("log: write %s at %d: %w", segmentFileName(act.base, logSuffix), pos, err)
		l.fail(err)
		return fmt.Errorf("%w: %w", ErrFailed, err)
	}
	interval := l.cfg.IndexIntervalBytes
	l.mu.Lock()
	for off := 0; off < len(b); {
		h, _ := batch.ParseHeader(b[off:])
		size := int64(h.Size())
		act.addBatch(&h, pos+int64(off), size, interval, nowMs)
		off += int(size)
	}
	l.leo.Store(act.next)
	l.mu.Unlock()
	return nil
}

// shouldRollLocked reports whether a batch of size bytes ending at offset
// lastOffset, following pending bytes not yet written, must go to a new
// segment: the active one is not empty and would exceed segment.bytes, has
// aged past segment.ms, or cannot index lastOffset relative to its base in an
// int32. appendMu held.
func (l *Log) shouldRollLocked(act *segment, pending, size, lastOffset, nowMs int64) bool {
	used := act.size + pending
	if used == 0 {
		return false
	}
	if used+size > l.cfg.SegmentBytes || lastOffset-act.base > math.MaxInt32 {
		return true
	}
	return act.size > 0 && l.cfg.SegmentMs > 0 && nowMs-act.rollBaseMs > l.cfg.SegmentMs
}

// MaybeRoll rolls the active segment if it is older than segment.ms. The
// broker calls it from a ticker; Append also checks on every append.
func (l *Log) MaybeRoll() error {
	l.appendMu.Lock()
	defer l.appendMu.Unlock()
	if err := l.writableLocked(); err != nil {
		return err
	}
	act := l.activeLocked()
	if act.size == 0 || l.cfg.SegmentMs <= 0 || l.nowMs()-act.rollBaseMs <= l.cfg.SegmentMs {
		return nil
	}
	return l.rollLocked()
}

// rollLocked closes the active segment for writing and starts a new one at
// the log end offset: the old segment is fsynced and its indexes written and
// fsynced, then the new file is created and the directory fsynced. Readers
// are not blocked; appenders are. Any error fails the log. appendMu held.
func (l *Log) rollLocked() error {
	old := l.activeLocked()
	if err := old.file.f.SyncData(); err != nil {
		err = fmt.Errorf("log: fsync %s: %w", segmentFileName(old.base, logSuffix), err)
		l.fail(err)
		return fmt.Errorf("%w: %w", ErrFailed, err)
	}
	old.syncedSize.Store(old.size)
	if err := l.writeIndexesLocked(old); err != nil {
		l.fail(err)
		return fmt.Errorf("%w: %w", ErrFailed, err)
	}
	s, err := l.createSegment(old.next)
	if err != nil {
		l.fail(err)
		return fmt.Errorf("%w: %w", ErrFailed, err)
	}
	l.mu.Lock()
	l.mu.segments = append(l.mu.segments, s)
	l.mu.Unlock()
	l.logger.Debug("log: rolled segment", "dir", l.dir, "base", s.base, "previousBytes", old.size)
	return nil
}

// createSegment creates an empty segment file at base (replacing any file of
// that name) and fsyncs the directory. The caller adds it to the list.
func (l *Log) createSegment(base int64) (*segment, error) {
	name := l.path(segmentFileName(base, logSuffix))
	f, err := l.fs.Create(name, vfs.WriteCategoryUnspecified)
	if err != nil {
		return nil, fmt.Errorf("log: create %s: %w", name, err)
	}
	if err := syncDir(l.fs, l.dir); err != nil {
		_ = f.Close()
		return nil, err
	}
	return newSegment(base, f), nil
}
