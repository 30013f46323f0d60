package streams

import (
	"fmt"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/runnel-io/runnel/streams/serde"
)

// Stream is an unbounded sequence of records with keys of type K and values
// of type V: Kafka Streams' KStream. Its methods add operators to the
// builder and return the stream they produce; nothing runs until an App (or
// a test driver) runs the built topology.
type Stream[K, V any] struct {
	b  *Builder
	n  *node
	ks serde.Serde[K] // the serdes known for this stream (source or options); nil: default
	vs serde.Serde[V]
	// keyChanged is set downstream of an operator that may change keys:
	// grouping or joining by key then goes through a repartition topic.
	keyChanged bool
}

// From reads a topic as a stream. Keys and values are decoded with the
// KeySerde and ValueSerde options, or the default serde of K and V (Kafka's
// formats for string, []byte, int32, int64, float64 and bool; JSON for any
// other type).
func From[K, V any](b *Builder, topic string, opts ...Option) Stream[K, V] {
	return FromTopics[K, V](b, []string{topic}, opts...)
}

// FromTopics reads several topics as one stream.
func FromTopics[K, V any](b *Builder, topics []string, opts ...Option) Stream[K, V] {
	o := collect(opts)
	n := b.addNode(kindSource, "KSTREAM-SOURCE", o.name)
	n.reset = o.offsetReset
	b.addSourceTopics(n, topics)
	s := Stream[K, V]{b: b, n: n, ks: serdeOf[K](b, o.keySerde, "key"), vs: serdeOf[V](b, o.valueSerde, "value")}
	n.build = sourceBuild(n, s.ks, s.vs, extractorOf[K, V](b, o.extractor))
	return s
}

func extractorOf[K, V any](b *Builder, set any) func(Record[K, V]) int64 {
	if set == nil {
		return nil
	}
	f, ok := set.(func(Record[K, V]) int64)
	if !ok {
		b.fail(fmt.Errorf("%w: timestamp extractor %T does not take Record[%T, %T]", ErrTopology, set, *new(K), *new(V)))
	}
	return f
}

func sourceBuild[K, V any](n *node, ks serde.Serde[K], vs serde.Serde[V], extract func(Record[K, V]) int64) func(t *task) (any, error) {
	return func(t *task) (any, error) {
		out, err := children[K, V](t, n)
		if err != nil {
			return nil, err
		}
		return &source[K, V]{t: t, n: &t.counts[n.id], ks: ks, vs: vs, extract: extract, out: out}, nil
	}
}

// source decodes a Kafka record and forwards it.
type source[K, V any] struct {
	t       *task
	n       *int64 // records taken in
	ks      serde.Serde[K]
	vs      serde.Serde[V]
	extract func(Record[K, V]) int64
	out     downstream[K, V]
}

func (s *source[K, V]) processRaw(r *kgo.Record) error {
	*s.n++
	rec := Record[K, V]{Timestamp: r.Timestamp.UnixMilli(), Headers: r.Headers}
	var err error
	if rec.Key, err = s.ks.Decode(r.Key); err != nil {
		return s.t.badRecord(r, fmt.Errorf("key: %w", err))
	}
	if r.Value == nil {
		rec.Tombstone = true
	} else if rec.Value, err = s.vs.Decode(r.Value); err != nil {
		return s.t.badRecord(r, fmt.Errorf("value: %w", err))
	}
	if s.extract != nil {
		rec.Timestamp = s.extract(rec)
	}
	if rec.Timestamp < 0 {
		s.t.env.dropped("negative-timestamp")
		return nil
	}
	s.t.observe(rec.Timestamp)
	return s.out.process(rec)
}

// derive adds a processor node below s whose per-task instance make
// returns, given the instance's children.
func derive[K, V, K2, V2 any](s Stream[K, V], prefix, name string, make func(out downstream[K2, V2]) downstream[K, V]) (*node, Stream[K2, V2]) {
	n := s.b.addNode(kindProcessor, prefix, name, s.n)
	n.build = func(t *task) (any, error) {
		out, err := children[K2, V2](t, n)
		if err != nil {
			return nil, err
		}
		return make(out), nil
	}
	return n, Stream[K2, V2]{b: s.b, n: n, keyChanged: s.keyChanged}
}

// Filter keeps the records for which keep returns true.
func (s Stream[K, V]) Filter(keep func(K, V) bool, opts ...Option) Stream[K, V] {
	_, out := derive(s, "KSTREAM-FILTER", collect(opts).name, func(out downstream[K, V]) downstream[K, V] {
		return processFunc[K, V](func(r Record[K, V]) error {
			if !keep(r.Key, r.Value) {
				return nil
			}
			return out.process(r)
		})
	})
	out.ks, out.vs = s.ks, s.vs
	return out
}

// FilterNot drops the records for which drop returns true.
func (s Stream[K, V]) FilterNot(drop func(K, V) bool, opts ...Option) Stream[K, V] {
	return s.Filter(func(k K, v V) bool { return !drop(k, v) }, append([]Option{Named(s.b.newName("KSTREAM-FILTERNOT"))}, opts...)...)
}

