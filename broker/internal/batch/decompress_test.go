package batch_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"testing"

	"github.com/klauspost/compress/s2"
	"github.com/klauspost/compress/zstd"
	"github.com/pierrec/lz4/v4"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/runnel-io/runnel/broker/internal/batch"
)

func TestDecompressRoundTrip(t *testing.T) {
	inputs := map[string][]byte{
		"small":  []byte("hello, runnel"),
		"random": randomBytes(200_000),
		"text":   bytes.Repeat([]byte("the quick brown fox jumps over the lazy dog. "), 5000),
	}
	for _, c := range codecs {
		for name, in := range inputs {
			t.Run(c.name+"/"+name, func(t *testing.T) {
				comp := compress(t, c.codec, c.xer, in)
				out, err := batch.Decompress([]byte("prefix:"), c.codec, comp, len(in))
				if err != nil {
					t.Fatal(err)
				}
				if !bytes.HasPrefix(out, []byte("prefix:")) || !bytes.Equal(out[7:], in) {
					t.Fatalf("round trip differs (%d bytes, want %d)", len(out)-7, len(in))
				}
				// One byte less is over the limit.
				if _, err := batch.Decompress(nil, c.codec, comp, len(in)-1); !errors.Is(err, batch.ErrTooLarge) {
					t.Fatalf("limit-1: %v, want ErrTooLarge", err)
				}
			})
		}
	}
}

// randomBytes is deterministic incompressible data.
func randomBytes(n int) []byte {
	out := make([]byte, n)
	x := uint64(0x9E3779B97F4A7C15)
	for i := range out {
		x ^= x << 13
		x ^= x >> 7
		x ^= x << 17
		out[i] = byte(x)
	}
	return out
}

func TestDecompressXerialBlocks(t *testing.T) {
	in := bytes.Repeat([]byte("0123456789abcdef"), 4000)
	comp := xerial(in, 1000)
	out, err := batch.Decompress(nil, batch.CodecSnappy, comp, len(in))
	if err != nil || !bytes.Equal(out, in) {
		t.Fatalf("xerial: %v", err)
	}
	if _, err := batch.Decompress(nil, batch.CodecSnappy, comp, len(in)-1); !errors.Is(err, batch.ErrTooLarge) {
		t.Fatalf("xerial limit: %v", err)
	}
	for _, cut := range []int{17, 18, 19, 20, len(comp) - 1} {
		if _, err := batch.Decompress(nil, batch.CodecSnappy, comp[:cut], len(in)); !errors.Is(err, batch.ErrDecompress) {
			t.Fatalf("xerial cut at %d: %v, want ErrDecompress", cut, err)
		}
	}
	// A header and no blocks is an empty stream, as the Java reader sees it.
	if out, err := batch.Decompress(nil, batch.CodecSnappy, comp[:16], 10); err != nil || len(out) != 0 {
		t.Fatalf("empty xerial: %q %v", out, err)
	}
}

func TestDecompressErrors(t *testing.T) {
	if _, err := batch.Decompress(nil, batch.Codec(5), []byte("x"), 10); !errors.Is(err, batch.ErrCodec) {
		t.Fatalf("codec 5: %v", err)
	}
	if _, err := batch.Decompress(nil, batch.CodecNone, []byte("12345"), 4); !errors.Is(err, batch.ErrTooLarge) {
		t.Fatalf("none over limit: %v", err)
	}
	for _, c := range codecs[1:] {
		if _, err := batch.Decompress(nil, c.codec, []byte("garbage garbage garbage"), 1000); !errors.Is(err, batch.ErrDecompress) {
			t.Errorf("%s: %v, want ErrDecompress", c.name, err)
		}
		// Empty input is an empty stream to some codecs (the record walk
		// then finds no records); to none is it more than that.
		for _, in := range [][]byte{nil, {0}} {
			if out, err := batch.Decompress(nil, c.codec, in, 1000); len(out) != 0 || err != nil && !errors.Is(err, batch.ErrDecompress) {
				t.Errorf("%s %q: %q, %v", c.name, in, out, err)
			}
		}
		// Truncated streams.
		comp := compress(t, c.codec, c.xer, randomBytes(10_000))
		if _, err := batch.Decompress(nil, c.codec, comp[:len(comp)/2], 1<<20); !errors.Is(err, batch.ErrDecompress) {
			t.Errorf("%s truncated: %v, want ErrDecompress", c.name, err)
		}
	}
}

