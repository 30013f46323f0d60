package streams

import "github.com/twmb/franz-go/pkg/kgo"

// Record is one key/value pair flowing through a topology. Timestamp is the
// record's event time in milliseconds since the Unix epoch (what the source's
// timestamp extractor returned, or the time an operator gave its output).
//
// Tombstone marks a Kafka null value: a deletion in a table, or a record read
// with a null value. Value is then the zero V. Operators keep the mark:
// MapValues does not call its function on a tombstone and forwards one;
// sinks write a null value for it.
type Record[K, V any] struct {
	Key       K
	Value     V
	Timestamp int64
	Headers   []Header
	Tombstone bool
}

// Header is a record header: franz-go's type, so headers pass from input to
// output without a copy.
type Header = kgo.RecordHeader

// RecordMetadata says where the input record being processed came from.
// Records a punctuation emits have no input record: Topic is "" and
// Offset -1.
type RecordMetadata struct {
	Topic     string
	Partition int32
	Offset    int64
}
