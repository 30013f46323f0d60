package serde_test

import (
	"bytes"
	"encoding/hex"
	"errors"
	"math"
	"testing"

	"github.com/runnel-io/runnel/streams/serde"
)

// checkBytes encodes v after a prefix, checks the prefix is kept and the rest
// is want (hex), then decodes it back to v.
func checkBytes[T comparable](t *testing.T, s serde.Serde[T], v T, want string) {
	t.Helper()
	prefix := []byte("pre")
	out, err := s.Encode(append([]byte(nil), prefix...), v)
	if err != nil {
		t.Fatalf("Encode(%v): %v", v, err)
	}
	if !bytes.HasPrefix(out, prefix) {
		t.Fatalf("Encode(%v) lost the bytes already in dst: %q", v, out)
	}
	if got := hex.EncodeToString(out[len(prefix):]); got != want {
		t.Fatalf("Encode(%v) = %s, want %s", v, got, want)
	}
	back, err := s.Decode(out[len(prefix):])
	if err != nil {
		t.Fatalf("Decode(%s): %v", want, err)
	}
	if back != v {
		t.Fatalf("Decode(Encode(%v)) = %v", v, back)
	}
}

// TestKafkaBytes pins the bytes Kafka's own serializers write for the same
// values (org.apache.kafka.common.serialization).
func TestKafkaBytes(t *testing.T) {
	checkBytes(t, serde.Int64, 0, "0000000000000000")
	checkBytes(t, serde.Int64, 1, "0000000000000001")
	checkBytes(t, serde.Int64, -1, "ffffffffffffffff")
	checkBytes(t, serde.Int64, math.MaxInt64, "7fffffffffffffff")
	checkBytes(t, serde.Int64, math.MinInt64, "8000000000000000")
	checkBytes(t, serde.Int64, 1<<40+258, "0000010000000102")
	checkBytes(t, serde.Int32, 0, "00000000")
	checkBytes(t, serde.Int32, -2, "fffffffe")
	checkBytes(t, serde.Int32, math.MaxInt32, "7fffffff")
	checkBytes(t, serde.Int32, math.MinInt32, "80000000")
	checkBytes(t, serde.Int32, 258, "00000102")
	checkBytes(t, serde.Float64, 1.5, "3ff8000000000000")
	checkBytes(t, serde.Float64, -2, "c000000000000000")
	checkBytes(t, serde.Float64, math.Inf(1), "7ff0000000000000")
	checkBytes(t, serde.Float64, math.Inf(-1), "fff0000000000000")
	checkBytes(t, serde.Float64, math.MaxFloat64, "7fefffffffffffff")
	checkBytes(t, serde.Float64, math.SmallestNonzeroFloat64, "0000000000000001")
	checkBytes(t, serde.Bool, true, "01")
	checkBytes(t, serde.Bool, false, "00")
	checkBytes(t, serde.String, "héllo", "68c3a96c6c6f")
	checkBytes(t, serde.String, "", "")
}

func TestFloat64SpecialValues(t *testing.T) {
	// Go's math.NaN() is 0x7ff8000000000001; Java's doubleToLongBits
	// writes every NaN as 0x7ff8000000000000, and so do we.
	for _, nan := range []float64{math.NaN(), math.Float64frombits(0xfff8000000000abc), math.Float64frombits(0x7ff0000000000001)} {
		out, err := serde.Float64.Encode(nil, nan)
		if err != nil {
			t.Fatal(err)
		}
		if got := hex.EncodeToString(out); got != "7ff8000000000000" {
			t.Errorf("Encode(NaN %x) = %s, want Java's canonical NaN", math.Float64bits(nan), got)
		}
	}
	// Any NaN a Java app wrote (raw bits) decodes to NaN.
	for _, h := range []string{"7ff8000000000000", "7ff0000000000001", "fff8000000000123"} {
		b, _ := hex.DecodeString(h)
		v, err := serde.Float64.Decode(b)
		if err != nil || !math.IsNaN(v) {
			t.Errorf("Decode(%s) = %v, %v; want NaN", h, v, err)
		}
	}
	// Negative zero keeps its sign.
	out, _ := serde.Float64.Encode(nil, math.Copysign(0, -1))
	if v, err := serde.Float64.Decode(out); err != nil || v != 0 || !math.Signbit(v) {
		t.Errorf("-0 came back as %v, %v", v, err)
	}
}

func TestDecodeWrongLength(t *testing.T) {
	tests := []struct {
		name string
		dec  func([]byte) error
		in   []byte
		msg  string
	}{
		{"int64 short", decodeErr(serde.Int64), []byte{1, 2, 3}, "serde: decode int64: want 8 bytes, got 3"},
		{"int64 long", decodeErr(serde.Int64), make([]byte, 9), "serde: decode int64: want 8 bytes, got 9"},
		{"int64 empty", decodeErr(serde.Int64), []byte{}, "serde: decode int64: want 8 bytes, got 0"},
		{"int32 short", decodeErr(serde.Int32), []byte{1}, "serde: decode int32: want 4 bytes, got 1"},
		{"int32 as int64", decodeErr(serde.Int32), make([]byte, 8), "serde: decode int32: want 4 bytes, got 8"},
		{"float64 short", decodeErr(serde.Float64), make([]byte, 4), "serde: decode float64: want 8 bytes, got 4"},
		{"bool empty", decodeErr(serde.Bool), []byte{}, "serde: decode bool: want 1 bytes, got 0"},
		{"bool long", decodeErr(serde.Bool), []byte{1, 0}, "serde: decode bool: want 1 bytes, got 2"},
		{"bool byte 2", decodeErr(serde.Bool), []byte{2}, "serde: decode bool: want byte 0x00 or 0x01, got 0x02"},
		{"bool byte ff", decodeErr(serde.Bool), []byte{0xff}, "serde: decode bool: want byte 0x00 or 0x01, got 0xff"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.dec(tt.in)
			if !errors.Is(err, serde.ErrDecode) {
				t.Fatalf("err = %v, want one wrapping ErrDecode", err)
			}
			if err.Error() != tt.msg {
				t.Fatalf("err = %q, want %q", err, tt.msg)
			}
		})
	}
}

