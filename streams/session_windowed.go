package streams

import (
	"fmt"

	"github.com/runnel-io/runnel/streams/serde"
)

// SessionWindowedStream is a grouped stream cut into session windows, ready
// to aggregate per key and session: Kafka Streams' SessionWindowedKStream.
// Make one with SessionWindowedBy.
type SessionWindowedStream[K, V any] struct {
	g    GroupedStream[K, V]
	spec SessionWindowSpec
}

// SessionWindowedBy cuts a grouped stream into session windows. Like
// WindowedBy, it is a function for want of a method Go would accept.
func SessionWindowedBy[K, V any](g GroupedStream[K, V], s SessionWindowSpec) SessionWindowedStream[K, V] {
	if err := s.check(); err != nil {
		g.s.b.fail(err)
	}
	return SessionWindowedStream[K, V]{g: g, spec: s}
}

// Aggregate folds the values of each key's sessions into aggregates, kept
// in a session store. A record at time ts joins every session of its key
// that ends at or after ts - gap and starts at or before ts + gap; when it
// joins several, or extends one, they are merged into one session: their
// aggregates are combined with merge (Kafka's Merger), starting from init(),
// and the record is folded in with add. Each merged-away session is removed
// and its removal sent downstream as a tombstone (with its old value), then
// the new session is sent, as Kafka Streams does; records carry the
// session's end as timestamp.
//
// A session closes once stream time reaches its end + gap + grace; a
// closed session is final. A record joins only open sessions (Kafka Streams
// also merges closed ones its store has not yet deleted, which makes the
// result depend on segment cleanup and can count a record in two final
// results), and a record whose session would be closed at once is dropped
// and counted as an "expired-window" drop. A record bridging two sessions
// is necessarily out of order, so it merges them only within the grace
// period. Tombstones are skipped. Options as WindowedStream.Aggregate; the
// default retention is gap + grace.
func (s SessionWindowedStream[K, V]) Aggregate[A any](init func() A, add func(K, V, A) A, merge func(K, A, A) A, opts ...Option) Table[Windowed[K], A] {
	return sessionAggregate(s, opts,
		func(k K, v V, agg A, ok bool) A {
			if !ok {
				agg = init()
			}
			return add(k, v, agg)
		},
		func(k K, agg A, ok bool, session A) A {
			if !ok {
				agg = init()
			}
			return merge(k, agg, session)
		})
}

// Count counts each key's records per session (tombstones excluded).
func (s SessionWindowedStream[K, V]) Count(opts ...Option) Table[Windowed[K], int64] {
	return sessionAggregate(s, append([]Option{ValueSerde(serde.Int64)}, opts...),
		func(_ K, _ V, n int64, _ bool) int64 { return n + 1 },
		func(_ K, n int64, _ bool, m int64) int64 { return n + m })
}

// Reduce combines each key's values per session with f, which also
// combines the aggregates of sessions that merge (older session first).
func (s SessionWindowedStream[K, V]) Reduce(f func(agg, v V) V, opts ...Option) Table[Windowed[K], V] {
	if s.g.s.vs != nil {
		opts = append([]Option{ValueSerde(s.g.s.vs)}, opts...)
	}
	return sessionAggregate(s, opts,
		func(_ K, v V, agg V, ok bool) V {
			if !ok {
				return v
			}
			return f(agg, v)
		},
		func(_ K, agg V, ok bool, session V) V {
			if !ok {
				return session
			}
			return f(agg, session)
		})
}

// sessionAggregate is Kafka's KStreamSessionWindowAggregate. merge folds one
// found session's aggregate into the running one (ok: there is one yet);
// fold then adds the record.
func sessionAggregate[K, V, A any](s SessionWindowedStream[K, V], opts []Option,
	fold func(k K, v V, agg A, ok bool) A, merge func(k K, agg A, ok bool, session A) A) Table[Windowed[K], A] {
	gap, grace := s.spec.gap.Milliseconds(), s.spec.grace.Milliseconds()
	ag := addAggregation(s.g, opts, func(o options, name string, ks serde.Serde[K], as serde.Serde[A]) *storeDef {
		return sessionStoreDef(name, !o.noLogging, windowRetention(s.g.s.b, o.retention, s.spec.gap+s.spec.grace, "session store "+name), ks, as)
	})
	b, n, store := ag.b, ag.n, ag.def.name
	n.build = func(t *task) (any, error) {
		out, err := children[Windowed[K], change[A]](t, n)
		if err != nil {
			return nil, err
		}
		st := t.stores[store].(*SessionStore[K, A])
		var merged []KeyValue[Windowed[K], A] // reused from record to record
		return processFunc[K, V](func(r Record[K, V]) error {
			if r.Tombstone {
				return nil
			}
			ts := r.Timestamp
			if ts < 0 {
				t.env.dropped("negative-timestamp")
				return nil
			}
			clear(merged)
			merged = merged[:0]
			var agg A
			found := false
			win := Windowed[K]{Key: r.Key, Start: ts, End: ts}
			now := max(t.streamTime, ts, st.s.StreamTime()) // as windowAggregate
			for kv, err := range st.FindSessions(r.Key, ts-gap, ts+gap) {
				if err != nil {
					return err
				}
				if kv.Key.End+gap+grace <= now {
					continue // closed: final, whether or not the store still has it
				}
				merged = append(merged, kv)
				agg, found = merge(r.Key, agg, found, kv.Value), true
				win.Start, win.End = min(win.Start, kv.Key.Start), max(win.End, kv.Key.End)
			}
			if win.End+gap+grace <= now {
				t.env.dropped("expired-window")
				return nil
			}
			if win.Start != ts || win.End != ts {
				for _, m := range merged {
					if err := st.Remove(m.Key); err != nil {
						return err
					}
					if err := out.process(Record[Windowed[K], change[A]]{Key: m.Key, Timestamp: m.Key.End, Headers: r.Headers,
						Value: change[A]{Old: m.Value, HasOld: true}}); err != nil {
						return err
					}
				}
			}
			agg = fold(r.Key, r.Value, agg, found)
			if err := st.Put(win, agg); err != nil {
				return err
			}
			return out.process(Record[Windowed[K], change[A]]{Key: win, Timestamp: win.End, Headers: r.Headers,
				Value: change[A]{New: agg, HasNew: true}})
		}), nil
	}
	return Table[Windowed[K], A]{
		b: b, n: n, ks: SessionWindowedSerde(ag.ks), vs: ag.as, store: store,
		lookupStores: []*storeDef{ag.def},
		lookup: func(t *task) (func(Windowed[K]) (A, bool, error), error) {
			st, ok := t.stores[store].(*SessionStore[K, A])
			if !ok {
				return nil, fmt.Errorf("%w: store %q is not in task %s", ErrTopology, store, t.id)
			}
			return st.Get, nil
		},
		win: &tableWindows[Windowed[K]]{end: windowEnd[K], grace: gap + grace},
	}
}
