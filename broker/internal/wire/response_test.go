package wire_test

import (
	"bytes"
	"encoding/binary"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/runnel-io/runnel/broker/internal/wire"
)

// Every response kmsg knows, at its lowest and highest version, is framed
// with the right header and reads back with kmsg.
func TestAppendResponseEveryKey(t *testing.T) {
	for key := range maxKey() + 1 {
		proto := kmsg.RequestForKey(key)
		if proto == nil {
			continue
		}
		for _, version := range []int16{0, proto.MaxVersion()} {
			req := kmsg.RequestForKey(key)
			req.SetVersion(version)
			resp := req.ResponseKind()
			fill(resp)
			out := wire.AppendResponse([]byte("prev"), 77, req, resp)
			if string(out[:4]) != "prev" {
				t.Fatal("dst overwritten")
			}
			frame, err := wire.ReadFrame(bytes.NewReader(out[4:]), nil, 1<<20)
			if err != nil {
				t.Fatalf("%s v%d: %v", kmsg.NameForKey(key), version, err)
			}
			if id := int32(binary.BigEndian.Uint32(frame)); id != 77 {
				t.Fatalf("correlation id %d", id)
			}
			body := frame[4:]
			flexibleHeader := req.IsFlexible() && key != 18
			if flexibleHeader {
				if body[0] != 0 {
					t.Fatalf("%s v%d: header tags %d", kmsg.NameForKey(key), version, body[0])
				}
				body = body[1:]
			}
			back := kmsg.ResponseForKey(key)
			back.SetVersion(version)
			if err := back.ReadFrom(body); err != nil {
				t.Fatalf("%s v%d: %v", kmsg.NameForKey(key), version, err)
			}
			if !bytes.Equal(back.AppendTo(nil), body) {
				t.Fatalf("%s v%d: response does not read back", kmsg.NameForKey(key), version)
			}
		}
	}
}

// ApiVersions v3+ is flexible, yet its response header is v0.
func TestApiVersionsResponseHeaderIsV0(t *testing.T) {
	req := kmsg.NewPtrApiVersionsRequest()
	req.SetVersion(4)
	resp := req.ResponseKind().(*kmsg.ApiVersionsResponse)
	out := wire.AppendResponse(nil, 1, req, resp)
	// size, correlation id, then the body right away: error code 0, then a
	// compact array length.
	if got := out[8:11]; !bytes.Equal(got, []byte{0, 0, 1}) {
		t.Fatalf("body starts %x", got)
	}
}

// The answer to a future ApiVersions is what franz-go expects: header v0,
// a v0 body with UNSUPPORTED_VERSION and the key list.
func TestAppendApiVersionsUnsupported(t *testing.T) {
	keys := []kmsg.ApiVersionsResponseApiKey{{ApiKey: 18, MinVersion: 0, MaxVersion: 4}, {ApiKey: 3, MinVersion: 0, MaxVersion: 12}}
	out := wire.AppendApiVersionsUnsupported(nil, 99, keys)
	frame, err := wire.ReadFrame(bytes.NewReader(out), nil, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	if id := int32(binary.BigEndian.Uint32(frame)); id != 99 {
		t.Fatalf("correlation id %d", id)
	}
	resp := kmsg.NewPtrApiVersionsResponse()
	resp.SetVersion(0)
	if err := resp.ReadFrom(frame[4:]); err != nil {
		t.Fatal(err)
	}
	if resp.ErrorCode != 35 || len(resp.ApiKeys) != 2 || resp.ApiKeys[0].MaxVersion != 4 || resp.ApiKeys[1].ApiKey != 3 {
		t.Fatalf("response %+v", resp)
	}
	if want := 4 + 4 + 2 + 4 + 2*6; len(out) != want {
		t.Fatalf("%d bytes, want %d", len(out), want)
	}
}

func TestAppendResponseHeader(t *testing.T) {
	if got := wire.AppendResponseHeader(nil, 0x01020304, false); !bytes.Equal(got, []byte{1, 2, 3, 4}) {
		t.Fatalf("v0 %x", got)
	}
	if got := wire.AppendResponseHeader(nil, -1, true); !bytes.Equal(got, []byte{0xff, 0xff, 0xff, 0xff, 0}) {
		t.Fatalf("v1 %x", got)
	}
}
