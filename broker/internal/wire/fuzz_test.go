package wire_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"math/rand/v2"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/runnel-io/runnel/broker/internal/wire"
)

// FuzzReadFrame reads frames from arbitrary bytes: no panic, a frame is
// exactly as long as its size says and never over the limit, and the memory
// used follows the bytes that arrived, not the size claimed.
func FuzzReadFrame(f *testing.F) {
	f.Add(frame(real, "hello"), int32(100), uint8(0))
	f.Add(frame(1<<30, "claims a gigabyte"), int32(1<<31-1), uint8(1))
	f.Add(frame(-5, ""), int32(100), uint8(64))
	f.Add(append(frame(real, "a"), frame(real, "bc")...), int32(2), uint8(3))
	f.Fuzz(func(t *testing.T, in []byte, maxSize int32, bufCap uint8) {
		r := bytes.NewReader(in)
		buf := make([]byte, 0, int(bufCap))
		var got []byte
		var err error
		allocated := bytesAllocated(func() { got, err = wire.ReadFrame(r, buf, maxSize) })
		if allocated > uint64(4*len(in)+256<<10) {
			t.Fatalf("allocated %d bytes reading %d", allocated, len(in))
		}
		if err != nil {
			if got != nil {
				t.Fatal("frame with an error")
			}
			for _, e := range []error{wire.ErrNegativeSize, wire.ErrFrameTooLarge, io.EOF, io.ErrUnexpectedEOF} {
				if errors.Is(err, e) {
					return
				}
			}
			t.Fatalf("unexpected error %v", err)
		}
		size := int32(binary.BigEndian.Uint32(in))
		if int32(len(got)) != size || size > maxSize || !bytes.Equal(got, in[4:4+size]) {
			t.Fatalf("frame of %d bytes for size %d, max %d", len(got), size, maxSize)
		}
		if cap(buf) >= 4 && int(size) <= cap(buf) && size > 0 && &got[0] != &buf[:1][0] {
			t.Fatal("frame that fits not read into buf")
		}
	})
}

// FuzzParseRequest parses arbitrary frames as requests: no panic, errors
// that wrap the package's sentinels, a decoded request that re-encodes to
// the body it came from (a parse is exact), and allocation bounded by the
// frame's length.
func FuzzParseRequest(f *testing.F) {
	for key := range maxKey() + 1 {
		proto := kmsg.RequestForKey(key)
		if proto == nil {
			continue
		}
		for _, v := range []int16{0, proto.MaxVersion()} {
			req := kmsg.RequestForKey(key)
			fill(req)
			req.SetVersion(v)
			if key == 7 && v == 0 {
				continue // kmsg's formatter cannot write it
			}
			enc := kmsg.NewRequestFormatter(kmsg.FormatterClientID("fuzz")).AppendRequest(nil, req, 1)
			f.Add(enc[4:])
		}
	}
	f.Add(header(18, 999, "cli", 0))
	f.Fuzz(func(t *testing.T, frame []byte) {
		var (
			h    wire.RequestHeader
			body []byte
			req  kmsg.Request
			err  error
		)
		allocated := bytesAllocated(func() {
			h, body, err = wire.ParseRequestHeader(frame)
			if err == nil {
				req, err = wire.DecodeRequest(h, body)
			}
		})
		// kmsg sizes every array by the bytes left, at most one element
		// per byte, but an element is a struct of up to a few hundred
		// bytes, and the trailing-bytes probe decodes a second time.
		if limit := uint64(1024*len(frame) + 64<<10); allocated > limit {
			t.Fatalf("allocated %d bytes for a %d-byte frame", allocated, len(frame))
		}
		if err != nil {
			for _, e := range []error{wire.ErrMalformedHeader, wire.ErrUnknownAPIKey, wire.ErrUnsupportedVersion, wire.ErrMalformedRequest} {
				if errors.Is(err, e) {
					return
				}
			}
			t.Fatalf("unexpected error %v", err)
		}
		if req.Key() != h.APIKey || req.GetVersion() != h.APIVersion {
			t.Fatalf("request %d v%d for header %+v", req.Key(), req.GetVersion(), h)
		}
		if enc := req.AppendTo(nil); len(enc) > len(body) {
			// kmsg may write a decoded request shorter than it read
			// (non-minimal varints, null read as empty), never longer.
			t.Fatalf("%s v%d: %d bytes decoded re-encode to %d", kmsg.NameForKey(h.APIKey), h.APIVersion, len(body), len(enc))
		}
	})
}

// FuzzAppendFetchResponse frames random fetch responses (every version,
// aborted transaction lists null, empty or not, records small and spliced)
// by hand and checks them byte for byte against kmsg.
func FuzzAppendFetchResponse(f *testing.F) {
	f.Add(uint64(1), uint64(2), uint8(4))
	f.Add(uint64(3), uint64(4), uint8(16))
	f.Fuzz(func(t *testing.T, s1, s2 uint64, v uint8) {
		version := 4 + int16(v%13)
		resp := randomFetchResponse(rand.New(rand.NewPCG(s1, s2)), version)
		req := kmsg.NewPtrFetchRequest()
		req.SetVersion(version)
		want := wire.AppendResponse(nil, 7, req, resp)
		_, bufs := wire.AppendFetchResponse(nil, 7, resp, nil)
		var got bytes.Buffer
		for _, b := range bufs {
			got.Write(b)
		}
		if !bytes.Equal(got.Bytes(), want) {
			t.Fatalf("v%d: hand-framed response differs from kmsg's", version)
		}
	})
}
