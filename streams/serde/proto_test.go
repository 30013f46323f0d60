package serde_test

import (
	"bytes"
	"encoding/hex"
	"errors"
	"testing"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/runnel-io/runnel/streams/serde"
)

type stringValue = wrapperspb.StringValue

func stringValueSerde() serde.Serde[*stringValue] {
	return serde.Proto(func() *stringValue { return new(stringValue) })
}

func structSerde() serde.Serde[*structpb.Struct] {
	return serde.Proto(func() *structpb.Struct { return new(structpb.Struct) })
}

func TestProtoWireFormat(t *testing.T) {
	s := stringValueSerde()
	out, err := s.Encode([]byte("pre"), wrapperspb.String("hi"))
	if err != nil {
		t.Fatal(err)
	}
	// Field 1, wire type 2 (0x0a), length 2, "hi": what Java's toByteArray writes.
	if got := hex.EncodeToString(out); got != hex.EncodeToString([]byte("pre"))+"0a026869" {
		t.Fatalf("Encode = %s", got)
	}
	back, err := s.Decode(out[3:])
	if err != nil || back.GetValue() != "hi" {
		t.Fatalf("Decode = %v, %v", back, err)
	}
	// An empty non-nil input is an empty message, not a null.
	empty, err := s.Decode([]byte{})
	if err != nil || empty == nil || empty.GetValue() != "" {
		t.Fatalf("Decode(empty) = %v, %v; want an empty message", empty, err)
	}
}

func TestProtoRoundTripStruct(t *testing.T) {
	in, err := structpb.NewStruct(map[string]any{
		"store": "s-7", "qty": 12.0, "tags": []any{"a", true, nil}, "nested": map[string]any{"x": 1.0},
	})
	if err != nil {
		t.Fatal(err)
	}
	s := structSerde()
	out, err := s.Encode(nil, in)
	if err != nil {
		t.Fatal(err)
	}
	back, err := s.Decode(out)
	if err != nil || !proto.Equal(back, in) {
		t.Fatalf("Decode(Encode(v)) = %v, %v; want %v", back, err, in)
	}
}

// TestProtoDeterministic: map fields are written in key order, so equal
// messages give equal bytes and can serve as keys of a state store.
func TestProtoDeterministic(t *testing.T) {
	fields := map[string]any{}
	for _, k := range []string{"k1", "k2", "k3", "k4", "k5", "k6", "k7", "k8"} {
		fields[k] = k
	}
	s := structSerde()
	var first []byte
	for i := range 20 {
		m, err := structpb.NewStruct(fields) // a fresh map each time
		if err != nil {
			t.Fatal(err)
		}
		out, err := s.Encode(nil, m)
		if err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			first = out
		} else if !bytes.Equal(out, first) {
			t.Fatalf("encoding %d differs from the first", i)
		}
	}
}

func TestProtoDecodeErrors(t *testing.T) {
	s := stringValueSerde()
	for _, h := range []string{"0a", "0a05", "ff", "0a02ff00"} { // truncated, bad tag, invalid UTF-8
		b, _ := hex.DecodeString(h)
		v, err := s.Decode(b)
		if !errors.Is(err, serde.ErrDecode) || v != nil {
			t.Errorf("Decode(%s) = %v, %v; want nil and an error wrapping ErrDecode", h, v, err)
		}
	}
	_, err := s.Decode([]byte{0x0a})
	const prefix = "serde: decode proto google.protobuf.StringValue: "
	if err == nil || len(err.Error()) <= len(prefix) || err.Error()[:len(prefix)] != prefix {
		t.Errorf("err = %v, want it to start with %q", err, prefix)
	}
}

func TestProtoDecodeCopies(t *testing.T) {
	s := serde.Proto(func() *wrapperspb.BytesValue { return new(wrapperspb.BytesValue) })
	in, _ := s.Encode(nil, wrapperspb.Bytes([]byte("abc")))
	v, err := s.Decode(in)
	if err != nil {
		t.Fatal(err)
	}
	for i := range in {
		in[i] = 0
	}
	if string(v.GetValue()) != "abc" {
		t.Fatalf("decoded bytes follow their input: %q", v.GetValue())
	}
}