// Map turns each record into a new key and value. The key may change, so a
// later grouping or join by key repartitions.
func (s Stream[K, V]) Map[K2, V2 any](f func(K, V) (K2, V2), opts ...Option) Stream[K2, V2] {
	_, out := derive(s, "KSTREAM-MAP", collect(opts).name, func(out downstream[K2, V2]) downstream[K, V] {
		return processFunc[K, V](func(r Record[K, V]) error {
			k, v := f(r.Key, r.Value)
			return out.process(Record[K2, V2]{Key: k, Value: v, Timestamp: r.Timestamp, Headers: r.Headers, Tombstone: r.Tombstone})
		})
	})
	out.keyChanged = true
	return out
}

// MapValues turns each value into a new one; keys stay, so no repartition
// follows. f is not called for tombstones: they pass on as tombstones.
func (s Stream[K, V]) MapValues[V2 any](f func(V) V2, opts ...Option) Stream[K, V2] {
	_, out := derive(s, "KSTREAM-MAPVALUES", collect(opts).name, func(out downstream[K, V2]) downstream[K, V] {
		return processFunc[K, V](func(r Record[K, V]) error {
			o := Record[K, V2]{Key: r.Key, Timestamp: r.Timestamp, Headers: r.Headers, Tombstone: r.Tombstone}
			if !r.Tombstone {
				o.Value = f(r.Value)
			}
			return out.process(o)
		})
	})
	out.ks = s.ks
	return out
}

// KeyValue is one key and value, for FlatMap.
type KeyValue[K, V any] struct {
	Key   K
	Value V
}

// KV builds a KeyValue.
func KV[K, V any](k K, v V) KeyValue[K, V] { return KeyValue[K, V]{k, v} }

// FlatMap turns each record into zero or more records.
func (s Stream[K, V]) FlatMap[K2, V2 any](f func(K, V) []KeyValue[K2, V2], opts ...Option) Stream[K2, V2] {
	_, out := derive(s, "KSTREAM-FLATMAP", collect(opts).name, func(out downstream[K2, V2]) downstream[K, V] {
		return processFunc[K, V](func(r Record[K, V]) error {
			for _, kv := range f(r.Key, r.Value) {
				if err := out.process(Record[K2, V2]{Key: kv.Key, Value: kv.Value, Timestamp: r.Timestamp, Headers: r.Headers}); err != nil {
					return err
				}
			}
			return nil
		})
	})
	out.keyChanged = true
	return out
}

// FlatMapValues turns each value into zero or more values with the same key.
func (s Stream[K, V]) FlatMapValues[V2 any](f func(V) []V2, opts ...Option) Stream[K, V2] {
	_, out := derive(s, "KSTREAM-FLATMAPVALUES", collect(opts).name, func(out downstream[K, V2]) downstream[K, V] {
		return processFunc[K, V](func(r Record[K, V]) error {
			for _, v := range f(r.Value) {
				if err := out.process(Record[K, V2]{Key: r.Key, Value: v, Timestamp: r.Timestamp, Headers: r.Headers}); err != nil {
					return err
				}
			}
			return nil
		})
	})
	out.ks = s.ks
	return out
}

// SelectKey gives each record a new key computed from it.
func (s Stream[K, V]) SelectKey[K2 any](f func(K, V) K2, opts ...Option) Stream[K2, V] {
	_, out := derive(s, "KSTREAM-KEY-SELECT", collect(opts).name, func(out downstream[K2, V]) downstream[K, V] {
		return processFunc[K, V](func(r Record[K, V]) error {
			return out.process(Record[K2, V]{Key: f(r.Key, r.Value), Value: r.Value, Timestamp: r.Timestamp, Headers: r.Headers, Tombstone: r.Tombstone})
		})
	})
	out.vs = s.vs
	out.keyChanged = true
	return out
}

// Peek calls f for each record and passes the record on unchanged.
func (s Stream[K, V]) Peek(f func(K, V), opts ...Option) Stream[K, V] {
	_, out := derive(s, "KSTREAM-PEEK", collect(opts).name, func(out downstream[K, V]) downstream[K, V] {
		return processFunc[K, V](func(r Record[K, V]) error {
			f(r.Key, r.Value)
			return out.process(r)
		})
	})
	out.ks, out.vs = s.ks, s.vs
	return out
}

// Foreach calls f for each record; nothing flows on.
func (s Stream[K, V]) Foreach(f func(K, V), opts ...Option) {
	derive(s, "KSTREAM-FOREACH", collect(opts).name, func(downstream[K, V]) downstream[K, V] {
		return processFunc[K, V](func(r Record[K, V]) error {
			f(r.Key, r.Value)
			return nil
		})
	})
}