func decodeErr[T any](s serde.Serde[T]) func([]byte) error {
	return func(b []byte) error {
		_, err := s.Decode(b)
		return err
	}
}

// TestDecodeNil checks the null convention for every serde: a nil input is
// a Kafka null and decodes to the zero value without error.
func TestDecodeNil(t *testing.T) {
	checkNil(t, "Bytes", serde.Bytes, func(v []byte) bool { return v == nil })
	checkNil(t, "String", serde.String, func(v string) bool { return v == "" })
	checkNil(t, "Int64", serde.Int64, func(v int64) bool { return v == 0 })
	checkNil(t, "Int32", serde.Int32, func(v int32) bool { return v == 0 })
	checkNil(t, "Float64", serde.Float64, func(v float64) bool { return v == 0 && !math.Signbit(v) })
	checkNil(t, "Bool", serde.Bool, func(v bool) bool { return !v })
	checkNil(t, "JSON", serde.JSON[order](), func(v order) bool { return v.ID == "" && v.Tags == nil && v.Note == nil })
	checkNil(t, "JSON pointer", serde.JSON[*order](), func(v *order) bool { return v == nil })
	checkNil(t, "Proto", stringValueSerde(), func(v *stringValue) bool { return v == nil })
	checkNil(t, "Func", serde.Func(
		func(dst []byte, v int) ([]byte, error) { return dst, nil },
		func(b []byte) (int, error) { return 0, errors.New("dec must not be called for a null") },
	), func(v int) bool { return v == 0 })
}

func checkNil[T any](t *testing.T, name string, s serde.Serde[T], isZero func(T) bool) {
	t.Helper()
	v, err := s.Decode(nil)
	if err != nil || !isZero(v) {
		t.Errorf("%s.Decode(nil) = %v, %v; want the zero value and no error", name, v, err)
	}
}

// TestEncodeEmptyIsNotNull: an empty value must not come out as nil, which a
// producer would send as a null.
func TestEncodeEmptyIsNotNull(t *testing.T) {
	checkNotNil(t, "String", serde.String, "")
	checkNotNil(t, "Bytes nil", serde.Bytes, nil)
	checkNotNil(t, "Bytes empty", serde.Bytes, []byte{})
	checkNotNil(t, "Proto empty", stringValueSerde(), &stringValue{})
	checkNotNil(t, "Func", serde.Func(
		func(dst []byte, v string) ([]byte, error) { return append(dst, v...), nil },
		func(b []byte) (string, error) { return string(b), nil },
	), "")
}

func checkNotNil[T any](t *testing.T, name string, s serde.Serde[T], v T) {
	t.Helper()
	out, err := s.Encode(nil, v)
	if err != nil || out == nil || len(out) != 0 {
		t.Errorf("%s.Encode(nil, empty) = %#v, %v; want a non-nil empty slice", name, out, err)
	}
}

func TestBytesKeepsNullApartFromEmpty(t *testing.T) {
	v, err := serde.Bytes.Decode([]byte{})
	if err != nil || v == nil || len(v) != 0 {
		t.Fatalf("Decode(empty) = %#v, %v; want a non-nil empty slice", v, err)
	}
}

// TestDecodeCopies overwrites the input after Decode: the value must not
// change, as inputs are reused buffers.
func TestDecodeCopies(t *testing.T) {
	in := []byte("abc")
	b, _ := serde.Bytes.Decode(in)
	s, _ := serde.String.Decode(in)
	copy(in, "xyz")
	if string(b) != "abc" || s != "abc" {
		t.Fatalf("decoded values follow their input: Bytes %q, String %q", b, s)
	}
}

// TestFixedSizeZeroAllocs guards what the benchmarks show: encoding into a
// reused buffer and decoding fixed-size values does not allocate.
func TestFixedSizeZeroAllocs(t *testing.T) {
	buf := make([]byte, 0, 16)
	var sink struct {
		i64 int64
		i32 int32
		f64 float64
		b   bool
	}
	allocs := testing.AllocsPerRun(100, func() {
		out, _ := serde.Int64.Encode(buf[:0], 42)
		sink.i64, _ = serde.Int64.Decode(out)
		out, _ = serde.Int32.Encode(buf[:0], 42)
		sink.i32, _ = serde.Int32.Decode(out)
		out, _ = serde.Float64.Encode(buf[:0], 4.2)
		sink.f64, _ = serde.Float64.Decode(out)
		out, _ = serde.Bool.Encode(buf[:0], true)
		sink.b, _ = serde.Bool.Decode(out)
	})
	if allocs != 0 {
		t.Fatalf("%v allocations per encode+decode round, want 0", allocs)
	}
}
