package log

import (
	"fmt"
	"io"

	"github.com/runnel-io/runnel/broker/internal/batch"
)

// Scan calls fn with the header of every batch from the one that contains
// from (raised to the log start offset) up to the log end offset, in order;
// it is meant for rebuilding producer state at startup. It stops at fn's
// first error and returns it. Scan holds the log's read lock while fn runs,
// so fn must not call methods of this Log (truncation, retention and Close
// wait for Scan to finish). from > LogEndOffset returns ErrOffsetOutOfRange.
func (l *Log) Scan(from int64, fn func(h batch.Header) error) error {
	return l.ScanControl(from, func(h batch.Header, _ []byte) error { return fn(h) })
}

// ScanControl is Scan that also passes each control batch whole (its
// transaction marker is in its record); control is nil for other batches
// and valid only during the call.
func (l *Log) ScanControl(from int64, fn func(h batch.Header, control []byte) error) error {
	l.readMu.RLock()
	defer l.readMu.RUnlock()
	for {
		l.mu.RLock()
		if l.mu.closed {
			l.mu.RUnlock()
			return ErrClosed
		}
		from = max(from, l.lso.Load())
		if leo := l.leo.Load(); from >= leo {
			l.mu.RUnlock()
			if from > leo {
				return fmt.Errorf("%w: scan from %d, log end offset is %d", ErrOffsetOutOfRange, from, leo)
			}
			return nil
		}
		_, s := l.segmentForLocked(from)
		f, start, end, next := s.file.f, s.offIdx.floor(from-s.base), s.size, s.next
		l.mu.RUnlock()

		w := newWalker(f, start, end)
		for {
			h, pos, _, err := w.next(false)
			if err == io.EOF {
				break
			}
			if err != nil {
				w.release()
				return readErr(from, err)
			}
			if h.LastOffset() < from {
				continue
			}
			var control []byte
			if h.IsControl() {
				if control, err = w.bytes(pos, h.Size()); err != nil {
					w.release()
					return readErr(from, err)
				}
			}
			if err := fn(h, control); err != nil {
				w.release()
				return err
			}
		}
		w.release()
		from = next
	}
}
