package log

import (
	"errors"
	"fmt"
	"io"
	"slices"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/runnel-io/runnel/broker/internal/batch"
)

// Read appends to dst whole batches starting with the batch that contains
// offset: only batches whose last offset is < maxOffset (the caller passes
// the high watermark), stopping before the batch that would take the bytes
// appended over maxBytes. With minOne the first batch is returned even if it
// is larger than maxBytes (KIP-74). Batches come from one segment, or from
// the next when compaction removed the rest of this one; the caller reads
// again from the next offset for more.
//
// offset < LogStartOffset or > LogEndOffset returns ErrOffsetOutOfRange;
// offset == LogEndOffset returns dst unchanged. Read never waits for an fsync
// and sees only whole appended batches. dst grows at most once.
func (l *Log) Read(dst []byte, offset, maxOffset int64, maxBytes int, minOne bool) ([]byte, error) {
	l.readMu.RLock()
	defer l.readMu.RUnlock()
	for {
		out, next, err := l.readSegment(dst, offset, maxOffset, maxBytes, minOne)
		if next < 0 || err != nil {
			return out, err
		}
		offset = next // compaction removed the segment's batches from offset on
	}
}

// readSegment is Read within the segment holding offset. When that segment
// has no batch at or after offset (compaction removed its tail), it returns
// the segment's end as next, for Read to continue there; otherwise next is
// -1. readMu held.
func (l *Log) readSegment(dst []byte, offset, maxOffset int64, maxBytes int, minOne bool) (_ []byte, next int64, _ error) {
	l.mu.RLock()
	if l.mu.closed {
		l.mu.RUnlock()
		return dst, -1, ErrClosed
	}
	lso, leo := l.lso.Load(), l.leo.Load()
	if offset < lso || offset > leo {
		l.mu.RUnlock()
		return dst, -1, fmt.Errorf("%w: offset %d, log has [%d, %d)", ErrOffsetOutOfRange, offset, lso, leo)
	}
	if offset == leo || offset >= maxOffset {
		l.mu.RUnlock()
		return dst, -1, nil
	}
	_, s := l.segmentForLocked(offset)
	f, start, stop, segNext := s.file.f, s.offIdx.floor(offset-s.base), s.size, s.next
	size := stop
	if maxOffset < s.next {
		// Batches at or after the first index entry >= maxOffset start at or
		// after maxOffset: never returned.
		if p, ok := s.offIdx.ceil(maxOffset - s.base); ok {
			stop = p
		}
	}
	l.mu.RUnlock()

	// Find the batch holding offset (about an index interval away). The first
	// read usually brings in the answer too, saving a second syscall.
	w := newWalker(f, start, stop)
	defer w.release()
	w.fill = int(min(int64(walkChunk), 2*int64(l.indexInterval.Load())+int64(max(maxBytes, 0))))
	var first batch.Header
	var firstPos int64
	for {
		h, pos, _, err := w.next(false)
		if err == io.EOF {
			if stop == size && segNext > offset && segNext < maxOffset {
				return dst, segNext, nil
			}
			return dst, -1, nil // every batch from offset on is at or beyond maxOffset
		}
		if err != nil {
			return dst, -1, readErr(offset, err)
		}
		if h.LastOffset() >= offset {
			first, firstPos = h, pos
			break
		}
	}
	if first.LastOffset() >= maxOffset {
		return dst, -1, nil
	}
	n := int64(first.Size())
	if n > int64(maxBytes) {
		if !minOne {
			return dst, -1, nil
		}
	} else {
		n = min(int64(maxBytes), stop-firstPos)
	}

	orig := len(dst)
	dst = slices.Grow(dst, int(n))[:orig+int(n)]
	if b, ok := w.buffered(firstPos, int(n)); ok {
		copy(dst[orig:], b)
	} else if err := readAt(f, dst[orig:], firstPos); err != nil {
		return dst[:orig], -1, readErr(offset, err)
	}
	return dst[:orig+wholeBatches(dst[orig:], maxOffset)], -1, nil
}

