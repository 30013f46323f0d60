package batch

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"slices"
	"sync"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/s2"
	"github.com/klauspost/compress/zstd"
	"github.com/pierrec/lz4/v4"
)

// DefaultMaxDecompressed is the output limit used when a caller passes a
// limit <= 0 to Decompress, ForEachRecord or ValidateOptions.
const DefaultMaxDecompressed = 64 << 20

// Decompress appends the decompression of src, the records section of a
// batch compressed with codec c, to dst and returns the extended slice.
// CodecNone appends src unchanged.
//
// At most limit bytes are appended (limit <= 0 means DefaultMaxDecompressed):
// more gives ErrTooLarge. Memory follows the bytes actually produced, never
// a size the data claims: the output buffer grows by doubling up to the
// limit (zstd: the limit plus one 128 KiB block), and a snappy block's
// claimed length is checked against the limit and against what its size
// can hold before anything is allocated. lz4 frames also take pooled block
// buffers of up to 4 MiB each (two when the pool is empty). Data that does
// not decode gives ErrDecompress. On error the returned slice is nil; dst's
// spare capacity may have been written.
//
// Snappy is accepted raw and in the xerial framing the Java client writes.
// lz4 is the frame format (Kafka's magic-2 lz4); zstd may hold several
// frames, as may gzip members, as the codecs' own readers accept.
func Decompress(dst []byte, c Codec, src []byte, limit int) ([]byte, error) {
	if limit <= 0 {
		limit = DefaultMaxDecompressed
	}
	var (
		out []byte
		err error
	)
	switch c {
	case CodecNone:
		if len(src) > limit {
			return nil, fmt.Errorf("%w: %d bytes, limit %d", ErrTooLarge, len(src), limit)
		}
		return append(dst, src...), nil
	case CodecGzip:
		out, err = decompressGzip(dst, src, limit)
	case CodecSnappy:
		out, err = decompressSnappy(dst, src, limit)
	case CodecLZ4:
		out, err = decompressLZ4(dst, src, limit)
	case CodecZstd:
		out, err = decompressZstd(dst, src, limit)
	default:
		return nil, fmt.Errorf("%w: %d", ErrCodec, c)
	}
	if err != nil {
		if errors.Is(err, ErrTooLarge) {
			return nil, err
		}
		return nil, fmt.Errorf("%w: %s: %w", ErrDecompress, c, err)
	}
	return out, nil
}

func tooLarge(limit int) error {
	return fmt.Errorf("%w: more than %d bytes", ErrTooLarge, limit)
}

// readBounded appends everything r yields to dst, failing with ErrTooLarge
// once more than limit bytes have come. dst grows by doubling, from a size
// guessed from the compressed length, and never past limit+1 new bytes: the
// memory used follows the bytes actually produced, never a claimed size.
func readBounded(dst []byte, r io.Reader, srcLen, limit int) ([]byte, error) {
	start := len(dst)
	end := start + limit + 1 // one byte past the limit detects overflow
	if cap(dst)-start < 512 {
		dst = slices.Grow(dst, min(max(4*srcLen, 4<<10), limit+1))
	}
	zeros := 0
	for {
		if len(dst) == cap(dst) {
			if len(dst) >= end {
				return nil, tooLarge(limit)
			}
			dst = slices.Grow(dst, min(len(dst)-start, end-len(dst)))
		}
		n, err := r.Read(dst[len(dst):min(cap(dst), end)])
		dst = dst[:len(dst)+n]
		if len(dst) > start+limit {
			return nil, tooLarge(limit)
		}
		switch {
		case err == io.EOF:
			return dst, nil
		case err != nil:
			return nil, err
		case n == 0:
			if zeros++; zeros > 100 {
				return nil, io.ErrNoProgress
			}
		}
	}
}

// gzip: klauspost's reader, pooled with its source.

type gzipDecoder struct {
	r   gzip.Reader
	src bytes.Reader
}

var gzipPool = sync.Pool{New: func() any { return new(gzipDecoder) }}

func decompressGzip(dst, src []byte, limit int) ([]byte, error) {
	d := gzipPool.Get().(*gzipDecoder)
	defer func() {
		d.src.Reset(nil)
		gzipPool.Put(d)
	}()
	d.src.Reset(src)
	if err := d.r.Reset(&d.src); err != nil {
		return nil, err
	}
	return readBounded(dst, &d.r, len(src), limit)
}

// lz4: pierrec's frame reader (one goroutine, pooled block buffers).

type lz4Decoder struct {
	r   *lz4.Reader
	src bytes.Reader
}

var lz4Pool = sync.Pool{New: func() any { return &lz4Decoder{r: lz4.NewReader(nil)} }}

func decompressLZ4(dst, src []byte, limit int) ([]byte, error) {
	d := lz4Pool.Get().(*lz4Decoder)
	defer func() {
		d.r.Reset(nil)
		d.src.Reset(nil)
		lz4Pool.Put(d)
	}()
	d.src.Reset(src)
	d.r.Reset(&d.src)
	return readBounded(dst, d.r, len(src), limit)
}

// zstd: klauspost's DecodeAll, with WithDecodeAllCapLimit: it decodes into
// the spare capacity of dst and fails rather than grow it, so the output is
// bounded by the capacity given, whatever sizes or windows the frame
// declares. (DecodeAll keeps its history in dst, so a large declared window,
// 2 MiB from a streaming compressor at the default level, 128 MiB at level
// 22, costs nothing.)
//
// The room allowed starts at the frame's declared content size, or a guess
// from the compressed size when it has none, and doubles up to the limit,
// decoding again each time the room runs out. The capacity given is the
// room plus one block (at most 128 KiB): a block never decodes to more, so
// a failure with a block's worth of capacity to spare is corrupt data, and
// one without it means the output passed the room.

