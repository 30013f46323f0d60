package batch

import (
	"fmt"
	"sync"
)

// Record is one record of a v2 batch, as it is on the wire (KIP-98). Its
// offset is the batch's BaseOffset + OffsetDelta and its timestamp the
// batch's FirstTimestamp + TimestampDelta (or MaxTimestamp for
// LogAppendTime batches).
//
// A Record filled by [ForEachRecord] is reused for every record of the batch
// and its slices alias the batch or a pooled decompression buffer: copy what
// must outlive the callback.
type Record struct {
	Attributes     int8 // unused by Kafka so far
	TimestampDelta int64
	OffsetDelta    int32
	Key, Value     []byte // nil = null; empty but non-nil = zero length
	Headers        []RecordHeader
}

// RecordHeader is one record header. Kafka requires the key (a UTF-8
// string, not checked here) and allows a null value.
type RecordHeader struct {
	Key   []byte // never nil
	Value []byte // nil = null
}

// minRecordSize is the smallest encoded record: a one-byte length, then
// attributes, timestamp delta, offset delta, key length, value length and
// header count of one byte each.
const minRecordSize = 7

// recordIter walks the records of a batch, checking each record's bounds
// exactly. It does not allocate unless asked for headers.
type recordIter struct {
	data      []byte // records not read yet
	n         int32  // records the batch claims
	i         int32  // records read
	lastDelta int32  // the batch's LastOffsetDelta
	prevDelta int32  // previous record's offset delta, -1 before the first
}

func newRecordIter(data []byte, h *Header) recordIter {
	return recordIter{data: data, n: h.NumRecords, lastDelta: h.LastOffsetDelta, prevDelta: -1}
}

// more reports whether the batch claims more records.
func (it *recordIter) more() bool { return it.i < it.n }

// next parses the next record into r; with headers false, r.Headers is left
// empty and header bytes are only checked. Offset deltas must increase and
// stay within the batch's LastOffsetDelta; compaction may leave gaps.
func (it *recordIter) next(r *Record, headers bool) error {
	if len(it.data) == 0 {
		return fmt.Errorf("%w: batch claims %d records, holds %d", ErrRecordCount, it.n, it.i)
	}
	rest, err := parseRecord(it.data, r, headers)
	if err != nil {
		return fmt.Errorf("%w (record %d)", err, it.i)
	}
	if r.OffsetDelta <= it.prevDelta || r.OffsetDelta > it.lastDelta {
		return fmt.Errorf("%w: record %d has offset delta %d after %d (last offset delta %d)",
			ErrOffsetDeltas, it.i, r.OffsetDelta, it.prevDelta, it.lastDelta)
	}
	it.prevDelta = r.OffsetDelta
	it.data = rest
	it.i++
	return nil
}

// finish checks that no bytes follow the last claimed record.
func (it *recordIter) finish() error {
	if len(it.data) != 0 {
		return fmt.Errorf("%w: %d bytes after the %d claimed records", ErrRecordCount, len(it.data), it.n)
	}
	return nil
}

// parseRecord reads the record at the start of b into r and returns the bytes
// after it. The record's length prefix must cover its fields exactly.
func parseRecord(b []byte, r *Record, headers bool) (rest []byte, err error) {
	length, n := varint32(b)
	if n <= 0 || length < 0 || int(length) > len(b)-n {
		return nil, fmt.Errorf("%w: bad record length", ErrCorrupt)
	}
	body := b[n : n+int(length)]
	rest = b[n+int(length):]

	if len(body) == 0 {
		return nil, fmt.Errorf("%w: empty record", ErrCorrupt)
	}
	r.Attributes = int8(body[0])
	body = body[1:]
	if r.TimestampDelta, n = varint64(body); n <= 0 {
		return nil, fmt.Errorf("%w: bad timestamp delta", ErrCorrupt)
	}
	body = body[n:]
	if r.OffsetDelta, n = varint32(body); n <= 0 {
		return nil, fmt.Errorf("%w: bad offset delta", ErrCorrupt)
	}
	body = body[n:]
	if r.Key, body, err = varBytes(body, "key"); err != nil {
		return nil, err
	}
	if r.Value, body, err = varBytes(body, "value"); err != nil {
		return nil, err
	}
	count, n := varint32(body)
	if n <= 0 || count < 0 {
		return nil, fmt.Errorf("%w: bad header count", ErrCorrupt)
	}
	body = body[n:]
	r.Headers = r.Headers[:0]
	for range count {
		// Every header takes at least two bytes, so a huge count runs out
		// of bytes after a few iterations.
		var k, v []byte
		if k, body, err = varBytes(body, "header key"); err != nil {
			return nil, err
		}
		if k == nil {
			return nil, fmt.Errorf("%w: null header key", ErrCorrupt)
		}
		if v, body, err = varBytes(body, "header value"); err != nil {
			return nil, err
		}
		if headers {
			r.Headers = append(r.Headers, RecordHeader{Key: k, Value: v})
		}
	}
	if len(body) != 0 {
		return nil, fmt.Errorf("%w: %d bytes left inside record", ErrCorrupt, len(body))
	}
	return rest, nil
}

