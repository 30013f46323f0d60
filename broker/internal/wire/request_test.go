package wire_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/runnel-io/runnel/broker/internal/wire"
)

// header encodes a request header by hand: key, version, correlation id,
// then the client id (length -1 for null; a negative n other than -1 is
// written as is), then rest (tags and body).
func header(key, version int16, clientID string, rest ...byte) []byte {
	b := binary.BigEndian.AppendUint16(nil, uint16(key))
	b = binary.BigEndian.AppendUint16(b, uint16(version))
	b = binary.BigEndian.AppendUint32(b, 0xc0ffee)
	if clientID == "\x00null" {
		b = binary.BigEndian.AppendUint16(b, 0xffff)
	} else {
		b = binary.BigEndian.AppendUint16(b, uint16(len(clientID)))
		b = append(b, clientID...)
	}
	return append(b, rest...)
}

const null = "\x00null"

func ptr(s string) *string { return &s }

func TestParseRequestHeader(t *testing.T) {
	const (
		metadata    = 3
		apiVersions = 18
	)
	tests := []struct {
		name     string
		frame    []byte
		want     wire.RequestHeader
		body     string
		err      error
		noHeader bool // the error comes before the header is known
	}{
		{name: "v1, null client id", frame: header(metadata, 1, null, 'b', 'o', 'd', 'y'),
			want: wire.RequestHeader{APIKey: 3, APIVersion: 1}, body: "body"},
		{name: "v1, client id", frame: header(metadata, 1, "cli", 'b'),
			want: wire.RequestHeader{APIKey: 3, APIVersion: 1, ClientID: ptr("cli")}, body: "b"},
		{name: "v1, empty client id", frame: header(metadata, 1, "", 'b'),
			want: wire.RequestHeader{APIKey: 3, APIVersion: 1, ClientID: ptr("")}, body: "b"},
		{name: "v2, null client id", frame: header(metadata, 12, null, 0, 'b'),
			want: wire.RequestHeader{APIKey: 3, APIVersion: 12}, body: "b"},
		{name: "v2, client id, tags skipped", frame: header(metadata, 12, "cli", 2, 0, 1, 'x', 5, 2, 'y', 'y', 'b'),
			want: wire.RequestHeader{APIKey: 3, APIVersion: 12, ClientID: ptr("cli")}, body: "b"},
		{name: "v2, tag longer than frame", frame: header(metadata, 12, "cli", 1, 0, 9, 'x'),
			want: wire.RequestHeader{APIKey: 3, APIVersion: 12, ClientID: ptr("cli")}, err: wire.ErrMalformedHeader},
		{name: "v2, no tags", frame: header(metadata, 12, "cli"),
			want: wire.RequestHeader{APIKey: 3, APIVersion: 12, ClientID: ptr("cli")}, err: wire.ErrMalformedHeader},
		{name: "v2, tag count overlong varint", frame: header(metadata, 12, "cli", 0xff, 0xff, 0xff, 0xff, 0xff, 0x01),
			want: wire.RequestHeader{APIKey: 3, APIVersion: 12, ClientID: ptr("cli")}, err: wire.ErrMalformedHeader},
		{name: "ApiVersions v3 is flexible", frame: header(apiVersions, 3, "cli", 0),
			want: wire.RequestHeader{APIKey: 18, APIVersion: 3, ClientID: ptr("cli")}, body: ""},
		{name: "ApiVersions v2 is not", frame: header(apiVersions, 2, "cli"),
			want: wire.RequestHeader{APIKey: 18, APIVersion: 2, ClientID: ptr("cli")}, body: ""},
		{name: "ApiVersions from the future", frame: header(apiVersions, 999, "cli", 1, 7, 1, 0, 'f', 'u', 't'),
			want: wire.RequestHeader{APIKey: 18, APIVersion: 999, ClientID: ptr("cli")}, err: wire.ErrUnsupportedVersion},
		{name: "ApiVersions from the future, odd header", frame: header(apiVersions, 999, "cli", 0xff),
			want: wire.RequestHeader{APIKey: 18, APIVersion: 999, ClientID: ptr("cli")}, err: wire.ErrUnsupportedVersion},
		{name: "ApiVersions v-1", frame: header(apiVersions, -1, null),
			want: wire.RequestHeader{APIKey: 18, APIVersion: -1}, err: wire.ErrUnsupportedVersion},
		{name: "Produce from the future", frame: header(0, 999, "cli", 0),
			want: wire.RequestHeader{APIKey: 0, APIVersion: 999, ClientID: ptr("cli")}, err: wire.ErrUnsupportedVersion},
		{name: "Produce v-1", frame: header(0, -1, "cli"),
			want: wire.RequestHeader{APIKey: 0, APIVersion: -1, ClientID: ptr("cli")}, err: wire.ErrUnsupportedVersion},
		{name: "unknown key", frame: header(10000, 0, "cli", 'x'),
			want: wire.RequestHeader{APIKey: 10000, ClientID: ptr("cli")}, err: wire.ErrUnknownAPIKey},
		{name: "negative key", frame: header(-1, 0, "cli"),
			want: wire.RequestHeader{APIKey: -1, ClientID: ptr("cli")}, err: wire.ErrUnknownAPIKey},
		{name: "unknown key, bad client id", frame: header(10000, 0, "")[:9],
			want: wire.RequestHeader{APIKey: 10000}, err: wire.ErrUnknownAPIKey},
		{name: "ControlledShutdown v0 has no client id", frame: header(7, 0, "", 0, 0, 0, 1)[:8+4],
			want: wire.RequestHeader{APIKey: 7}, body: "\x00\x00\x00\x00"},
		{name: "client id length -2", frame: append(header(metadata, 1, "")[:8], 0xff, 0xfe, 'x'),
			want: wire.RequestHeader{APIKey: 3, APIVersion: 1}, err: wire.ErrMalformedHeader},
		{name: "client id past frame", frame: append(header(metadata, 1, "")[:8], 0, 5, 'x'),
			want: wire.RequestHeader{APIKey: 3, APIVersion: 1}, err: wire.ErrMalformedHeader},
		{name: "half a client id length", frame: header(metadata, 1, "")[:9],
			want: wire.RequestHeader{APIKey: 3, APIVersion: 1}, err: wire.ErrMalformedHeader},
		{name: "no client id", frame: header(metadata, 1, "")[:8],
			want: wire.RequestHeader{APIKey: 3, APIVersion: 1}, err: wire.ErrMalformedHeader},
		{name: "7 bytes", frame: header(metadata, 1, "")[:7], err: wire.ErrMalformedHeader, noHeader: true},
		{name: "empty", frame: nil, err: wire.ErrMalformedHeader, noHeader: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h, body, err := wire.ParseRequestHeader(tt.frame)
			if !errors.Is(err, tt.err) || (tt.err == nil) != (err == nil) {
				t.Fatalf("err %v, want %v", err, tt.err)
			}
			if err != nil && body != nil {
				t.Fatalf("body %q with error", body)
			}
			if err == nil && string(body) != tt.body {
				t.Fatalf("body %q, want %q", body, tt.body)
			}
			if !tt.noHeader {
				tt.want.CorrelationID = 0xc0ffee
			}
			if h.APIKey != tt.want.APIKey || h.APIVersion != tt.want.APIVersion || h.CorrelationID != tt.want.CorrelationID ||
				(h.ClientID == nil) != (tt.want.ClientID == nil) || h.ClientID != nil && *h.ClientID != *tt.want.ClientID {
				t.Fatalf("header %+v (client id %v), want %+v", h, str(h.ClientID), tt.want)
			}
		})
	}
}

