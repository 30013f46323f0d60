package streamstest

import (
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/runnel-io/runnel/streams"
	"github.com/runnel-io/runnel/streams/serde"
)

// InputTopic pipes typed records into one topic. Records without a
// timestamp of their own get the topic's current time, which starts at the
// driver's wall clock and moves by Advance.
type InputTopic[K, V any] struct {
	d    *Driver
	name string
	ks   serde.Serde[K]
	vs   serde.Serde[V]
	ts   int64
	step int64
}

// Input returns an input topic with the given serdes (nil: the default
// serde of the type, as in the DSL).
func Input[K, V any](d *Driver, topic string, ks serde.Serde[K], vs serde.Serde[V]) *InputTopic[K, V] {
	if ks == nil {
		ks = streams.DefaultSerde[K]()
	}
	if vs == nil {
		vs = streams.DefaultSerde[V]()
	}
	return &InputTopic[K, V]{d: d, name: topic, ks: ks, vs: vs, ts: d.now}
}

// AutoAdvance makes each piped record's time step later than the last.
func (in *InputTopic[K, V]) AutoAdvance(step time.Duration) *InputTopic[K, V] {
	in.step = step.Milliseconds()
	return in
}

// Advance moves the topic's current time.
func (in *InputTopic[K, V]) Advance(by time.Duration) { in.ts += by.Milliseconds() }

// Pipe writes k, v at the topic's current time and processes it; an error
// fails the test.
func (in *InputTopic[K, V]) Pipe(k K, v V) {
	in.d.tb.Helper()
	if err := in.TryPipe(streams.Record[K, V]{Key: k, Value: v, Timestamp: in.next()}); err != nil {
		in.d.tb.Fatalf("streamstest: pipe to %s: %v", in.name, err)
	}
}

// PipeAt writes k, v with timestamp ts.
func (in *InputTopic[K, V]) PipeAt(k K, v V, ts time.Time) {
	in.d.tb.Helper()
	if err := in.TryPipe(streams.Record[K, V]{Key: k, Value: v, Timestamp: ts.UnixMilli()}); err != nil {
		in.d.tb.Fatalf("streamstest: pipe to %s: %v", in.name, err)
	}
}

// PipeTombstone writes k with a null value.
func (in *InputTopic[K, V]) PipeTombstone(k K) {
	in.d.tb.Helper()
	if err := in.TryPipe(streams.Record[K, V]{Key: k, Tombstone: true, Timestamp: in.next()}); err != nil {
		in.d.tb.Fatalf("streamstest: pipe to %s: %v", in.name, err)
	}
}

func (in *InputTopic[K, V]) next() int64 {
	ts := in.ts
	in.ts += in.step
	return ts
}

// TryPipe writes one record and returns the error processing it gave.
func (in *InputTopic[K, V]) TryPipe(r streams.Record[K, V]) error {
	key, err := in.ks.Encode(nil, r.Key)
	if err != nil {
		return err
	}
	var value []byte
	if !r.Tombstone {
		if value, err = in.vs.Encode(nil, r.Value); err != nil {
			return err
		}
		if value == nil {
			value = []byte{}
		}
	}
	return in.PipeRaw(key, value, time.UnixMilli(r.Timestamp), r.Headers...)
}

// PipeRaw writes a record of raw bytes (to test what the topology does with
// bytes its serdes cannot decode) and returns the processing error.
func (in *InputTopic[K, V]) PipeRaw(key, value []byte, ts time.Time, headers ...streams.Header) error {
	r := &kgo.Record{Topic: in.name, Key: key, Value: value, Timestamp: ts, Headers: headers}
	n, err := in.d.partitions(in.name)
	if err != nil {
		return err
	}
	r.Partition = int32(kgo.StickyKeyPartitioner(nil).ForTopic(in.name).Partition(r, int(n)))
	return in.d.pipe(r)
}

// OutputTopic reads typed records from one topic, each once, in the order
// written.
type OutputTopic[K, V any] struct {
	d    *Driver
	name string
	ks   serde.Serde[K]
	vs   serde.Serde[V]
	read int
}

// Output returns a reader of topic with the given serdes (nil: defaults).
func Output[K, V any](d *Driver, topic string, ks serde.Serde[K], vs serde.Serde[V]) *OutputTopic[K, V] {
	if ks == nil {
		ks = streams.DefaultSerde[K]()
	}
	if vs == nil {
		vs = streams.DefaultSerde[V]()
	}
	return &OutputTopic[K, V]{d: d, name: topic, ks: ks, vs: vs}
}

// ReadRecords returns the records written since the last read; one that
// cannot be decoded fails the test.
func (o *OutputTopic[K, V]) ReadRecords() []streams.Record[K, V] {
	o.d.tb.Helper()
	log := o.d.logs[o.name]
	var out []streams.Record[K, V]
	for ; o.read < len(log); o.read++ {
		r := log[o.read]
		k, err := o.ks.Decode(r.Key)
		if err != nil {
			o.d.tb.Fatalf("streamstest: %s offset %d: key: %v", o.name, r.Offset, err)
		}
		rec := streams.Record[K, V]{Key: k, Timestamp: r.Timestamp.UnixMilli(), Headers: r.Headers, Tombstone: r.Value == nil}
		if r.Value != nil {
			if rec.Value, err = o.vs.Decode(r.Value); err != nil {
				o.d.tb.Fatalf("streamstest: %s offset %d: value: %v", o.name, r.Offset, err)
			}
		}
		out = append(out, rec)
	}
	return out
}

// ReadKeyValues returns the keys and values written since the last read.
func (o *OutputTopic[K, V]) ReadKeyValues() []streams.KeyValue[K, V] {
	o.d.tb.Helper()
	var out []streams.KeyValue[K, V]
	for _, r := range o.ReadRecords() {
		out = append(out, streams.KV(r.Key, r.Value))
	}
	return out
}

// IsEmpty reports whether every record written has been read.
func (o *OutputTopic[K, V]) IsEmpty() bool { return o.read >= len(o.d.logs[o.name]) }

// LatestByKey folds key-value pairs into the last value per key, dropping
// keys whose last record is a tombstone: what a table read from the topic
// holds.
func LatestByKey[K comparable, V any](records []streams.Record[K, V]) map[K]V {
	out := map[K]V{}
	for _, r := range records {
		if r.Tombstone {
			delete(out, r.Key)
		} else {
			out[r.Key] = r.Value
		}
	}
	return out
}
