package serde

import (
	"bytes"
	"encoding/json"
	"sync"
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
	e := jsonEncoders.Get().(*jsonEncoder)
	defer e.release()
	e.buf.Reset()
	if err := e.enc.Encode(v); err != nil {
		return dst, err
	}
	out := e.buf.Bytes()
	return append(dst, out[:len(out)-1]...), nil // Encoder ends each value with '\n'
}

// jsonEncoder is a json.Encoder with its buffer, pooled so that Encode does
// not build both per record.
type jsonEncoder struct {
	buf bytes.Buffer
	enc *json.Encoder
}

var jsonEncoders = sync.Pool{New: func() any {
	e := new(jsonEncoder)
	e.enc = json.NewEncoder(&e.buf)
	e.enc.SetEscapeHTML(false)
	return e
}}

// maxPooledJSON bounds the buffer a pooled encoder keeps: one huge value
// must not pin its memory for good.
const maxPooledJSON = 64 << 10

func (e *jsonEncoder) release() {
	if e.buf.Cap() <= maxPooledJSON {
		jsonEncoders.Put(e)
	}
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
