package streams

import (
	"fmt"

	"github.com/runnel-io/runnel/streams/serde"
)

// WindowedStream is a grouped stream cut into time windows, ready to
// aggregate per key and window: Kafka Streams' TimeWindowedKStream. Make one
// with WindowedBy.
type WindowedStream[K, V any] struct {
	g    GroupedStream[K, V]
	spec WindowSpec
}

// WindowedBy cuts a grouped stream into time windows (TumblingWindows,
// HoppingWindows). It is a function, not a method of GroupedStream: a
// method would make the types GroupedStream[K], WindowedStream[K] and
// Table[Windowed[K]] instantiate one another without end, which Go rejects.
func WindowedBy[K, V any](g GroupedStream[K, V], w WindowSpec) WindowedStream[K, V] {
	if err := w.check(); err != nil {
		g.s.b.fail(err)
	}
	return WindowedStream[K, V]{g: g, spec: w}
}

// Aggregate folds the values of each key and window into an aggregate, kept
// in a window store: init gives a window's starting value, add folds in one
// value. Each update is a record of the resulting table, keyed by the key
// and its window. Event time is the record timestamp (the source's
// TimestampExtractor, if set); a record goes into every window that holds
// it and is still open; windows closed by stream time (end + grace <=
// stream time) drop it, counted as "expired-window" drops. Tombstones are
// skipped. Options: Materialized (the store's name), ValueSerde (the
// aggregate's serde), Retention (the store's, at least size + grace, which
// is the default), Named, WithoutChangelog.
func (w WindowedStream[K, V]) Aggregate[A any](init func() A, add func(K, V, A) A, opts ...Option) Table[Windowed[K], A] {
	return windowAggregate(w, opts, func(k K, v V, agg A, ok bool) A {
		if !ok {
			agg = init()
		}
		return add(k, v, agg)
	})
}

// Count counts each key's records per window (tombstones excluded).
func (w WindowedStream[K, V]) Count(opts ...Option) Table[Windowed[K], int64] {
	return windowAggregate(w, append([]Option{ValueSerde(serde.Int64)}, opts...),
		func(_ K, _ V, n int64, _ bool) int64 { return n + 1 })
}

// Reduce combines each key's values per window with f; a window's first
// value is its first aggregate.
func (w WindowedStream[K, V]) Reduce(f func(agg, v V) V, opts ...Option) Table[Windowed[K], V] {
	if w.g.s.vs != nil {
		opts = append([]Option{ValueSerde(w.g.s.vs)}, opts...)
	}
	return windowAggregate(w, opts, func(_ K, v V, agg V, ok bool) V {
		if !ok {
			return v
		}
		return f(agg, v)
	})
}

// windowAggregate is the time-window Aggregate, Count and Reduce, Kafka's
// KStreamWindowAggregate: fold gets a window's current aggregate and
// whether there is one.
func windowAggregate[K, V, A any](w WindowedStream[K, V], opts []Option, fold func(k K, v V, agg A, ok bool) A) Table[Windowed[K], A] {
	wt := w.spec.ms()
	size := w.spec.size
	ag := addAggregation(w.g, opts, func(o options, name string, ks serde.Serde[K], as serde.Serde[A]) *storeDef {
		return windowStoreDef(name, !o.noLogging, size, windowRetention(w.g.s.b, o.retention, size+w.spec.grace, "window store "+name), ks, as)
	})
	b, n, store := ag.b, ag.n, ag.def.name
	n.build = func(t *task) (any, error) {
		out, err := children[Windowed[K], change[A]](t, n)
		if err != nil {
			return nil, err
		}
		st := t.stores[store].(*WindowStore[K, A])
		return processFunc[K, V](func(r Record[K, V]) error {
			if r.Tombstone {
				return nil
			}
			if r.Timestamp < 0 {
				t.env.dropped("negative-timestamp")
				return nil
			}
			// The store's stream time counts too: after a restart it still
			// knows how far the task had got (see state.Window.StreamTime).
			closeTime := max(t.streamTime, r.Timestamp, st.s.StreamTime()) - wt.grace
			for start := wt.firstStart(r.Timestamp); start <= r.Timestamp; start += wt.advance {
				end := start + wt.size
				if end <= closeTime {
					t.env.dropped("expired-window")
					continue
				}
				old, ok, err := st.Get(r.Key, start)
				if err != nil {
					return err
				}
				agg := fold(r.Key, r.Value, old, ok)
				if err := st.Put(r.Key, start, agg); err != nil {
					return err
				}
				if err := out.process(Record[Windowed[K], change[A]]{
					Key: Windowed[K]{Key: r.Key, Start: start, End: end}, Timestamp: r.Timestamp, Headers: r.Headers,
					Value: change[A]{New: agg, HasNew: true, Old: old, HasOld: ok},
				}); err != nil {
					return err
				}
			}
			return nil
		}), nil
	}
	return Table[Windowed[K], A]{
		b: b, n: n, ks: WindowedSerdeOfSize(ag.ks, size), vs: ag.as, store: store,
		lookupStores: []*storeDef{ag.def},
		lookup: func(t *task) (func(Windowed[K]) (A, bool, error), error) {
			st, ok := t.stores[store].(*WindowStore[K, A])
			if !ok {
				return nil, fmt.Errorf("%w: store %q is not in task %s", ErrTopology, store, t.id)
			}
			return func(k Windowed[K]) (A, bool, error) { return st.Get(k.Key, k.Start) }, nil
		},
		win: &tableWindows[Windowed[K]]{end: windowEnd[K], grace: wt.grace},
	}
}

func windowEnd[K any](w Windowed[K]) int64 { return w.End }
