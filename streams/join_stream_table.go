package streams

import "fmt"

// JoinTable joins each record of the stream with the table's current value
// for its key: Kafka Streams' KStream-KTable inner join. Only stream records
// produce output, one per record whose key the table holds, with the
// stream record's timestamp and headers; a record whose key the table
// lacks, and a stream tombstone, produce nothing. Table updates produce
// nothing either: they change what later stream records meet.
//
// The stream and the table must be co-partitioned (their topics have the
// same partition count and the same partitioner), which Run checks. When an
// operator upstream may have changed the stream's keys, the stream first
// goes through a repartition topic ("<application id>-<name>-repartition",
// named by the Named option, else after the operator that changed the keys)
// that gets the table's partition count. Options: Named (the join node and
// the repartition topic), KeySerde and ValueSerde (the repartition topic's
// serdes), Partitions.
func (s Stream[K, V]) JoinTable[VT, VR any](t Table[K, VT], joiner func(K, V, VT) VR, opts ...Option) Stream[K, VR] {
	return streamTableJoin(s, t, "KSTREAM-JOIN", opts, func(k K, v V, vt VT, ok bool) (VR, bool) {
		if !ok {
			var zero VR
			return zero, false
		}
		return joiner(k, v, vt), true
	})
}

// LeftJoinTable is JoinTable that keeps every stream record: joiner gets
// ok false, and vt the zero VT, when the table has no value for the key.
func (s Stream[K, V]) LeftJoinTable[VT, VR any](t Table[K, VT], joiner func(k K, v V, vt VT, ok bool) VR, opts ...Option) Stream[K, VR] {
	return streamTableJoin(s, t, "KSTREAM-LEFTJOIN", opts, func(k K, v V, vt VT, ok bool) (VR, bool) {
		return joiner(k, v, vt, ok), true
	})
}

func streamTableJoin[K, V, VT, VR any](s Stream[K, V], t Table[K, VT], prefix string, opts []Option, f func(K, V, VT, bool) (VR, bool)) Stream[K, VR] {
	o := collect(opts)
	if t.b != s.b || t.lookup == nil {
		s.b.fail(fmt.Errorf("%w: %s: the table is not of this builder", ErrTopology, prefix))
		return Stream[K, VR]{b: s.b, n: s.n}
	}
	s = repartitionForJoin(s, o.name, o)
	lookup := t.lookup
	return lookupJoin(s, prefix, o.name, t.lookupStores, func(tk *task) (func(K, V) (VT, bool, error), error) {
		get, err := lookup(tk)
		if err != nil {
			return nil, err
		}
		return func(k K, _ V) (VT, bool, error) { return get(k) }, nil
	}, f)
}

// lookupJoin adds a node that joins each stream record with a value looked
// up for it (in a table of the same task, or a global table): f gives the
// output value, or false to emit nothing. The node connects to stores, so
// that the stream and the stores' tables run in one task.
func lookupJoin[K, V, VX, VR any](s Stream[K, V], prefix, name string, stores []*storeDef,
	lookup func(t *task) (func(K, V) (VX, bool, error), error), f func(K, V, VX, bool) (VR, bool)) Stream[K, VR] {
	n, out := derive(s, prefix, name, func(downstream[K, VR]) downstream[K, V] { return nil })
	n.stores = append(n.stores, stores...)
	n.build = func(t *task) (any, error) {
		next, err := children[K, VR](t, n)
		if err != nil {
			return nil, err
		}
		get, err := lookup(t)
		if err != nil {
			return nil, err
		}
		return processFunc[K, V](func(r Record[K, V]) error {
			if r.Tombstone {
				t.env.dropped("join-null-value") // as Kafka Streams: a null value joins nothing
				return nil
			}
			vx, ok, err := get(r.Key, r.Value)
			if err != nil {
				return err
			}
			v, emit := f(r.Key, r.Value, vx, ok)
			if !emit {
				return nil
			}
			return next.process(Record[K, VR]{Key: r.Key, Value: v, Timestamp: r.Timestamp, Headers: r.Headers})
		}), nil
	}
	out.ks = s.ks
	return out
}

// repartitionForJoin returns s, or s written through a repartition topic
// when its keys may have changed: a join needs each key's records in the
// task that holds the key. The topic is named name, else after the
// operator that made s, as Kafka Streams does.
func repartitionForJoin[K, V any](s Stream[K, V], name string, o options) Stream[K, V] {
	if !s.keyChanged {
		return s
	}
	if name == "" {
		name = s.n.name
	}
	if _, used := s.b.topics[name+"-repartition"]; used {
		name = s.b.newName("KSTREAM-REPARTITION") // the same stream joined twice
	}
	return repartition(s, name, o)
}
