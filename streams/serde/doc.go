// Package serde turns the typed keys and values of a Runnel Streams app into
// record bytes and back.
//
// A [Serde] pairs an encoder and a decoder for one Go type. The package
// provides serdes for the types Kafka ships serializers for ([Bytes],
// [String], [Int64], [Int32], [Float64], [Bool]), [JSON] for any type
// encoding/json handles, [Proto] for protobuf messages, and [Func] to adapt
// any other pair of functions. Streams picks String, Bytes, the numbers and
// Bool by default for those types and JSON for everything else; options on
// each DSL call override the choice.
//
// # The append convention
//
// Encode appends to a destination slice and returns the extended slice, as
// strconv.AppendInt and binary.BigEndian.AppendUint64 do. A caller that
// keeps one buffer per task and passes buf[:0] encodes fixed-size values
// without allocating:
//
//	buf, err = serde.Int64.Encode(buf[:0], count)
//
// A successful Encode never returns nil, even for an empty value, because a
// nil key or value would go to Kafka as a null.
//
// Decode never keeps its input: the slice may be a consumer's fetch buffer
// or memory pebble reuses after the call. What a decoded value holds (bytes,
// strings, proto bytes fields) is copied.
//
// # Nulls
//
// Kafka distinguishes a null key or value from an empty one. Here a nil
// slice is a null and a non-nil empty slice is an empty value. Every serde
// in this package decodes nil to the zero value of its type with no error,
// as Kafka's deserializers return null for null. Streams does not rely on
// that for tables: a null value is a tombstone (a deletion), recognized
// before Decode is called, and a tombstone is written as a null without
// calling Encode. A serde never writes a null itself.
//
// # Byte compatibility with Kafka
//
// The primitive serdes write exactly the bytes of Kafka's serializers in
// org.apache.kafka.common.serialization, so a Java consumer using Kafka's
// deserializers reads what a Runnel app wrote, a Java producer's records
// are readable here, and state stores and changelogs agree byte for byte:
//
//	Bytes    ByteArraySerializer  the bytes as they are
//	String   StringSerializer     UTF-8 (Go strings are passed as is)
//	Int64    LongSerializer       8 bytes, big-endian two's complement
//	Int32    IntegerSerializer    4 bytes, big-endian two's complement
//	Float64  DoubleSerializer     8 bytes, big-endian IEEE 754; NaN as 0x7ff8000000000000
//	Bool     BooleanSerializer    1 byte, 0x01 or 0x00
//
// The decoders are as strict as Kafka's: a fixed-size value of the wrong
// length, or a Bool byte other than 0 or 1, is an error. Equal keys give
// equal bytes, so Kafka's default partitioner (murmur2 of the key bytes)
// sends a key to the same partition from Go and from Java.
//
// JSON output is plain UTF-8 JSON text, compact and without HTML escaping,
// that Jackson or Kafka Connect's JsonConverter (schemas.enable=false) reads;
// field names and formats are encoding/json's (struct tags, []byte as
// base64, time.Time as RFC 3339). Proto output is the plain protobuf wire
// format (message.toByteArray() in Java) without Schema Registry framing.
//
// # Errors
//
// Every decode failure wraps [ErrDecode] and says what was expected and what
// came, e.g. "serde: decode int64: want 8 bytes, got 3", so errors.Is(err,
// serde.ErrDecode) tells a bad record from other failures. Decoders never
// panic on bad input.
package serde
