package serde

import (
	"bytes"
	"encoding/json"
)

// JSON returns a serde that encodes T with encoding/json: compact, map keys
// sorted (so equal values give equal bytes, which matters for keys), and
// without HTML escaping, as Jackson writes it. Decode(nil) returns the zero
// T; an empty or invalid document, or trailing data, is an error wrapping
// ErrDecode. Decode keeps nothing of b: encoding/json copies strings and
// byte slices out of its input.
func JSON[T any]() Serde[T] { return jsonSerde[T]{} }

type jsonSerde[T any] struct{}

func (jsonSerde[T]) Encode(dst []byte, v T) ([]byte, error) {
	buf := bytes.NewBuffer(dst)
	enc := json.NewEncoder(buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return dst, err
	}
	out := buf.Bytes()
	return out[:len(out)-1], nil // Encoder ends each value with '\n'
}

func (jsonSerde[T]) Decode(b []byte) (T, error) {
	var v T
	if b == nil {
		return v, nil
	}
	if err := json.Unmarshal(b, &v); err != nil {
		var zero T
		return zero, causeError("json into "+typeName[T](), err)
	}
	return v, nil
}
