package connect

import (
	"fmt"
	"time"
)

// Record is one record on its way through Connect: from a source task to a
// topic, or from a topic to a sink task. Keys and values are structured
// Go values — nil, bool, int64, float64, string, []byte, []any and
// map[string]any — optionally described by a Schema (the json converter's
// envelope carries one; a source task may set one).
//
// A record belongs to the runtime once a source task returned it and to
// the sink task while Put runs; transforms change it in place.
type Record struct {
	Topic string
	// Partition and Offset say where a sink record was read from. Source
	// records leave them: the producer picks the partition by key hash
	// (murmur2, as Kafka's Java producer), records without a key spread.
	Partition int32
	Offset    int64

	Key         any
	KeySchema   *Schema
	Value       any
	ValueSchema *Schema
	Headers     []Header
	// Timestamp is the record's time; zero lets the producer stamp it.
	Timestamp time.Time

	// SourcePartition and SourceOffset say where a source record came from
	// (a file name and a byte position, a table and a row id). The runtime
	// stores the offset of each partition once the broker has
	// acknowledged the record, and hands it back to the next task that
	// starts on the partition (SourceTaskContext.Offset). Both must be
	// JSON-encodable with string keys.
	SourcePartition map[string]any
	SourceOffset    map[string]any
}

// Header is one record header. Values are bytes, passed through unchanged.
type Header struct {
	Key   string
	Value []byte
}

// Header returns the value of the last header named key, and whether there
// is one.
func (r *Record) Header(key string) ([]byte, bool) {
	for i := len(r.Headers) - 1; i >= 0; i-- {
		if r.Headers[i].Key == key {
			return r.Headers[i].Value, true
		}
	}
	return nil, false
}

// TopicPartition names one partition of a topic.
type TopicPartition struct {
	Topic     string
	Partition int32
}

func (tp TopicPartition) String() string { return fmt.Sprintf("%s-%d", tp.Topic, tp.Partition) }

// SchemaType is the type of a Schema, with Kafka Connect's names.
type SchemaType string

// The schema types, as Kafka Connect's JSON converter writes them.
const (
	Int8    SchemaType = "int8"
	Int16   SchemaType = "int16"
	Int32   SchemaType = "int32"
	Int64   SchemaType = "int64"
	Float32 SchemaType = "float"
	Float64 SchemaType = "double"
	Boolean SchemaType = "boolean"
	String  SchemaType = "string"
	Bytes   SchemaType = "bytes"
	Array   SchemaType = "array"
	Map     SchemaType = "map"
	Struct  SchemaType = "struct"
)

// Schema describes a key or value as Kafka Connect's schemas do. Values
// keep their Go representation whatever the schema says: every integer
// type is an int64, both float types a float64, a struct a
// map[string]any, an array a []any, a map a map[string]any (keys of other
// types are not supported).
type Schema struct {
	Type       SchemaType
	Optional   bool
	Name       string
	Version    int
	Doc        string
	Default    any
	Parameters map[string]string

	Fields []Field // Struct
	Items  *Schema // Array
	Keys   *Schema // Map
	Values *Schema // Map
}

// Field is one field of a struct schema.
type Field struct {
	Name   string
	Schema *Schema
}

// Field returns the struct field named name, or nil.
func (s *Schema) Field(name string) *Field {
	if s == nil {
		return nil
	}
	for i := range s.Fields {
		if s.Fields[i].Name == name {
			return &s.Fields[i]
		}
	}
	return nil
}
