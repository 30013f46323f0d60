package log

import (
	"sync/atomic"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/runnel-io/runnel/broker/internal/batch"
)

// segFile is an open segment file shared by the segment list and by callers
// that use it without holding Log.readMu (Sync, Scan). It is closed when the
// last reference is released, so removing a segment never closes a file
// under a running fsync.
type segFile struct {
	f    vfs.File
	refs atomic.Int32
}

func newSegFile(f vfs.File) *segFile {
	sf := &segFile{f: f}
	sf.refs.Store(1) // the segment list's reference
	return sf
}

func (sf *segFile) acquire() *segFile {
	sf.refs.Add(1)
	return sf
}

func (sf *segFile) release() {
	if sf.refs.Add(-1) == 0 {
		_ = sf.f.Close()
	}
}

// segment is one <base>.log file with its in-memory indexes. base is
// immutable. file is replaced only by truncation, with appendMu, syncMu,
// readMu and mu held. rollBaseMs belongs to the appender (appendMu). The other
// fields are written with appendMu and mu held, so the appender may read them
// without mu and everyone else reads them under mu.RLock.
type segment struct {
	base       int64
	file       *segFile
	syncedSize atomic.Int64 // bytes known to be fsynced

	size          int64 // bytes of whole batches; readers never look past it
	next          int64 // offset after the last batch (base when empty)
	maxTs         int64 // largest batch MaxTimestamp, -1 when empty
	maxTsOffset   int64 // base offset of the first batch holding maxTs, -1 when empty
	rollBaseMs    int64 // segment.ms is measured from here (ms); -1 when empty
	offIdx        offsetIndex
	timeIdx       timeIndex
	bytesSinceIdx int64 // bytes appended since the last offset-index entry
	idxTs         int64 // timestamp of the last time-index entry, -1 if none
	// txns are the aborted transactions whose markers this segment holds,
	// in marker order (txnindex.go). Replaced, never changed in place, so
	// readers may keep a slice they got under mu.
	txns []AbortedTxn
}

func newSegment(base int64, f vfs.File) *segment {
	s := &segment{base: base, file: newSegFile(f)}
	s.reset()
	return s
}

// reset forgets every batch (the file is handled by the caller).
func (s *segment) reset() {
	s.size, s.next = 0, s.base
	s.maxTs, s.maxTsOffset, s.idxTs = -1, -1, -1
	s.rollBaseMs = -1
	s.offIdx, s.timeIdx = s.offIdx[:0], s.timeIdx[:0]
	s.bytesSinceIdx = 0
}

// addBatch records a batch just written at pos: sizes, offsets, timestamps and
// index entries.
func (s *segment) addBatch(h *batch.Header, pos, size int64, interval int32, nowMs int64) {
	if s.size == 0 {
		s.rollBaseMs = nowMs
	}
	if h.MaxTimestamp > s.maxTs {
		s.maxTs, s.maxTsOffset = h.MaxTimestamp, h.BaseOffset
	}
	if s.bytesSinceIdx > int64(interval) {
		s.offIdx.add(int32(h.BaseOffset-s.base), int32(pos))
		s.addTimeEntry()
		s.bytesSinceIdx = 0
	}
	s.bytesSinceIdx += size
	s.size = pos + size
	s.next = h.LastOffset() + 1
}

// addTimeEntry adds a time-index entry if the maximum timestamp grew since
// the last one. Called at index points and at roll/Close.
func (s *segment) addTimeEntry() {
	if s.maxTs > s.idxTs {
		s.timeIdx.add(s.maxTs, int32(s.maxTsOffset-s.base))
		s.idxTs = s.maxTs
	}
}

// contains reports whether offset is in the segment's range of offsets.
func (s *segment) contains(offset int64) bool { return offset >= s.base && offset < s.next }