func str(s *string) string {
	if s == nil {
		return "<nil>"
	}
	return fmt.Sprintf("%q", *s)
}

// The client id is a copy: reusing the frame does not change it.
func TestParseRequestHeaderCopiesClientID(t *testing.T) {
	f := header(3, 1, "abc")
	h, _, err := wire.ParseRequestHeader(f)
	if err != nil {
		t.Fatal(err)
	}
	copy(f[10:], "xyz")
	if *h.ClientID != "abc" {
		t.Fatalf("client id changed to %q", *h.ClientID)
	}
}

// Every request kmsg knows, at its lowest and highest version and the two
// versions around its switch to flexible headers, with and
// without a client id, encoded by franz-go's own request formatter, comes
// out of ReadFrame, ParseRequestHeader and DecodeRequest as it went in; one
// byte less or more in the body is refused.
func TestRoundTripEveryRequest(t *testing.T) {
	n := 0
	for key := range maxKey() + 1 {
		proto := kmsg.RequestForKey(key)
		if proto == nil {
			continue
		}
		// The lowest and highest versions, and the two around the
		// switch to flexible headers.
		versions := []int16{0, proto.MaxVersion()}
		for v := int16(0); v <= proto.MaxVersion(); v++ {
			if proto.SetVersion(v); proto.IsFlexible() {
				versions = append(versions, max(v-1, 0), v)
				break
			}
		}
		slices.Sort(versions)
		for _, version := range slices.Compact(versions) {
			for _, clientID := range []*string{nil, ptr("runnel-test-client")} {
				name := fmt.Sprintf("%s/v%d/client-id-%v", kmsg.NameForKey(key), version, clientID != nil)
				t.Run(name, func(t *testing.T) {
					roundTrip(t, key, version, clientID)
				})
				n++
			}
		}
	}
	t.Logf("%d round trips up to key %d", n, maxKey())
}

