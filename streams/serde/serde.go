package serde

import (
	"errors"
	"fmt"
	"reflect"
)

// Serde encodes and decodes values of one type.
//
// Encode appends the encoding of v to dst and returns the extended slice, so
// callers reuse buffers: fixed-size types do not allocate per record. On
// success the result is never nil, even for an empty value (an empty string
// encodes to an empty, non-nil slice), so an encoded value is never mistaken
// for a Kafka null.
//
// Decode must not retain b (it may be a reused buffer or pebble memory): it
// copies what it keeps. A nil b means a Kafka null; every serde in this
// package decodes nil to the zero value with no error. A non-nil empty b is
// an empty value, not a null.
type Serde[T any] interface {
	Encode(dst []byte, v T) ([]byte, error)
	Decode(b []byte) (T, error)
}

// ErrDecode is wrapped by every decode failure (wrong length, bad JSON, bad
// proto, or an error from a Func decoder). Test for it with errors.Is.
var ErrDecode = errors.New("serde: cannot decode")

// decodeError is a decode failure: what was being decoded, what was wrong,
// and the underlying error if any. It unwraps to ErrDecode and to its cause,
// so errors.Is(err, ErrDecode) holds and errors.As still finds, say, a
// *json.SyntaxError.
type decodeError struct {
	what  string // "int64", "json into main.Order", ...
	msg   string
	cause error
}

func (e *decodeError) Error() string { return "serde: decode " + e.what + ": " + e.msg }

func (e *decodeError) Unwrap() []error {
	if e.cause == nil {
		return []error{ErrDecode}
	}
	return []error{ErrDecode, e.cause}
}

// lengthError reports fixed-size input of the wrong length.
func lengthError(what string, want, got int) error {
	return &decodeError{what: what, msg: fmt.Sprintf("want %d bytes, got %d", want, got)}
}

// causeError reports a failure of an underlying decoder.
func causeError(what string, cause error) error {
	return &decodeError{what: what, msg: cause.Error(), cause: cause}
}

// typeName names T in error messages ("main.Order", "[]string").
func typeName[T any]() string { return reflect.TypeFor[T]().String() }

// nonNil keeps the promise that a successful Encode never returns nil:
// append(nil, empty...) is nil, which a producer would send as a null.
// []byte{} does not allocate.
func nonNil(b []byte) []byte {
	if b == nil {
		return []byte{}
	}
	return b
}

// Func adapts a pair of functions to a Serde. The result keeps the package's
// conventions, so enc and dec need not: Decode(nil) returns the zero T
// without calling dec, an error from dec is wrapped to match ErrDecode (the
// original stays reachable with errors.Is and errors.As), and a nil result
// of enc becomes an empty slice. Like any decoder, dec must copy what it
// keeps of b. Func panics if enc or dec is nil.
func Func[T any](enc func(dst []byte, v T) ([]byte, error), dec func(b []byte) (T, error)) Serde[T] {
	if enc == nil || dec == nil {
		panic("serde: Func needs both an encoder and a decoder")
	}
	return funcSerde[T]{enc: enc, dec: dec}
}

type funcSerde[T any] struct {
	enc func(dst []byte, v T) ([]byte, error)
	dec func(b []byte) (T, error)
}

func (f funcSerde[T]) Encode(dst []byte, v T) ([]byte, error) {
	out, err := f.enc(dst, v)
	if err != nil {
		return dst, err
	}
	return nonNil(out), nil
}

func (f funcSerde[T]) Decode(b []byte) (T, error) {
	var zero T
	if b == nil {
		return zero, nil
	}
	v, err := f.dec(b)
	if err != nil {
		if errors.Is(err, ErrDecode) {
			return zero, err
		}
		return zero, causeError(typeName[T](), err)
	}
	return v, nil
}
