package serde_test

import (
	"bytes"
	"errors"
	"math"
	"reflect"
	"testing"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/runnel-io/runnel/streams/serde"
)

// fuzzDecoder feeds arbitrary bytes to s.Decode. A failure must wrap
// ErrDecode (and happen exactly when valid says the input is bad, if valid
// is set); a success must round-trip: the value, encoded after a prefix,
// decodes to an equal value, and with exact the encoding is the input.
func fuzzDecoder[T any](f *testing.F, s serde.Serde[T], valid func([]byte) bool, equal func(a, b T) bool, exact bool, seeds ...[]byte) {
	f.Helper()
	for _, seed := range seeds {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		v, err := s.Decode(b)
		if valid != nil && valid(b) != (err == nil) {
			t.Fatalf("Decode(%x): err = %v, want valid = %v", b, err, valid(b))
		}
		if err != nil {
			if !errors.Is(err, serde.ErrDecode) {
				t.Fatalf("Decode(%x): %v does not wrap ErrDecode", b, err)
			}
			return
		}
		prefix := []byte{0xde, 0xad}
		out, err := s.Encode(append([]byte(nil), prefix...), v)
		if err != nil {
			t.Fatalf("Encode(Decode(%x)): %v", b, err)
		}
		if !bytes.Equal(out[:len(prefix)], prefix) {
			t.Fatalf("Encode overwrote dst: %x", out)
		}
		out = out[len(prefix):]
		if exact && !bytes.Equal(out, b) {
			t.Fatalf("Encode(Decode(%x)) = %x", b, out)
		}
		back, err := s.Decode(out)
		if err != nil || !equal(back, v) {
			t.Fatalf("Decode(Encode(%v)) = %v, %v", v, back, err)
		}
	})
}

func same[T comparable](a, b T) bool { return a == b }

func length(n int) func([]byte) bool {
	return func(b []byte) bool { return len(b) == n }
}

func FuzzBytes(f *testing.F) {
	fuzzDecoder(f, serde.Bytes, nil, bytes.Equal, true, []byte{}, []byte("abc"), []byte{0, 0xff})
}

func FuzzString(f *testing.F) {
	fuzzDecoder(f, serde.String, nil, same[string], true, []byte{}, []byte("héllo"), []byte{0xff, 0xfe})
}

func FuzzInt64(f *testing.F) {
	fuzzDecoder(f, serde.Int64, length(8), same[int64], true,
		[]byte{}, []byte{1, 2, 3}, make([]byte, 8), bytes.Repeat([]byte{0xff}, 8), make([]byte, 9))
}

func FuzzInt32(f *testing.F) {
	fuzzDecoder(f, serde.Int32, length(4), same[int32], true,
		[]byte{}, []byte{1, 2, 3}, make([]byte, 4), []byte{0x80, 0, 0, 0}, make([]byte, 8))
}

// FuzzFloat64 cannot ask for exact bytes: any NaN comes back as Java's
// canonical NaN.
func FuzzFloat64(f *testing.F) {
	equal := func(a, b float64) bool {
		return math.Float64bits(a) == math.Float64bits(b) || math.IsNaN(a) && math.IsNaN(b)
	}
	fuzzDecoder(f, serde.Float64, length(8), equal, false,
		[]byte{}, make([]byte, 4), []byte{0x7f, 0xf8, 0, 0, 0, 0, 0, 1}, []byte{0xff, 0xf0, 0, 0, 0, 0, 0, 0}, []byte{0x3f, 0xf8, 0, 0, 0, 0, 0, 0})
}

func FuzzBool(f *testing.F) {
	valid := func(b []byte) bool { return len(b) == 1 && b[0] <= 1 }
	fuzzDecoder(f, serde.Bool, valid, same[bool], true, []byte{}, []byte{0}, []byte{1}, []byte{2}, []byte{1, 1})
}

func FuzzJSON(f *testing.F) {
	fuzzDecoder(f, serde.JSON[order](), nil, func(a, b order) bool { return reflect.DeepEqual(a, b) }, false,
		[]byte(`{"id":"o-1","qty":3,"price":9.99,"tags":["a"],"stock":{"s":1},"note":"n","extra":{"k":[1,"x",null,true]}}`),
		[]byte(`{}`), []byte(`null`), []byte(`{"tags":[]}`), []byte(`{"qty":1e3}`), []byte(`{"ID":"x","id":"y"}`),
		[]byte(`{"id":"\ud800"}`), []byte("{\"id\":\"\xff\"}"), []byte(`{`), []byte(``), []byte(`[1]`))
}

func FuzzProto(f *testing.F) {
	seed, _ := structpb.NewStruct(map[string]any{"a": 1.5, "b": []any{"x", true, nil}, "c": map[string]any{"d": "e"}})
	seedBytes, _ := proto.Marshal(seed)
	fuzzDecoder(f, structSerde(), nil, func(a, b *structpb.Struct) bool { return proto.Equal(a, b) }, false,
		seedBytes, []byte{}, []byte{0x0a}, []byte{0x0a, 0x02, 0x0a, 0x00}, []byte{0xff, 0xff, 0xff}, []byte{0x50, 0x01})
}
