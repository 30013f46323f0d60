package serde

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math"
)

// The primitive serdes write exactly what Kafka's built-in serializers of
// org.apache.kafka.common.serialization write, so Java and Go apps share
// topics and state.
var (
	// Bytes passes bytes through (Kafka's ByteArraySerializer). Decode
	// copies; it keeps nil (a null) apart from an empty value.
	Bytes Serde[[]byte] = bytesSerde{}
	// String is UTF-8 text, the string's bytes as they are (Kafka's
	// StringSerializer with its default UTF-8 encoding). Decode copies.
	String Serde[string] = stringSerde{}
	// Int64 is 8 bytes big-endian two's complement (Kafka's LongSerializer).
	Int64 Serde[int64] = int64Serde{}
	// Int32 is 4 bytes big-endian two's complement (Kafka's
	// IntegerSerializer).
	Int32 Serde[int32] = int32Serde{}
	// Float64 is the IEEE 754 binary64 bits, 8 bytes big-endian (Kafka's
	// DoubleSerializer). Infinities and NaN round-trip; NaN is written as
	// 0x7ff8000000000000, the one NaN Java's Double.doubleToLongBits writes,
	// so equal keys give equal bytes in both languages.
	Float64 Serde[float64] = float64Serde{}
	// Bool is one byte, 0x01 for true and 0x00 for false (Kafka's
	// BooleanSerializer). Decode rejects any other byte, as Java does.
	Bool Serde[bool] = boolSerde{}
)

type bytesSerde struct{}

func (bytesSerde) Encode(dst, v []byte) ([]byte, error) { return nonNil(append(dst, v...)), nil }
func (bytesSerde) Decode(b []byte) ([]byte, error)      { return bytes.Clone(b), nil }

type stringSerde struct{}

func (stringSerde) Encode(dst []byte, v string) ([]byte, error) {
	return nonNil(append(dst, v...)), nil
}
func (stringSerde) Decode(b []byte) (string, error) { return string(b), nil }

type int64Serde struct{}

func (int64Serde) Encode(dst []byte, v int64) ([]byte, error) {
	return binary.BigEndian.AppendUint64(dst, uint64(v)), nil
}

func (int64Serde) Decode(b []byte) (int64, error) {
	if b == nil {
		return 0, nil
	}
	if len(b) != 8 {
		return 0, lengthError("int64", 8, len(b))
	}
	return int64(binary.BigEndian.Uint64(b)), nil
}

type int32Serde struct{}

func (int32Serde) Encode(dst []byte, v int32) ([]byte, error) {
	return binary.BigEndian.AppendUint32(dst, uint32(v)), nil
}

func (int32Serde) Decode(b []byte) (int32, error) {
	if b == nil {
		return 0, nil
	}
	if len(b) != 4 {
		return 0, lengthError("int32", 4, len(b))
	}
	return int32(binary.BigEndian.Uint32(b)), nil
}

// javaNaN is the canonical NaN of Java's Double.doubleToLongBits, which
// Kafka's DoubleSerializer uses. Go's math.NaN() has other bits.
const javaNaN = 0x7ff8000000000000

type float64Serde struct{}

func (float64Serde) Encode(dst []byte, v float64) ([]byte, error) {
	bits := math.Float64bits(v)
	if v != v { // NaN
		bits = javaNaN
	}
	return binary.BigEndian.AppendUint64(dst, bits), nil
}

func (float64Serde) Decode(b []byte) (float64, error) {
	if b == nil {
		return 0, nil
	}
	if len(b) != 8 {
		return 0, lengthError("float64", 8, len(b))
	}
	return math.Float64frombits(binary.BigEndian.Uint64(b)), nil
}

type boolSerde struct{}

func (boolSerde) Encode(dst []byte, v bool) ([]byte, error) {
	if v {
		return append(dst, 1), nil
	}
	return append(dst, 0), nil
}

func (boolSerde) Decode(b []byte) (bool, error) {
	switch {
	case b == nil:
		return false, nil
	case len(b) != 1:
		return false, lengthError("bool", 1, len(b))
	case b[0] == 1:
		return true, nil
	case b[0] == 0:
		return false, nil
	}
	return false, &decodeError{what: "bool", msg: fmt.Sprintf("want byte 0x00 or 0x01, got %#02x", b[0])}
}
