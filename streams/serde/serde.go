// Package serde: placeholder until the streams-serde branch lands (replaced by it at merge).
package serde

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
)

type Serde[T any] interface {
	Encode(dst []byte, v T) ([]byte, error)
	Decode(b []byte) (T, error)
}

var ErrDecode = errors.New("serde: cannot decode")

type fn[T any] struct {
	enc func([]byte, T) ([]byte, error)
	dec func([]byte) (T, error)
}

func (f fn[T]) Encode(dst []byte, v T) ([]byte, error) { return f.enc(dst, v) }
func (f fn[T]) Decode(b []byte) (T, error)             { return f.dec(b) }

func Func[T any](enc func([]byte, T) ([]byte, error), dec func([]byte) (T, error)) Serde[T] {
	return fn[T]{enc, dec}
}

var (
	Bytes = Func(func(d []byte, v []byte) ([]byte, error) { return append(d, v...), nil },
		func(b []byte) ([]byte, error) {
			if b == nil {
				return nil, nil
			}
			return append([]byte{}, b...), nil
		})
	String = Func(func(d []byte, v string) ([]byte, error) { return append(d, v...), nil },
		func(b []byte) (string, error) { return string(b), nil })
	Int64 = Func(func(d []byte, v int64) ([]byte, error) { return binary.BigEndian.AppendUint64(d, uint64(v)), nil },
		func(b []byte) (int64, error) {
			if b == nil {
				return 0, nil
			}
			if len(b) != 8 {
				return 0, fmt.Errorf("%w int64: want 8 bytes, got %d", ErrDecode, len(b))
			}
			return int64(binary.BigEndian.Uint64(b)), nil
		})
	Int32 = Func(func(d []byte, v int32) ([]byte, error) { return binary.BigEndian.AppendUint32(d, uint32(v)), nil },
		func(b []byte) (int32, error) {
			if b == nil {
				return 0, nil
			}
			if len(b) != 4 {
				return 0, fmt.Errorf("%w int32: want 4 bytes, got %d", ErrDecode, len(b))
			}
			return int32(binary.BigEndian.Uint32(b)), nil
		})
	Float64 Serde[float64]
	Bool    Serde[bool]
)

func JSON[T any]() Serde[T] {
	return Func(func(d []byte, v T) ([]byte, error) {
		b, err := json.Marshal(v)
		return append(d, b...), err
	}, func(b []byte) (T, error) {
		var v T
		if b == nil {
			return v, nil
		}
		if err := json.Unmarshal(b, &v); err != nil {
			return v, fmt.Errorf("%w json: %v", ErrDecode, err)
		}
		return v, nil
	})
}
