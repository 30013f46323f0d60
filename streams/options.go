package streams

import (
	"fmt"
	"reflect"
	"time"

	"github.com/runnel-io/runnel/streams/serde"
)

// Option configures one DSL call: the name of the node it adds, the serdes of
// what it reads or writes, the store it materializes into, and so on. An
// option that does not apply to a call is ignored; one of the wrong type (a
// key serde for another key type) fails Build.
type Option interface{ apply(*options) }

type optionFunc func(*options)

func (f optionFunc) apply(o *options) { f(o) }

type options struct {
	name        string
	store       string
	keySerde    any // serde.Serde[K] of the call's key type
	valueSerde  any
	partitions  int32
	extractor   any // func(Record[K,V]) int64
	offsetReset OffsetReset
	retention   time.Duration
	noLogging   bool
	connect     []string // store names, for Process
}

func collect(opts []Option) options {
	var o options
	for _, opt := range opts {
		if opt != nil {
			opt.apply(&o)
		}
	}
	return o
}

// Named names the node a call adds (and, for calls that create an internal
// topic or store without one of their own, derives those names from it).
// Names make a topology stable across code changes: internal topics and
// stores keep their names when operators are added elsewhere.
func Named(name string) Option { return optionFunc(func(o *options) { o.name = name }) }

// Materialized names the state store a call creates (Count, Reduce,
// Aggregate, a table source). The store's changelog topic is
// "<application id>-<name>-changelog" and interactive queries find the store
// by this name.
func Materialized(store string) Option { return optionFunc(func(o *options) { o.store = store }) }

// KeySerde sets the serde of the key a call reads or writes.
func KeySerde[K any](s serde.Serde[K]) Option {
	return optionFunc(func(o *options) { o.keySerde = s })
}

// ValueSerde sets the serde of the value a call reads or writes.
func ValueSerde[V any](s serde.Serde[V]) Option {
	return optionFunc(func(o *options) { o.valueSerde = s })
}

// Partitions sets the partition count of the repartition topic a call
// creates. Without it, the topic gets as many partitions as the largest
// source topic upstream.
func Partitions(n int32) Option { return optionFunc(func(o *options) { o.partitions = n }) }

// TimestampExtractor sets a source's event time: f returns it, in
// milliseconds, from the decoded record, whose Timestamp is the Kafka
// record's. A negative result drops the record (counted in the
// dropped-records metric), as Kafka Streams' LogAndSkipOnInvalidTimestamp.
func TimestampExtractor[K, V any](f func(Record[K, V]) int64) Option {
	return optionFunc(func(o *options) { o.extractor = f })
}

// OffsetReset is where a source starts when its group has no committed offset.
type OffsetReset int

const (
	Earliest OffsetReset = iota // from the start of each partition (Kafka Streams' default)
	Latest                      // only records written after the app starts
)

// WithOffsetReset sets a source's reset policy: where it starts reading
// a partition the app's group has no committed offset for.
func WithOffsetReset(r OffsetReset) Option { return optionFunc(func(o *options) { o.offsetReset = r }) }

// Retention sets how long, in stream time, a window or session store keeps
// a window after it starts (a session after it ends). For windowed
// aggregations it must be at least size + grace (sessions: gap + grace),
// which is the default; for NewWindowStore the default is the window size.
func Retention(d time.Duration) Option { return optionFunc(func(o *options) { o.retention = d }) }

// WithoutChangelog keeps a store local only: nothing is written to a
// changelog topic, and its contents are lost with the instance's state
// directory. Kafka Streams' withLoggingDisabled.
func WithoutChangelog() Option { return optionFunc(func(o *options) { o.noLogging = true }) }

// serdeOf returns the serde an option set for T, or the default for T.
func serdeOf[T any](b *Builder, set any, what string) serde.Serde[T] {
	if set != nil {
		s, ok := set.(serde.Serde[T])
		if !ok {
			var zero T
			b.fail(fmt.Errorf("%w: %s serde %T does not encode %v", ErrTopology, what, set, reflect.TypeOf(&zero).Elem()))
			return nil
		}
		return s
	}
	return DefaultSerde[T]()
}

// DefaultSerde is the serde used when a call sets none: Kafka's formats for
// strings, bytes and numbers, JSON for everything else.
func DefaultSerde[T any]() serde.Serde[T] {
	var zero T
	var s any
	switch any(zero).(type) {
	case string:
		s = serde.String
	case []byte:
		s = serde.Bytes
	case int64:
		s = serde.Int64
	case int32:
		s = serde.Int32
	case float64:
		s = serde.Float64
	case bool:
		s = serde.Bool
	default:
		return serde.JSON[T]()
	}
	return s.(serde.Serde[T])
}