func roundTrip(t *testing.T, key, version int16, clientID *string) {
	req := kmsg.RequestForKey(key)
	fill(req)
	req.SetVersion(version)
	var opts []kmsg.RequestFormatterOpt
	if clientID != nil {
		opts = append(opts, kmsg.FormatterClientID(*clientID))
	}
	formatter := kmsg.NewRequestFormatter(opts...)
	format := func(req kmsg.Request) []byte {
		if key == 7 && version == 0 {
			// kmsg's formatter stops after the v0 header it writes for
			// ControlledShutdown v0, without the body or the size.
			dst, start := wire.BeginFrame(nil)
			dst = binary.BigEndian.AppendUint16(dst, 7)
			dst = binary.BigEndian.AppendUint16(dst, 0)
			dst = binary.BigEndian.AppendUint32(dst, 4242)
			dst = req.AppendTo(dst)
			wire.EndFrame(dst, start)
			return dst
		}
		return formatter.AppendRequest(nil, req, 4242)
	}
	enc := format(req)

	frame, err := wire.ReadFrame(bytes.NewReader(enc), nil, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	h, body, err := wire.ParseRequestHeader(frame)
	if err != nil {
		t.Fatal(err)
	}
	wantClientID := clientID
	if key == 7 && version == 0 {
		wantClientID = nil // header v0
	}
	if h.APIKey != key || h.APIVersion != version || h.CorrelationID != 4242 || str(h.ClientID) != str(wantClientID) {
		t.Fatalf("header %+v, client id %s", h, str(h.ClientID))
	}
	got, err := wire.DecodeRequest(h, body)
	if err != nil {
		t.Fatal(err)
	}
	if got.Key() != key || got.GetVersion() != version {
		t.Fatalf("decoded key %d v%d", got.Key(), got.GetVersion())
	}
	if re := format(got); !bytes.Equal(re, enc) {
		t.Fatalf("re-encoding differs:\n got %x\nwant %x", re, enc)
	}
	// Strings are copies, even those the trailing-bytes probe aliased:
	// reusing the frame leaves them alone.
	before := strings(got)
	for i := range frame {
		frame[i] = 'Z'
	}
	if after := strings(got); !slices.Equal(before, after) {
		t.Fatalf("strings changed with the frame:\n%q\n%q", before, after)
	}
	frame, err = wire.ReadFrame(bytes.NewReader(enc), nil, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	h, body, _ = wire.ParseRequestHeader(frame)

	if len(body) > 0 {
		if _, err := wire.DecodeRequest(h, body[:len(body)-1]); !errors.Is(err, wire.ErrMalformedRequest) {
			t.Fatalf("short body: %v", err)
		}
	}
	for _, extra := range [][]byte{{0}, {0xff, 0xff, 0xff, 0xff}} {
		if _, err := wire.DecodeRequest(h, slices.Concat(body, extra)); !errors.Is(err, wire.ErrMalformedRequest) {
			t.Fatalf("body with %d extra bytes: %v", len(extra), err)
		}
	}
}

func TestDecodeRequestErrors(t *testing.T) {
	if _, err := wire.DecodeRequest(wire.RequestHeader{APIKey: 10000}, nil); !errors.Is(err, wire.ErrUnknownAPIKey) {
		t.Fatalf("unknown key: %v", err)
	}
	for _, v := range []int16{-1, 999} {
		if _, err := wire.DecodeRequest(wire.RequestHeader{APIKey: 18, APIVersion: v}, nil); !errors.Is(err, wire.ErrUnsupportedVersion) {
			t.Fatalf("ApiVersions v%d: %v", v, err)
		}
	}
	// An empty body is a whole request for versions without fields...
	if req, err := wire.DecodeRequest(wire.RequestHeader{APIKey: 18, APIVersion: 0}, nil); err != nil || req.Key() != 18 {
		t.Fatalf("ApiVersions v0: %v", err)
	}
	// ...and short for the others.
	if _, err := wire.DecodeRequest(wire.RequestHeader{APIKey: 0, APIVersion: 9}, nil); !errors.Is(err, wire.ErrMalformedRequest) {
		t.Fatalf("empty Produce v9: %v", err)
	}
}

// Produce records alias the frame (the broker must copy what it keeps).
func TestDecodeRequestAliasesBytes(t *testing.T) {
	req := kmsg.NewPtrProduceRequest()
	req.SetVersion(9)
	tp := kmsg.NewProduceRequestTopic()
	tp.Topic = "t"
	pp := kmsg.NewProduceRequestTopicPartition()
	pp.Records = []byte("record batch bytes")
	tp.Partitions = append(tp.Partitions, pp)
	req.Topics = append(req.Topics, tp)
	enc := kmsg.NewRequestFormatter().AppendRequest(nil, req, 1)
	h, body, err := wire.ParseRequestHeader(enc[4:])
	if err != nil {
		t.Fatal(err)
	}
	got, err := wire.DecodeRequest(h, body)
	if err != nil {
		t.Fatal(err)
	}
	recs := got.(*kmsg.ProduceRequest).Topics[0].Partitions[0].Records
	i := bytes.Index(body, []byte("record batch bytes"))
	if i < 0 || &recs[0] != &body[i] {
		t.Fatal("records do not alias the body")
	}
}

func BenchmarkDecodeProduce(b *testing.B) {
	req := kmsg.NewPtrProduceRequest()
	req.SetVersion(9)
	tp := kmsg.NewProduceRequestTopic()
	tp.Topic = "orders"
	pp := kmsg.NewProduceRequestTopicPartition()
	pp.Records = make([]byte, 16<<10)
	tp.Partitions = append(tp.Partitions, pp)
	req.Topics = append(req.Topics, tp)
	enc := kmsg.NewRequestFormatter(kmsg.FormatterClientID("bench")).AppendRequest(nil, req, 1)
	b.ReportAllocs()
	for b.Loop() {
		h, body, err := wire.ParseRequestHeader(enc[4:])
		if err != nil {
			b.Fatal(err)
		}
		if _, err := wire.DecodeRequest(h, body); err != nil {
			b.Fatal(err)
		}
	}
}

// strings returns every string in the request v, in field order.
func strings(v any) []string {
	var out []string
	var walk func(reflect.Value)
	walk = func(v reflect.Value) {
		switch v.Kind() {
		case reflect.String:
			out = append(out, v.String())
		case reflect.Pointer, reflect.Interface:
			if !v.IsNil() {
				walk(v.Elem())
			}
		case reflect.Struct:
			for i := range v.NumField() {
				if v.Type().Field(i).IsExported() {
					walk(v.Field(i))
				}
			}
		case reflect.Slice, reflect.Array:
			for i := range v.Len() {
				walk(v.Index(i))
			}
		}
	}
	walk(reflect.ValueOf(v))
	return out
}