// checkAlloc fails the test if n bytes allocated are over max; under the
// race detector, which allocates for itself, it only logs.
func checkAlloc(t *testing.T, what string, n, max uint64) {
	t.Helper()
	if n > max && !raceEnabled {
		t.Fatalf("%s: allocated %d bytes, want at most %d", what, n, max)
	}
	t.Logf("%s: allocated %d bytes", what, n)
}

// allocated runs f and returns the bytes it allocated.
func allocated(f func()) uint64 {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// A small payload that expands to far more than the limit stops at the
// limit, allocating in proportion to the limit, not to the claimed or real
// output size.
func TestDecompressionBombs(t *testing.T) {
	const bombSize = 16 << 20
	const limit = 512 << 10
	zeros := make([]byte, bombSize)
	for _, c := range codecs[1:] {
		t.Run(c.name, func(t *testing.T) {
			comp := compress(t, c.codec, c.xer, zeros)
			t.Logf("%d bytes expand to %d", len(comp), bombSize)
			var err error
			n := allocated(func() { _, err = batch.Decompress(nil, c.codec, comp, limit) })
			if !errors.Is(err, batch.ErrTooLarge) {
				t.Fatalf("got %v, want ErrTooLarge", err)
			}
			// 2x the limit for buffer growth, plus lz4's block buffers (two
			// of 4 MiB when its pool is empty).
			checkAlloc(t, "bomb", n, 2*limit+9<<20)

			// The same bomb inside a batch of a compacted topic.
			b := buildRaw(t, batch.CodecNone, false, comp, 1, func(rb *kmsg.RecordBatch) { rb.Attributes = int16(c.codec) })
			if _, err := batch.Validate(b, batch.ValidateOptions{RequireKeys: true, MaxDecompressed: limit}); !errors.Is(err, batch.ErrTooLarge) {
				t.Fatalf("Validate: %v, want ErrTooLarge", err)
			}
			if err := batch.ForEachRecord(b, limit, func(*batch.Record) error { return nil }); !errors.Is(err, batch.ErrTooLarge) {
				t.Fatalf("ForEachRecord: %v, want ErrTooLarge", err)
			}
		})
	}
}

// Sizes claimed in headers are checked before anything is allocated.
func TestDecompressLyingHeaders(t *testing.T) {
	// A raw snappy block claiming 1 GiB, and one claiming 10 MB from 10 bytes.
	for _, claim := range []uint64{1 << 30, 10 << 20} {
		block := binary.AppendUvarint(nil, claim)
		block = append(block, 0, 'x', 0, 'x', 0, 'x')
		for _, src := range [][]byte{block, xerialFrame(block)} {
			var err error
			n := allocated(func() { _, err = batch.Decompress(nil, batch.CodecSnappy, src, 64<<20) })
			if !errors.Is(err, batch.ErrTooLarge) && !errors.Is(err, batch.ErrDecompress) {
				t.Fatalf("snappy claim %d: %v", claim, err)
			}
			checkAlloc(t, fmt.Sprintf("snappy claim %d", claim), n, 64<<10)
		}
	}

	// A zstd frame declaring 1 GiB of content.
	frame := []byte{0x28, 0xb5, 0x2f, 0xfd, 0xe0} // magic; single segment, 8-byte content size
	frame = binary.LittleEndian.AppendUint64(frame, 1<<30)
	frame = append(frame, 0x01, 0x00, 0x00) // last raw block of 0 bytes
	var err error
	n := allocated(func() { _, err = batch.Decompress(nil, batch.CodecZstd, frame, 64<<20) })
	if !errors.Is(err, batch.ErrTooLarge) {
		t.Fatalf("zstd claim: %v", err)
	}
	checkAlloc(t, "zstd claim", n, 64<<10)

	// An lz4 frame declaring a 1 GiB content size (lz4 never allocates by it).
	var buf bytes.Buffer
	w := lz4.NewWriter(&buf)
	w.Apply(lz4.SizeOption(1 << 30))
	w.Write([]byte("tiny"))
	w.Close()
	n = allocated(func() { _, err = batch.Decompress(nil, batch.CodecLZ4, buf.Bytes(), 64<<20) })
	checkAlloc(t, "lz4 claim", n, 9<<20) // lz4's block buffers, see above
}

// A zstd frame may declare a window far larger than its content, as
// streaming compressors do (the Java client's: 2 MiB at the default level,
// 128 MiB at level 22). Only the content counts against the limit.
func TestZstdLargeWindow(t *testing.T) {
	in := bytes.Repeat([]byte("windows are not content. "), 400)
	var buf bytes.Buffer
	w, err := zstd.NewWriter(&buf, zstd.WithWindowSize(128<<20), zstd.WithEncoderConcurrency(1))
	if err != nil {
		t.Fatal(err)
	}
	w.Write(in)
	w.Flush() // a stream: the header goes out before the size is known
	w.Close()
	var h zstd.Header
	if err := h.Decode(buf.Bytes()); err != nil || h.HasFCS || h.WindowSize != 128<<20 {
		t.Fatalf("frame header %+v, %v", h, err)
	}
	var out []byte
	n := allocated(func() { out, err = batch.Decompress(nil, batch.CodecZstd, buf.Bytes(), len(in)) })
	if err != nil || !bytes.Equal(out, in) {
		t.Fatalf("decode: %v", err)
	}
	checkAlloc(t, "128 MiB window", n, 1<<20)
	if _, err := batch.Decompress(nil, batch.CodecZstd, buf.Bytes(), len(in)-1); !errors.Is(err, batch.ErrTooLarge) {
		t.Fatalf("limit-1: %v", err)
	}
	// Without a content size, the output buffer grows by decoding again:
	// a frame that expands far past the first guess still decodes.
	buf.Reset()
	w.Reset(&buf)
	big := make([]byte, 4<<20)
	w.Write(big)
	w.Flush()
	w.Close()
	if out, err := batch.Decompress(nil, batch.CodecZstd, buf.Bytes(), len(big)); err != nil || len(out) != len(big) {
		t.Fatalf("high ratio: %d bytes, %v", len(out), err)
	}
	// The same stream is a bomb for a smaller limit: refused, having
	// allocated the doubling rooms up to the limit, each with one block.
	const limit = 512 << 10
	n = allocated(func() { _, err = batch.Decompress(nil, batch.CodecZstd, buf.Bytes(), limit) })
	if !errors.Is(err, batch.ErrTooLarge) {
		t.Fatalf("stream bomb: %v", err)
	}
	checkAlloc(t, "stream bomb", n, 4*(limit+128<<10))
	// Corrupt data in the middle of the stream is corrupt, not too large.
	bad := append([]byte(nil), buf.Bytes()...)
	bad[len(bad)/2] ^= 0xff
	if _, err := batch.Decompress(nil, batch.CodecZstd, bad, len(big)); !errors.Is(err, batch.ErrDecompress) {
		t.Fatalf("corrupt stream: %v", err)
	}
}

func xerialFrame(block []byte) []byte {
	out := []byte{0x82, 'S', 'N', 'A', 'P', 'P', 'Y', 0, 0, 0, 0, 1, 0, 0, 0, 1}
	out = binary.BigEndian.AppendUint32(out, uint32(len(block)))
	return append(out, block...)
}

// The densest snappy encoding stays under the expansion bound that rejects
// lying length claims.
func TestSnappyExpansionBound(t *testing.T) {
	for _, n := range []int{1, 64, 1000, 1 << 20} {
		zeros := make([]byte, n)
		comp := s2.EncodeSnappy(nil, zeros)
		if _, err := batch.Decompress(nil, batch.CodecSnappy, comp, n); err != nil {
			t.Fatalf("%d zeros (%d compressed): %v", n, len(comp), err)
		}
		t.Logf("%d zeros: ratio %.1f", n, float64(n)/float64(len(comp)))
	}
}

// Pooled decoders are shared between goroutines with different limits.
func TestDecompressConcurrent(t *testing.T) {
	in := bytes.Repeat([]byte("concurrent "), 3000)
	comp := make([][]byte, len(codecs))
	for i, c := range codecs {
		comp[i] = compress(t, c.codec, c.xer, in)
	}
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 25 {
				ci := 1 + (g+i)%(len(codecs)-1)
				limit := len(in) - 1 + (g % 2)
				out, err := batch.Decompress(nil, codecs[ci].codec, comp[ci], limit)
				if g%2 == 1 && (err != nil || !bytes.Equal(out, in)) {
					t.Errorf("%s: %v", codecs[ci].name, err)
				}
				if g%2 == 0 && !errors.Is(err, batch.ErrTooLarge) {
					t.Errorf("%s: %v, want ErrTooLarge", codecs[ci].name, err)
				}
			}
		})
	}
	wg.Wait()
}

func ExampleDecompress() {
	comp := s2.EncodeSnappy(nil, []byte("hello"))
	out, err := batch.Decompress(nil, batch.CodecSnappy, comp, 1<<20)
	fmt.Println(string(out), err)
	_, err = batch.Decompress(nil, batch.CodecSnappy, comp, 4)
	fmt.Println(errors.Is(err, batch.ErrTooLarge))
	// Output:
	// hello <nil>
	// true
}
