package wire_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"testing"
	"testing/iotest"

	"github.com/runnel-io/runnel/broker/internal/wire"
)

// real asks frame for the body's own length.
const real = -999_999

// frame returns body behind a size prefix of n (the body's length if n is real).
func frame(n int32, body string) []byte {
	if n == real {
		n = int32(len(body))
	}
	return append(binary.BigEndian.AppendUint32(nil, uint32(n)), body...)
}

// countingReader counts the bytes read from it.
type countingReader struct {
	r io.Reader
	n int
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += n
	return n, err
}

func TestReadFrame(t *testing.T) {
	tests := []struct {
		name     string
		in       []byte
		max      int32
		want     string
		err      error
		consumed int // bytes read from the stream, -1: all
	}{
		{"frame", frame(real, "hello"), 100, "hello", nil, -1},
		{"empty frame", frame(real, ""), 100, "", nil, -1},
		{"exactly max", frame(real, "12345"), 5, "12345", nil, -1},
		{"over max", frame(real, "123456"), 5, "", wire.ErrFrameTooLarge, 4},
		{"negative", frame(-1, "abc"), 100, "", wire.ErrNegativeSize, 4},
		{"most negative", frame(-1<<31, "abc"), 100, "", wire.ErrNegativeSize, 4},
		{"huge claim", frame(1<<31-1, "abc"), 100 << 20, "", wire.ErrFrameTooLarge, 4},
		{"nothing", nil, 100, "", io.EOF, 0},
		{"half a size", []byte{0, 0}, 100, "", io.ErrUnexpectedEOF, 2},
		{"no body", frame(5, ""), 100, "", io.ErrUnexpectedEOF, 4},
		{"short body", frame(5, "abc"), 100, "", io.ErrUnexpectedEOF, 7},
		{"next frame left alone", append(frame(real, "one"), frame(real, "two")...), 100, "one", nil, 7},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, buf := range [][]byte{nil, make([]byte, 0, 2), make([]byte, 0, 64)} {
				cr := &countingReader{r: iotest.HalfReader(bytes.NewReader(tt.in))}
				got, err := wire.ReadFrame(cr, buf, tt.max)
				if !errors.Is(err, tt.err) || (tt.err == nil) != (err == nil) {
					t.Fatalf("err %v, want %v", err, tt.err)
				}
				if err == nil && string(got) != tt.want {
					t.Fatalf("frame %q, want %q", got, tt.want)
				}
				if err != nil && got != nil {
					t.Fatalf("frame %q returned with an error", got)
				}
				if want := tt.consumed; want >= 0 && cr.n != want || want < 0 && cr.n != len(tt.in) {
					t.Fatalf("read %d bytes of %d, want %d", cr.n, len(tt.in), want)
				}
			}
		})
	}
}

// An error from the reader comes back as is.
func TestReadFrameReaderError(t *testing.T) {
	boom := errors.New("boom")
	r := io.MultiReader(bytes.NewReader(frame(10, "abc")), iotest.ErrReader(boom))
	if _, err := wire.ReadFrame(r, nil, 100); err != boom {
		t.Fatalf("err %v, want boom", err)
	}
}

// A frame that fits is read into the caller's buffer; a connection that
// keeps passing the last frame back allocates only to grow.
func TestReadFrameReusesBuffer(t *testing.T) {
	buf := make([]byte, 0, 100)
	got, err := wire.ReadFrame(bytes.NewReader(frame(real, "hello")), buf, 100)
	if err != nil || &got[0] != &buf[:1][0] {
		t.Fatalf("frame not read into buf (%v)", err)
	}
	stream := bytes.Repeat(frame(real, "0123456789"), 100)
	r := bytes.NewReader(stream)
	allocs := testing.AllocsPerRun(99, func() {
		got, err = wire.ReadFrame(r, got, 1<<20)
		if err != nil || string(got) != "0123456789" {
			t.Fatalf("%q %v", got, err)
		}
	})
	if allocs != 0 {
		t.Fatalf("%v allocations per frame", allocs)
	}
}

// A large frame's buffer grows with the bytes that arrive: a client that
// claims 100 MiB and sends a few bytes costs little.
func TestReadFrameGrowsWithData(t *testing.T) {
	in := frame(100<<20, "just a few bytes")
	var err error
	allocated := bytesAllocated(func() { _, err = wire.ReadFrame(bytes.NewReader(in), nil, 100<<20) })
	if !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Fatalf("err %v", err)
	}
	if allocated > 256<<10 && !raceEnabled {
		t.Fatalf("allocated %d bytes for a frame cut short", allocated)
	}

	// And a real large frame arrives whole.
	body := bytes.Repeat([]byte("x"), 3<<20+7)
	got, err := wire.ReadFrame(iotest.OneByteReader(io.MultiReader(
		bytes.NewReader(binary.BigEndian.AppendUint32(nil, uint32(len(body)))), bytes.NewReader(body))), make([]byte, 0, 10), 100<<20)
	if err != nil || !bytes.Equal(got, body) {
		t.Fatalf("large frame: %d bytes, %v", len(got), err)
	}
}

func TestBeginEndFrame(t *testing.T) {
	dst := []byte("previous")
	dst, start := wire.BeginFrame(dst)
	dst = append(dst, "body"...)
	wire.EndFrame(dst, start)
	got, err := wire.ReadFrame(bytes.NewReader(dst[len("previous"):]), nil, 100)
	if err != nil || string(got) != "body" || string(dst[:8]) != "previous" {
		t.Fatalf("%q %v", got, err)
	}
}

func BenchmarkReadFrame(b *testing.B) {
	stream := bytes.Repeat(frame(real, string(make([]byte, 1000))), 1000)
	r := bytes.NewReader(stream)
	var buf []byte
	b.SetBytes(1004)
	b.ReportAllocs()
	for b.Loop() {
		if r.Len() == 0 {
			r.Reset(stream)
		}
		var err error
		if buf, err = wire.ReadFrame(r, buf, 1<<20); err != nil {
			b.Fatal(err)
		}
	}
}
