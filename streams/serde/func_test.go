package serde_test

import (
	"errors"
	"strconv"
	"testing"

	"github.com/runnel-io/runnel/streams/serde"
)

// decimal is a Func serde: an int as decimal text.
var decimal = serde.Func(
	func(dst []byte, v int) ([]byte, error) { return strconv.AppendInt(dst, int64(v), 10), nil },
	func(b []byte) (int, error) { return strconv.Atoi(string(b)) },
)

func TestFuncRoundTrip(t *testing.T) {
	out, err := decimal.Encode([]byte("n="), 42)
	if err != nil || string(out) != "n=42" {
		t.Fatalf("Encode = %q, %v", out, err)
	}
	v, err := decimal.Decode(out[2:])
	if err != nil || v != 42 {
		t.Fatalf("Decode = %v, %v", v, err)
	}
}

func TestFuncWrapsDecodeErrors(t *testing.T) {
	_, err := decimal.Decode([]byte("4x"))
	if !errors.Is(err, serde.ErrDecode) {
		t.Fatalf("err = %v, want one wrapping ErrDecode", err)
	}
	var numErr *strconv.NumError
	if !errors.As(err, &numErr) {
		t.Fatalf("err = %v, want the decoder's *strconv.NumError inside", err)
	}
	if want := `serde: decode int: strconv.Atoi: parsing "4x": invalid syntax`; err.Error() != want {
		t.Fatalf("err = %q, want %q", err, want)
	}
	// An error that already wraps ErrDecode is passed through as is.
	mine := errors.Join(serde.ErrDecode, errors.New("mine"))
	s := serde.Func(
		func(dst []byte, v int) ([]byte, error) { return dst, nil },
		func(b []byte) (int, error) { return 0, mine },
	)
	if _, err := s.Decode([]byte("x")); err != mine {
		t.Fatalf("err = %v, want the decoder's own", err)
	}
}

func TestFuncEncodeError(t *testing.T) {
	boom := errors.New("boom")
	s := serde.Func(
		func(dst []byte, v int) ([]byte, error) { return append(dst, "partial"...), boom },
		func(b []byte) (int, error) { return 0, nil },
	)
	out, err := s.Encode([]byte("pre"), 1)
	if !errors.Is(err, boom) || string(out) != "pre" {
		t.Fatalf("Encode = %q, %v; want dst unchanged and the encoder's error", out, err)
	}
}

func TestConstructorsPanicOnNil(t *testing.T) {
	for name, f := range map[string]func(){
		"Func nil enc":  func() { serde.Func(nil, func(b []byte) (int, error) { return 0, nil }) },
		"Func nil dec":  func() { serde.Func(func(d []byte, v int) ([]byte, error) { return d, nil }, nil) },
		"Proto nil new": func() { serde.Proto[*stringValue](nil) },
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("%s: no panic", name)
				}
			}()
			f()
		}()
	}
}