// Branch splits the stream: each record goes to the stream of the first
// predicate it matches, or nowhere. A last predicate that always returns
// true makes a default branch.
func (s Stream[K, V]) Branch(preds ...func(K, V) bool) []Stream[K, V] {
	n, _ := derive(s, "KSTREAM-BRANCH", "", func(downstream[K, V]) downstream[K, V] { return nil })
	branches := make([]Stream[K, V], len(preds))
	childNodes := make([]*node, len(preds))
	for i := range preds {
		c := s.b.addNode(kindProcessor, "KSTREAM-BRANCHCHILD", "", n)
		childNodes[i] = c
		c.build = func(t *task) (any, error) {
			out, err := children[K, V](t, c)
			if err != nil {
				return nil, err
			}
			return out, nil
		}
		branches[i] = Stream[K, V]{b: s.b, n: c, ks: s.ks, vs: s.vs, keyChanged: s.keyChanged}
	}
	n.build = func(t *task) (any, error) {
		outs := make([]downstream[K, V], len(childNodes))
		for i, c := range childNodes {
			inst, err := t.instance(c)
			if err != nil {
				return nil, err
			}
			outs[i] = counted[K, V]{d: inst.(downstream[K, V]), n: &t.counts[c.id]}
		}
		return processFunc[K, V](func(r Record[K, V]) error {
			for i, p := range preds {
				if p(r.Key, r.Value) {
					return outs[i].process(r)
				}
			}
			return nil
		}), nil
	}
	return branches
}

// Merge combines this stream and others into one. Records of each input
// keep their order; between inputs there is none.
func (s Stream[K, V]) Merge(others []Stream[K, V], opts ...Option) Stream[K, V] {
	parents := []*node{s.n}
	changed := s.keyChanged
	for _, o := range others {
		parents = append(parents, o.n)
		changed = changed || o.keyChanged
	}
	n := s.b.addNode(kindProcessor, "KSTREAM-MERGE", collect(opts).name, parents...)
	n.build = func(t *task) (any, error) { return children[K, V](t, n) }
	return Stream[K, V]{b: s.b, n: n, ks: s.ks, vs: s.vs, keyChanged: changed}
}

// To writes the stream to a topic, partitioned by key with Kafka's default
// partitioner, so that any Kafka client reading it finds keys where it
// expects them.
func (s Stream[K, V]) To(topic string, opts ...Option) {
	s.toFunc(topic, nil, opts)
}

// ToFunc writes each record to the topic choose returns for it (the topic
// must exist).
func (s Stream[K, V]) ToFunc(choose func(K, V) string, opts ...Option) {
	s.toFunc("", choose, opts)
}

func (s Stream[K, V]) toFunc(topic string, choose func(K, V) string, opts []Option) {
	o := collect(opts)
	ks := s.ks
	if o.keySerde != nil || ks == nil {
		ks = serdeOf[K](s.b, o.keySerde, "key")
	}
	vs := s.vs
	if o.valueSerde != nil || vs == nil {
		vs = serdeOf[V](s.b, o.valueSerde, "value")
	}
	n := s.b.addNode(kindSink, "KSTREAM-SINK", o.name, s.n)
	n.topics = []string{topic}
	n.build = func(t *task) (any, error) {
		return processFunc[K, V](func(r Record[K, V]) error {
			to := topic
			if choose != nil {
				to = choose(r.Key, r.Value)
			}
			return produce(t, to, -1, ks, vs, r)
		}), nil
	}
}

// Repartition writes the stream through an internal topic
// ("<application id>-<name>-repartition"), partitioned by the current key,
// and reads it back: the records of one key then meet in one task. Use the
// Partitions option to change the partition count.
func (s Stream[K, V]) Repartition(opts ...Option) Stream[K, V] {
	o := collect(opts)
	name := o.name
	if name == "" {
		name = s.b.newName("KSTREAM-REPARTITION")
	}
	return repartition(s, name, o)
}

// repartition adds sink, internal topic and source. The serdes are the
// options', else the stream's, else the defaults.
func repartition[K, V any](s Stream[K, V], name string, o options) Stream[K, V] {
	ks := s.ks
	if o.keySerde != nil || ks == nil {
		ks = serdeOf[K](s.b, o.keySerde, "key")
	}
	vs := s.vs
	if o.valueSerde != nil || vs == nil {
		vs = serdeOf[V](s.b, o.valueSerde, "value")
	}
	topic := name + "-repartition"
	sink := s.b.addNode(kindSink, "", name+"-repartition-sink", s.n)
	sink.topics = []string{topic}
	sink.internal = true
	sink.build = func(t *task) (any, error) {
		full := t.env.appID + "-" + topic
		return processFunc[K, V](func(r Record[K, V]) error {
			return produce(t, full, -1, ks, vs, r)
		}), nil
	}
	src := s.b.addNode(kindSource, "", name+"-repartition-source")
	src.internal = true
	s.b.addSourceTopics(src, []string{topic})
	src.build = sourceBuild[K, V](src, ks, vs, nil)
	s.b.partitionsOf[topic] = o.partitions
	return Stream[K, V]{b: s.b, n: src, ks: ks, vs: vs}
}