var zstdPool = sync.Pool{New: func() any {
	d, err := zstd.NewReader(nil,
		zstd.WithDecoderConcurrency(1),
		zstd.WithDecoderLowmem(true),
		zstd.WithDecodeAllCapLimit(true),
		zstd.WithDecoderMaxMemory(1<<62), // the capacity is the bound
	)
	if err != nil {
		panic(err) // only bad options fail, and these are constant
	}
	return d
}}

const (
	// zstdGuessRatio sizes the first room for a frame without a content size.
	zstdGuessRatio = 8
	// zstdMaxBlock is the most one zstd block decodes to (the format's
	// Block_Maximum_Size), plus the slack the decoder wants.
	zstdMaxBlock = 128<<10 + 64
)

func decompressZstd(dst, src []byte, limit int) ([]byte, error) {
	room := min(limit, max(zstdGuessRatio*len(src), 64<<10))
	var h zstd.Header
	if h.Decode(src) == nil && h.HasFCS {
		if h.FrameContentSize > uint64(limit) {
			return nil, tooLarge(limit)
		}
		room = int(h.FrameContentSize) // later frames, if any, grow it
	}
	d := zstdPool.Get().(*zstd.Decoder)
	defer zstdPool.Put(d)
	start := len(dst)
	for {
		capacity := room + zstdMaxBlock
		if cap(dst)-start < capacity {
			dst = slices.Grow(dst, capacity)
		}
		out, err := d.DecodeAll(src, dst[:start:start+capacity])
		done := max(len(out)-start, 0) // on error, the blocks before the failing one
		switch {
		case err == nil && done <= limit:
			return out, nil
		case err == nil:
			return nil, tooLarge(limit)
		case !errors.Is(err, zstd.ErrDecoderSizeExceeded) && done+zstdMaxBlock <= capacity:
			return nil, err // failed with a block's room to spare: corrupt
		case room >= limit || done > limit:
			return nil, tooLarge(limit)
		}
		room = min(2*room, limit)
	}
}

// snappy: raw blocks or xerial framing, decoded with s2 (a superset of
// snappy). A block states its decoded length up front; the claim is checked
// against the limit and against the most a snappy block of that size can
// expand to before anything is allocated.

// xerialMagic starts the framing of the Java client's snappy stream: the
// magic, then a version and a compatible version, both int32.
var xerialMagic = []byte{0x82, 'S', 'N', 'A', 'P', 'P', 'Y', 0}

const xerialHeaderLen = 16

// maxSnappyExpansion bounds how many bytes one compressed byte can decode to
// in snappy: the densest element, a 3-byte copy, yields 64 bytes (21.3x).
// A claimed length beyond this is a lie and is rejected unread.
const maxSnappyExpansion = 22

func decompressSnappy(dst, src []byte, limit int) ([]byte, error) {
	if len(src) >= xerialHeaderLen && bytes.HasPrefix(src, xerialMagic) {
		return decompressXerial(dst, src[xerialHeaderLen:], limit)
	}
	return snappyBlock(dst, src, limit)
}

// snappyClaim returns the decoded length a raw snappy block states, after
// checking it against room, the bytes that may still be appended.
func snappyClaim(block []byte, room int) (int, error) {
	l, err := s2.DecodedLen(block)
	if err != nil {
		return 0, err
	}
	if l > room {
		return 0, errTooLargeClaim
	}
	if l > maxSnappyExpansion*len(block)+8 {
		return 0, fmt.Errorf("block of %d bytes claims %d decoded bytes", len(block), l)
	}
	return l, nil
}

// errTooLargeClaim is turned into the caller's ErrTooLarge.
var errTooLargeClaim = errors.New("claim over limit")

// snappyBlock appends the decoding of one raw snappy block to dst, where
// room is how many more bytes may be appended.
func snappyBlock(dst, block []byte, room int) ([]byte, error) {
	l, err := snappyClaim(block, room)
	if err == errTooLargeClaim {
		return nil, tooLarge(room)
	}
	if err != nil {
		return nil, err
	}
	n := len(dst)
	dst = slices.Grow(dst, l)[:n+l]
	if _, err := s2.Decode(dst[n:n+l], block); err != nil {
		return nil, err
	}
	return dst, nil
}

// decompressXerial decodes the blocks after the xerial header: each a
// big-endian int32 length and a raw snappy block. A first pass reads only
// the block lengths and the decoded lengths they claim, so the claims are
// checked against the limit and dst grows once.
func decompressXerial(dst, src []byte, limit int) ([]byte, error) {
	total := 0
	for rest := src; len(rest) > 0; {
		block, next, err := xerialBlock(rest)
		if err != nil {
			return nil, err
		}
		l, err := snappyClaim(block, limit-total)
		if err == errTooLargeClaim {
			return nil, tooLarge(limit)
		}
		if err != nil {
			return nil, err
		}
		total += l
		rest = next
	}
	dst = slices.Grow(dst, total)
	for len(src) > 0 {
		block, next, _ := xerialBlock(src)
		var err error
		if dst, err = snappyBlock(dst, block, total); err != nil {
			return nil, err
		}
		src = next
	}
	return dst, nil
}

// xerialBlock splits the first length-prefixed block off src.
func xerialBlock(src []byte) (block, rest []byte, err error) {
	if len(src) < 4 {
		return nil, nil, errors.New("xerial: truncated block length")
	}
	size := binary.BigEndian.Uint32(src)
	src = src[4:]
	if uint64(size) > uint64(len(src)) {
		return nil, nil, errors.New("xerial: block longer than the data")
	}
	return src[:size], src[size:], nil
}
