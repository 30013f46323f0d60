package batch

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"slices"
	"sync"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/s2"
	"github.com/klauspost/compress/zstd"
	"github.com/pierrec/lz4/v4"
)

// This file builds batches: the log cleaner rewrites a batch with fewer
// records. kmsg can encode records and batches, but it allocates per record
// and does not compress; the cleaner runs over whole logs, so it appends into
// reused buffers here.

// AppendRecord appends the v2 encoding of r to dst, with r.TimestampDelta
// and r.OffsetDelta as given.
func AppendRecord(dst []byte, r *Record) []byte {
	n := 1 + varintLen(r.TimestampDelta) + varintLen(int64(r.OffsetDelta)) +
		bytesLen(r.Key) + bytesLen(r.Value) + varintLen(int64(len(r.Headers)))
	for i := range r.Headers {
		n += bytesLen(r.Headers[i].Key) + bytesLen(r.Headers[i].Value)
	}
	dst = binary.AppendVarint(dst, int64(n))
	dst = append(dst, byte(r.Attributes))
	dst = binary.AppendVarint(dst, r.TimestampDelta)
	dst = binary.AppendVarint(dst, int64(r.OffsetDelta))
	dst = appendBytes(dst, r.Key)
	dst = appendBytes(dst, r.Value)
	dst = binary.AppendVarint(dst, int64(len(r.Headers)))
	for i := range r.Headers {
		dst = appendBytes(dst, r.Headers[i].Key)
		dst = appendBytes(dst, r.Headers[i].Value)
	}
	return dst
}

func varintLen(v int64) int {
	var b [binary.MaxVarintLen64]byte
	return binary.PutVarint(b[:], v)
}

// bytesLen is the encoded size of a nullable byte string.
func bytesLen(b []byte) int {
	if b == nil {
		return varintLen(-1)
	}
	return varintLen(int64(len(b))) + len(b)
}

func appendBytes(dst, b []byte) []byte {
	if b == nil {
		return binary.AppendVarint(dst, -1)
	}
	return append(binary.AppendVarint(dst, int64(len(b))), b...)
}

// AppendBatch appends a whole v2 batch to dst: h's fields (Length, Magic and
// CRC are computed; NumRecords is the caller's) followed by records, the
// records section already compressed with h's codec.
func AppendBatch(dst []byte, h *Header, records []byte) []byte {
	start := len(dst)
	var hdr [HeaderSize]byte
	be := binary.BigEndian
	be.PutUint64(hdr[offBaseOffset:], uint64(h.BaseOffset))
	be.PutUint32(hdr[offLength:], uint32(HeaderSize-LengthOverhead+len(records)))
	be.PutUint32(hdr[offLeaderEpoch:], uint32(h.PartitionLeaderEpoch))
	hdr[offMagic] = 2
	be.PutUint16(hdr[offAttributes:], uint16(h.Attributes))
	be.PutUint32(hdr[offLastOffsetDelta:], uint32(h.LastOffsetDelta))
	be.PutUint64(hdr[offFirstTimestamp:], uint64(h.FirstTimestamp))
	be.PutUint64(hdr[offMaxTimestamp:], uint64(h.MaxTimestamp))
	be.PutUint64(hdr[offProducerID:], uint64(h.ProducerID))
	be.PutUint16(hdr[offProducerEpoch:], uint16(h.ProducerEpoch))
	be.PutUint32(hdr[offBaseSequence:], uint32(h.BaseSequence))
	be.PutUint32(hdr[offNumRecords:], uint32(h.NumRecords))
	dst = append(append(dst, hdr[:]...), records...)
	be.PutUint32(dst[start+offCRC:], ComputeCRC(dst[start:]))
	return dst
}

// Compress appends src, a batch's uncompressed records section, compressed
// with c to dst. Snappy is written in the xerial framing, as the Java client
// and Kafka's broker write it; every client reads it.
func Compress(dst []byte, c Codec, src []byte) ([]byte, error) {
	switch c {
	case CodecNone:
		return append(dst, src...), nil
	case CodecGzip:
		w := gzipWriters.Get().(*gzip.Writer)
		defer gzipWriters.Put(w)
		return compressStream(dst, w, src)
	case CodecSnappy:
		return appendXerial(dst, src), nil
	case CodecLZ4:
		w := lz4Writers.Get().(*lz4.Writer)
		defer lz4Writers.Put(w)
		return compressStream(dst, w, src)
	case CodecZstd:
		return zstdEncoder().EncodeAll(src, dst), nil
	}
	return nil, fmt.Errorf("%w: %d", ErrCodec, c)
}

// streamWriter is a reusable compressing writer (gzip's and lz4's).
type streamWriter interface {
	io.WriteCloser
	Reset(io.Writer)
}

// compressStream appends src compressed by w to dst.
func compressStream(dst []byte, w streamWriter, src []byte) ([]byte, error) {
	buf := bytes.NewBuffer(dst)
	w.Reset(buf)
	if _, err := w.Write(src); err != nil {
		return nil, err
	}
	if err := w.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

var (
	gzipWriters = sync.Pool{New: func() any { return gzip.NewWriter(nil) }}
	lz4Writers  = sync.Pool{New: func() any { return lz4.NewWriter(nil) }}
	// zstdEncoder is shared: EncodeAll may be called concurrently.
	zstdEncoder = sync.OnceValue(func() *zstd.Encoder {
		e, err := zstd.NewWriter(nil, zstd.WithEncoderConcurrency(1))
		if err != nil {
			panic(err) // only bad options fail, and these are constant
		}
		return e
	})
)

// xerialBlockSize is the block size of the Java client's SnappyOutputStream.
const xerialBlockSize = 32 << 10

func appendXerial(dst, src []byte) []byte {
	dst = append(dst, xerialMagic...)
	dst = binary.BigEndian.AppendUint32(dst, 1) // version
	dst = binary.BigEndian.AppendUint32(dst, 1) // compatible version
	for len(src) > 0 {
		n := min(xerialBlockSize, len(src))
		lenAt := len(dst)
		dst = append(dst, 0, 0, 0, 0)
		at := len(dst)
		dst = slices.Grow(dst, s2.MaxEncodedLen(n))
		enc := s2.EncodeSnappy(dst[at:cap(dst)], src[:n])
		dst = dst[:at+len(enc)]
		binary.BigEndian.PutUint32(dst[lenAt:], uint32(len(dst)-lenAt-4))
		src = src[n:]
	}
	return dst
}
