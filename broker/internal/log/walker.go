package log

import (
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/runnel-io/runnel/broker/internal/batch"
)

// errBadBatch marks a structural problem found while walking a segment (as
// opposed to an IO error): recovery truncates at it, reads report ErrCorrupt.
var errBadBatch = errors.New("bad batch")

const (
	walkChunk    = 32 << 10 // bytes read per ReadAt while walking headers
	maxPooledBuf = 1 << 20  // larger walker buffers are not returned to the pool
)

var walkBufPool = sync.Pool{New: func() any {
	b := make([]byte, walkChunk)
	return &b
}}

// batchWalker steps through the batches of a segment file between two
// positions, reading the file in chunks so that walking many small batches
// costs few syscalls. It checks structure only (length bounds, magic 2, a
// non-negative last offset delta); the caller checks CRCs and offsets.
type batchWalker struct {
	f      vfs.File
	pos    int64 // file position of the next batch
	end    int64 // walk stops here
	buf    *[]byte
	bufPos int64 // file position of (*buf)[0]
	n      int   // valid bytes in *buf
	fill   int   // bytes to read per refill when fewer are needed; <= len(*buf)
	owned  bool  // buf belongs to the caller: not returned to the pool
}

func newWalker(f vfs.File, start, end int64) batchWalker {
	return batchWalker{f: f, pos: start, end: end, buf: walkBufPool.Get().(*[]byte), fill: walkChunk}
}

// newBulkWalker is newWalker reading buf-sized chunks into buf, which the
// caller owns (the cleaner reads whole segments).
func newBulkWalker(f vfs.File, start, end int64, buf *[]byte) batchWalker {
	return batchWalker{f: f, pos: start, end: end, buf: buf, fill: len(*buf), owned: true}
}

func (w *batchWalker) release() {
	if w.buf != nil && !w.owned && cap(*w.buf) <= maxPooledBuf {
		walkBufPool.Put(w.buf)
	}
	w.buf = nil
}

// next returns the header and position of the batch at the walker's position
// and moves past it. With body set it also returns the whole batch, valid
// until the next call. It returns io.EOF at the end, an error wrapping
// errBadBatch for a malformed or partial batch, or the IO error.
func (w *batchWalker) next(body bool) (h batch.Header, pos int64, raw []byte, err error) {
	pos = w.pos
	rem := w.end - pos
	if rem <= 0 {
		return h, pos, nil, io.EOF
	}
	if rem < batch.HeaderSize {
		return h, pos, nil, fmt.Errorf("%w: %d trailing bytes at position %d, less than a batch header", errBadBatch, rem, pos)
	}
	hb, err := w.bytes(pos, batch.HeaderSize)
	if err != nil {
		return h, pos, nil, err
	}
	h, err = batch.ParseHeader(hb)
	if err != nil {
		return h, pos, nil, fmt.Errorf("%w: at position %d: %w", errBadBatch, pos, err)
	}
	size := int64(h.Size())
	if size > rem {
		return h, pos, nil, fmt.Errorf("%w: batch at position %d claims %d bytes, only %d remain", errBadBatch, pos, size, rem)
	}
	if h.LastOffsetDelta < 0 {
		return h, pos, nil, fmt.Errorf("%w: batch at position %d has last offset delta %d", errBadBatch, pos, h.LastOffsetDelta)
	}
	if body {
		if raw, err = w.bytes(pos, int(size)); err != nil {
			return h, pos, nil, err
		}
	}
	w.pos = pos + size
	return h, pos, raw, nil
}

// buffered returns file bytes [off, off+n) if the walker's buffer holds them.
func (w *batchWalker) buffered(off int64, n int) ([]byte, bool) {
	if off >= w.bufPos && off+int64(n) <= w.bufPos+int64(w.n) {
		return (*w.buf)[off-w.bufPos:][:n], true
	}
	return nil, false
}

// bytes returns file bytes [off, off+n), refilling the buffer from off when
// they are not buffered. n never exceeds w.end-off, so a garbage length can
// not cause an allocation larger than the file.
func (w *batchWalker) bytes(off int64, n int) ([]byte, error) {
	if b, ok := w.buffered(off, n); ok {
		return b, nil
	}
	if n > len(*w.buf) {
		b := make([]byte, n)
		w.buf = &b
	}
	want := min(int64(max(w.fill, n)), int64(len(*w.buf)), w.end-off)
	w.n = 0
	m, err := w.f.ReadAt((*w.buf)[:want], off)
	if m < n {
		if err == nil || err == io.EOF {
			err = fmt.Errorf("%w: file shorter than expected at position %d", errBadBatch, off)
		}
		return nil, err
	}
	w.bufPos, w.n = off, m
	return (*w.buf)[:n], nil
}

// readAt reads exactly len(p) bytes at off.
func readAt(f vfs.File, p []byte, off int64) error {
	n, err := f.ReadAt(p, off)
	if n == len(p) {
		return nil
	}
	if err == nil || err == io.EOF {
		err = io.ErrUnexpectedEOF
	}
	return err
}