// varBytes reads a varint length and that many bytes; length -1 is null.
func varBytes(b []byte, what string) (v, rest []byte, err error) {
	l, n := varint32(b)
	if n <= 0 || l < -1 || int(l) > len(b)-n {
		return nil, nil, fmt.Errorf("%w: bad %s length", ErrCorrupt, what)
	}
	if l == -1 {
		return nil, b[n:], nil
	}
	end := n + int(l)
	return b[n:end:end], b[end:], nil
}

// varint32 decodes a zigzag varint of at most 5 bytes, as Kafka encodes
// record fields. n is 0 if b is too short and -1 if the encoding is too long
// or overflows 32 bits.
func varint32(b []byte) (v int32, n int) {
	var u uint32
	for i := 0; i < 5; i++ {
		if i >= len(b) {
			return 0, 0
		}
		c := b[i]
		if i == 4 && c > 0x0f {
			return 0, -1
		}
		u |= uint32(c&0x7f) << (7 * i)
		if c < 0x80 {
			return int32(u>>1) ^ -int32(u&1), i + 1
		}
	}
	return 0, -1
}

// varint64 is varint32 for 64-bit fields (at most 10 bytes).
func varint64(b []byte) (v int64, n int) {
	var u uint64
	for i := 0; i < 10; i++ {
		if i >= len(b) {
			return 0, 0
		}
		c := b[i]
		if i == 9 && c > 0x01 {
			return 0, -1
		}
		u |= uint64(c&0x7f) << (7 * i)
		if c < 0x80 {
			return int64(u>>1) ^ -int64(u&1), i + 1
		}
	}
	return 0, -1
}

// iterState is what one ForEachRecord call borrows: the decompression buffer
// and the Record handed to the callback.
type iterState struct {
	buf []byte
	rec Record
}

var iterPool = sync.Pool{New: func() any { return new(iterState) }}

// maxPooledBuf is the largest decompression buffer kept in the pool; a
// larger one is left to the garbage collector so that one huge batch does
// not pin its memory.
const maxPooledBuf = 16 << 20

func putIterState(s *iterState) {
	s.rec = Record{Headers: s.rec.Headers[:0]}
	clear(s.rec.Headers[:cap(s.rec.Headers)]) // drop references into old buffers
	if cap(s.buf) > maxPooledBuf {
		s.buf = nil
	}
	s.buf = s.buf[:0]
	iterPool.Put(s)
}

// ForEachRecord calls fn for every record of the batch b, in order,
// decompressing the records first when the batch is compressed (into a
// pooled buffer, at most maxDecompressed bytes; maxDecompressed <= 0 means
// DefaultMaxDecompressed).
//
// b must be exactly one whole batch, as for [Validate]. ForEachRecord does
// not check the CRC; it checks every record's structure and that the batch
// holds exactly NumRecords records, with offset deltas increasing within
// LastOffsetDelta (gaps, as compaction leaves them, are allowed). It calls fn
// for the records before a malformed one, so a caller that must not act on a
// bad batch validates it first.
//
// The *Record is the same for every call and its slices alias b or the
// pooled buffer: they are valid only until fn returns. If fn returns an
// error, iteration stops and ForEachRecord returns that error unwrapped.
// Apart from the pooled state, ForEachRecord does not allocate.
func ForEachRecord(b []byte, maxDecompressed int, fn func(r *Record) error) error {
	h, err := parseWhole(b)
	if err != nil {
		return err
	}
	if err := checkCodec(&h); err != nil {
		return err
	}
	if h.NumRecords < 0 {
		return fmt.Errorf("%w: negative record count %d", ErrRecordCount, h.NumRecords)
	}
	st := iterPool.Get().(*iterState)
	defer putIterState(st)
	data := b[HeaderSize:]
	if c := h.Codec(); c != CodecNone && len(data) > 0 {
		st.buf, err = Decompress(st.buf[:0], c, data, maxDecompressed)
		if err != nil {
			return err
		}
		data = st.buf
	}
	it := newRecordIter(data, &h)
	for it.more() {
		if err := it.next(&st.rec, true); err != nil {
			return err
		}
		if err := fn(&st.rec); err != nil {
			return err
		}
	}
	return it.finish()
}

// parseWhole parses the header of b and checks that b is exactly that batch.
func parseWhole(b []byte) (Header, error) {
	if len(b) > offMagic {
		if err := checkMagic(int8(b[offMagic])); err != nil {
			return Header{Magic: int8(b[offMagic])}, err
		}
	}
	h, err := ParseHeader(b)
	if err != nil {
		return h, err
	}
	switch size := h.Size(); {
	case len(b) < size:
		return h, fmt.Errorf("%w: %d of %d bytes", ErrShort, len(b), size)
	case len(b) > size:
		return h, fmt.Errorf("%w: %d bytes after the batch", ErrLength, len(b)-size)
	}
	return h, nil
}

// checkCodec checks that the batch's codec is one Kafka has.
func checkCodec(h *Header) error {
	if h.Codec() > CodecZstd {
		return fmt.Errorf("%w: %d", ErrCodec, h.Codec())
	}
	return nil
}
