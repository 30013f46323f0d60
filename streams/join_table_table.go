package streams

import "fmt"

// Join joins two tables by key into a table: Kafka Streams' KTable-KTable
// inner join. A key is in the result while both tables hold it, with the
// value joiner makes of their values. An update on either side updates the
// result (with the old result as its old value); a deletion on either side
// deletes the result, which ToStream writes as a tombstone.
//
// The tables must be co-partitioned (Run checks it). The result can be
// joined again: it reads both sides' stores. Options: Named (names the
// nodes "<name>-join-this", "<name>-join-other" and "<name>"),
// Materialized (keeps the result in a store of that name too, for
// interactive queries), ValueSerde (that store's value serde),
// WithoutChangelog.
func (t Table[K, V]) Join[VO, VR any](other Table[K, VO], joiner func(V, VO) VR, opts ...Option) Table[K, VR] {
	return tableJoin(t, other, "KTABLE-JOINTHIS", "KTABLE-JOINOTHER", opts, func(v V, okV bool, vo VO, okO bool) (VR, bool) {
		if !okV || !okO {
			var zero VR
			return zero, false
		}
		return joiner(v, vo), true
	})
}

// LeftJoin is Join that keeps every key of this table: joiner gets ok
// false, and vo the zero VO, while the other table lacks the key.
func (t Table[K, V]) LeftJoin[VO, VR any](other Table[K, VO], joiner func(v V, vo VO, ok bool) VR, opts ...Option) Table[K, VR] {
	return tableJoin(t, other, "KTABLE-LEFTTHIS", "KTABLE-LEFTOTHER", opts, func(v V, okV bool, vo VO, okO bool) (VR, bool) {
		if !okV {
			var zero VR
			return zero, false
		}
		return joiner(v, vo, okO), true
	})
}

// OuterJoin is Join that keeps every key of either table: each value is
// followed by whether its table holds the key (the value is the zero value
// when not; never both absent).
func (t Table[K, V]) OuterJoin[VO, VR any](other Table[K, VO], joiner func(v V, okV bool, vo VO, okVO bool) VR, opts ...Option) Table[K, VR] {
	return tableJoin(t, other, "KTABLE-OUTERTHIS", "KTABLE-OUTEROTHER", opts, func(v V, okV bool, vo VO, okO bool) (VR, bool) {
		if !okV && !okO {
			var zero VR
			return zero, false
		}
		return joiner(v, okV, vo, okO), true
	})
}

// tableJoin adds the two join nodes (each fed by one side's changes, each
// looking up the other side) and the merge node below them. f gives the
// result for a pair of values, or false when the key has none.
func tableJoin[K, V, VO, VR any](t Table[K, V], other Table[K, VO], thisPrefix, otherPrefix string, opts []Option, f func(V, bool, VO, bool) (VR, bool)) Table[K, VR] {
	b := t.b
	o := collect(opts)
	if other.b != b || t.lookup == nil || other.lookup == nil {
		b.fail(fmt.Errorf("%w: %s: both tables must be of this builder", ErrTopology, thisPrefix))
		return Table[K, VR]{b: b, n: t.n}
	}
	thisName, otherName := "", ""
	if o.name != "" {
		thisName, otherName = o.name+"-join-this", o.name+"-join-other"
	}
	thisLookup, otherLookup := t.lookup, other.lookup

	thisNode := b.addNode(kindProcessor, thisPrefix, thisName, t.n)
	thisNode.stores = append(thisNode.stores, other.lookupStores...)
	otherNode := b.addNode(kindProcessor, otherPrefix, otherName, other.n)
	otherNode.stores = append(otherNode.stores, t.lookupStores...)
	merge := b.addNode(kindProcessor, "KTABLE-MERGE", o.name, thisNode, otherNode)

	buildTableJoinSide(thisNode, otherLookup, f)
	buildTableJoinSide(otherNode, thisLookup, func(vo VO, okO bool, v V, okV bool) (VR, bool) { return f(v, okV, vo, okO) })

	stores := append(append([]*storeDef(nil), t.lookupStores...), other.lookupStores...)
	result := Table[K, VR]{b: b, n: merge, ks: t.ks, lookupStores: stores,
		lookup: func(tk *task) (func(K) (VR, bool, error), error) {
			getV, err := thisLookup(tk)
			if err != nil {
				return nil, err
			}
			getO, err := otherLookup(tk)
			if err != nil {
				return nil, err
			}
			return func(k K) (VR, bool, error) {
				var zero VR
				v, okV, err := getV(k)
				if err != nil {
					return zero, false, err
				}
				vo, okO, err := getO(k)
				if err != nil {
					return zero, false, err
				}
				r, ok := f(v, okV, vo, okO)
				return r, ok, nil
			}, nil
		}}
	if o.store == "" {
		merge.build = func(tk *task) (any, error) { return children[K, change[VR]](tk, merge) }
		return result
	}
	return materializeChanges(result, merge, o)
}

// buildTableJoinSide sets the build of a join node fed by one side's
// changes (values VT) that looks up the other side (VX): pair gives the
// result of a value of this side with the other side's, or false for none.
// It forwards the change from the old result to the new one, if there was
// or is a result.
func buildTableJoinSide[K, VT, VX, VR any](n *node, lookup func(*task) (func(K) (VX, bool, error), error), pair func(VT, bool, VX, bool) (VR, bool)) {
	n.build = func(tk *task) (any, error) {
		out, err := children[K, change[VR]](tk, n)
		if err != nil {
			return nil, err
		}
		get, err := lookup(tk)
		if err != nil {
			return nil, err
		}
		return processFunc[K, change[VT]](func(r Record[K, change[VT]]) error {
			vx, ok, err := get(r.Key)
			if err != nil {
				return err
			}
			var c change[VR]
			c.New, c.HasNew = pair(r.Value.New, r.Value.HasNew, vx, ok)
			c.Old, c.HasOld = pair(r.Value.Old, r.Value.HasOld, vx, ok)
			if !c.HasNew && !c.HasOld {
				return nil
			}
			return out.process(Record[K, change[VR]]{Key: r.Key, Value: c, Timestamp: r.Timestamp, Headers: r.Headers})
		}), nil
	}
}

// materializeChanges makes node n keep the table t's changes in the store
// o names and forward them with the stored old value; the table then reads
// its values from that store.
func materializeChanges[K, V any](t Table[K, V], n *node, o options) Table[K, V] {
	b := t.b
	ks := t.ks
	if ks == nil {
		ks = DefaultSerde[K]()
	}
	vs := serdeOf[V](b, o.valueSerde, "value")
	def := kvStoreDef(o.store, !o.noLogging, ks, vs)
	b.addStore(def, n)
	n.build = func(tk *task) (any, error) {
		out, err := children[K, change[V]](tk, n)
		if err != nil {
			return nil, err
		}
		store := tk.stores[def.name].(*KeyValueStore[K, V])
		return processFunc[K, change[V]](func(r Record[K, change[V]]) error {
			old, hadOld, err := store.Get(r.Key)
			if err != nil {
				return err
			}
			if !r.Value.HasNew && !hadOld {
				return nil
			}
			if r.Value.HasNew {
				err = store.Put(r.Key, r.Value.New)
			} else {
				err = store.Delete(r.Key)
			}
			if err != nil {
				return err
			}
			r.Value.Old, r.Value.HasOld = old, hadOld
			return out.process(r)
		}), nil
	}
	return storeTable(b, n, def, ks, vs)
}