// wholeBatches returns the length of the longest prefix of b made of whole
// batches whose last offset is < maxOffset. The first batch is known good.
func wholeBatches(b []byte, maxOffset int64) int {
	p := 0
	for len(b)-p >= batch.HeaderSize {
		h, err := batch.ParseHeader(b[p:])
		if err != nil || h.Size() > len(b)-p || h.LastOffset() >= maxOffset {
			break
		}
		p += h.Size()
	}
	return p
}

func readErr(offset int64, err error) error {
	if errors.Is(err, errBadBatch) {
		return fmt.Errorf("%w: reading offset %d: %w", ErrCorrupt, offset, err)
	}
	return fmt.Errorf("log: reading offset %d: %w", offset, err)
}

// FirstBatchAtOrAfterTime appends to dst the first batch at or after the log
// start offset whose MaxTimestamp is >= ts (ListOffsets by timestamp) and
// reports whether there is one. It uses the segments' largest timestamps and
// the time index, then scans; the caller finds the record inside the batch
// and checks it against the high watermark.
func (l *Log) FirstBatchAtOrAfterTime(dst []byte, ts int64) ([]byte, bool, error) {
	l.readMu.RLock()
	defer l.readMu.RUnlock()
	from := int64(-1) // continue the search at this offset
	for {
		l.mu.RLock()
		if l.mu.closed {
			l.mu.RUnlock()
			return dst, false, ErrClosed
		}
		lso := l.lso.Load()
		from = max(from, lso)
		i, _ := l.segmentForLocked(from)
		segs := l.mu.segments
		for i < len(segs) && (segs[i].maxTs < ts || segs[i].next <= from) {
			i++
		}
		if i == len(segs) {
			l.mu.RUnlock()
			return dst, false, nil
		}
		s := segs[i]
		start := int64(0)
		if rel, ok := s.timeIdx.lastBefore(ts); ok {
			start = s.offIdx.floor(int64(rel))
		}
		if s.contains(from) {
			start = max(start, s.offIdx.floor(from-s.base))
		}
		f, end := s.file.f, s.size
		from = s.next
		l.mu.RUnlock()

		dst, found, err := findBatch(dst, f, start, end, func(h *batch.Header) bool {
			return h.MaxTimestamp >= ts && h.LastOffset() >= lso
		})
		if found || err != nil {
			return dst, found, err
		}
	}
}

// MaxTimestampBatch appends to dst the batch holding the log's largest
// timestamp (the first such batch; ListOffsets MAX_TIMESTAMP, KIP-734) and
// reports whether the log has one. The batch may start before the log start
// offset if it straddles it or is in the first segment.
func (l *Log) MaxTimestampBatch(dst []byte) ([]byte, bool, error) {
	l.readMu.RLock()
	defer l.readMu.RUnlock()
	l.mu.RLock()
	if l.mu.closed {
		l.mu.RUnlock()
		return dst, false, ErrClosed
	}
	var best *segment
	for _, s := range l.mu.segments {
		if s.size > 0 && (best == nil || s.maxTs > best.maxTs) {
			best = s
		}
	}
	if best == nil {
		l.mu.RUnlock()
		return dst, false, nil
	}
	target := best.maxTsOffset
	f, start, end := best.file.f, best.offIdx.floor(target-best.base), best.size
	l.mu.RUnlock()
	return findBatch(dst, f, start, end, func(h *batch.Header) bool { return h.BaseOffset == target })
}

// findBatch walks batches in f from start to end and appends the first for
// which match is true to dst.
func findBatch(dst []byte, f vfs.File, start, end int64, match func(*batch.Header) bool) ([]byte, bool, error) {
	w := newWalker(f, start, end)
	defer w.release()
	for {
		h, pos, _, err := w.next(false)
		if err == io.EOF {
			return dst, false, nil
		}
		if err != nil {
			return dst, false, readErr(h.BaseOffset, err)
		}
		if match(&h) {
			raw, err := w.bytes(pos, h.Size())
			if err != nil {
				return dst, false, readErr(h.BaseOffset, err)
			}
			return append(dst, raw...), true, nil
		}
	}
}
