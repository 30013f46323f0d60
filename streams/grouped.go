package streams

import "github.com/runnel-io/runnel/streams/serde"

// GroupedStream is a stream grouped by key, ready to aggregate: Kafka
// Streams' KGroupedStream. If an operator upstream may have changed keys,
// the aggregation first writes the records through a repartition topic so
// that each key's records meet in one task.
type GroupedStream[K, V any] struct {
	s    Stream[K, V]
	opts options // Named: the repartition topic's name; serdes; Partitions
}

// GroupByKey groups the stream by its current key. Named sets the
// repartition topic's name ("<application id>-<name>-repartition"),
// KeySerde and ValueSerde its serdes, Partitions its partition count.
func (s Stream[K, V]) GroupByKey(opts ...Option) GroupedStream[K, V] {
	return GroupedStream[K, V]{s: s, opts: collect(opts)}
}

// GroupBy groups the stream by a new key computed from each record: always
// through a repartition topic.
func (s Stream[K, V]) GroupBy[K2 any](f func(K, V) K2, opts ...Option) GroupedStream[K2, V] {
	return s.SelectKey(f).GroupByKey(opts...)
}

// input returns the stream to aggregate: repartitioned when keys may have
// changed, under the grouping's name or the store's.
func (g GroupedStream[K, V]) input(store string) Stream[K, V] {
	s := g.s
	if g.opts.keySerde != nil {
		s.ks = serdeOf[K](s.b, g.opts.keySerde, "key")
	}
	if g.opts.valueSerde != nil {
		s.vs = serdeOf[V](s.b, g.opts.valueSerde, "value")
	}
	if !s.keyChanged {
		return s
	}
	name := g.opts.name
	if name == "" {
		name = store
	}
	return repartition(s, name, g.opts)
}

// Aggregate folds each key's values into an aggregate, kept in a key-value
// store: init gives a new key's starting value, add folds in one value.
// Tombstones are skipped, as in Kafka Streams. Options: Materialized (the
// store's name), ValueSerde (the aggregate's serde), Named, WithoutChangelog.
func (g GroupedStream[K, V]) Aggregate[A any](init func() A, add func(K, V, A) A, opts ...Option) Table[K, A] {
	return aggregate(g, opts, func(k K, v V, agg A, ok bool) A {
		if !ok {
			agg = init()
		}
		return add(k, v, agg)
	})
}

// aggregate is Aggregate, Count and Reduce: fold gets the key's current
// aggregate and whether there is one.
func aggregate[K, V, A any](g GroupedStream[K, V], opts []Option, fold func(k K, v V, agg A, ok bool) A) Table[K, A] {
	ag := addAggregation(g, opts, func(o options, name string, ks serde.Serde[K], as serde.Serde[A]) *storeDef {
		return kvStoreDef(name, !o.noLogging, ks, as)
	})
	b, n, store := ag.b, ag.n, ag.def.name
	n.build = func(t *task) (any, error) {
		out, err := children[K, change[A]](t, n)
		if err != nil {
			return nil, err
		}
		st := t.stores[store].(*KeyValueStore[K, A])
		return processFunc[K, V](func(r Record[K, V]) error {
			if r.Tombstone {
				return nil
			}
			old, ok, err := st.Get(r.Key)
			if err != nil {
				return err
			}
			agg := fold(r.Key, r.Value, old, ok)
			if err := st.Put(r.Key, agg); err != nil {
				return err
			}
			return out.process(Record[K, change[A]]{Key: r.Key, Timestamp: r.Timestamp, Headers: r.Headers,
				Value: change[A]{New: agg, HasNew: true, Old: old, HasOld: ok}})
		}), nil
	}
	return storeTable(b, n, ag.def, ag.ks, ag.as)
}

// Count counts each key's records (tombstones excluded) into a table.
func (g GroupedStream[K, V]) Count(opts ...Option) Table[K, int64] {
	return aggregate(g, append([]Option{ValueSerde(serde.Int64)}, opts...),
		func(_ K, _ V, n int64, _ bool) int64 { return n + 1 })
}

// Reduce combines each key's values with f into a table; a key's first
// value is its first aggregate.
func (g GroupedStream[K, V]) Reduce(f func(agg, v V) V, opts ...Option) Table[K, V] {
	if g.s.vs != nil {
		opts = append([]Option{ValueSerde(g.s.vs)}, opts...)
	}
	return aggregate(g, opts, func(_ K, v V, agg V, ok bool) V {
		if !ok {
			return v
		}
		return f(agg, v)
	})
}
