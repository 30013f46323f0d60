package streams

import (
	"fmt"

	"github.com/runnel-io/runnel/streams/serde"
)

// Table is a changelog stream read as the latest value per key: Kafka
// Streams' KTable. A record updates its key; a tombstone deletes it.
// Operators on a table see each update with the value it replaced.
type Table[K, V any] struct {
	b  *Builder
	n  *node // its instances take Record[K, change[V]]
	ks serde.Serde[K]
	vs serde.Serde[V]
	// lookup builds, for one task, a read of the table's current value by
	// key; it reads the stores in lookupStores, which a node that looks up
	// the table (a join) must connect to.
	lookup       func(t *task) (func(K) (V, bool, error), error)
	lookupStores []*storeDef
	// store is the table's materialized store ("" when it is derived and
	// not materialized): interactive queries read it.
	store string
	// win says when each key's window closes, for a windowed table
	// (Suppress); nil otherwise.
	win *tableWindows[K]
}

// change is one update of a table: its new value (none for a deletion) and
// the value it replaced (none for an insertion).
type change[V any] struct {
	New, Old       V
	HasNew, HasOld bool
}

// TableFrom reads a topic as a table, materialized into a key-value store
// (named by the Materialized option, else "<topic>-STATE-STORE-<n>") with
// its own changelog.
func TableFrom[K, V any](b *Builder, topic string, opts ...Option) Table[K, V] {
	o := collect(opts)
	s := From[K, V](b, topic, opts...)
	name := o.store
	if name == "" {
		name = b.newName(topic + "-STATE-STORE")
	}
	return materialize(s, "KTABLE-SOURCE", "", name, !o.noLogging)
}

// materialize turns a stream of upserts and tombstones into a table kept in
// store name.
func materialize[K, V any](s Stream[K, V], prefix, nodeName, name string, logged bool) Table[K, V] {
	ks, vs := s.ks, s.vs
	if ks == nil {
		ks = DefaultSerde[K]()
	}
	if vs == nil {
		vs = DefaultSerde[V]()
	}
	n := s.b.addNode(kindProcessor, prefix, nodeName, s.n)
	def := kvStoreDef(name, logged, ks, vs)
	s.b.addStore(def, n)
	n.build = func(t *task) (any, error) {
		out, err := children[K, change[V]](t, n)
		if err != nil {
			return nil, err
		}
		store := t.stores[name].(*KeyValueStore[K, V])
		return processFunc[K, V](func(r Record[K, V]) error {
			old, hadOld, err := store.Get(r.Key)
			if err != nil {
				return err
			}
			if r.Tombstone {
				if !hadOld {
					return nil // deleting what is not there changes nothing
				}
				err = store.Delete(r.Key)
			} else {
				err = store.Put(r.Key, r.Value)
			}
			if err != nil {
				return err
			}
			return out.process(Record[K, change[V]]{Key: r.Key, Timestamp: r.Timestamp, Headers: r.Headers,
				Value: change[V]{New: r.Value, HasNew: !r.Tombstone, Old: old, HasOld: hadOld}})
		}), nil
	}
	return storeTable(s.b, n, def, ks, vs)
}

// storeTable is a table whose current values are those of a key-value store.
func storeTable[K, V any](b *Builder, n *node, def *storeDef, ks serde.Serde[K], vs serde.Serde[V]) Table[K, V] {
	return Table[K, V]{b: b, n: n, ks: ks, vs: vs, store: def.name, lookupStores: []*storeDef{def},
		lookup: func(t *task) (func(K) (V, bool, error), error) {
			store, ok := t.stores[def.name].(*KeyValueStore[K, V])
			if !ok {
				return nil, fmt.Errorf("%w: store %q is not in task %s", ErrTopology, def.name, t.id)
			}
			return store.Get, nil
		}}
}

// deriveTable adds a processor node below a table, taking and giving changes.
func deriveTable[K, V, V2 any](t Table[K, V], prefix, name string, make func(out downstream[K, change[V2]]) downstream[K, change[V]]) *node {
	n := t.b.addNode(kindProcessor, prefix, name, t.n)
	n.build = func(tk *task) (any, error) {
		out, err := children[K, change[V2]](tk, n)
		if err != nil {
			return nil, err
		}
		return make(out), nil
	}
	return n
}

// Filter keeps the entries for which keep returns true: an update to a
// value that does not pass deletes the key downstream.
func (t Table[K, V]) Filter(keep func(K, V) bool, opts ...Option) Table[K, V] {
	n := deriveTable(t, "KTABLE-FILTER", collect(opts).name, func(out downstream[K, change[V]]) downstream[K, change[V]] {
		return processFunc[K, change[V]](func(r Record[K, change[V]]) error {
			c := r.Value
			newOK := c.HasNew && keep(r.Key, c.New)
			oldOK := c.HasOld && keep(r.Key, c.Old)
			if !newOK && !oldOK {
				return nil // absent before and after, as far as downstream knows
			}
			var f change[V]
			if newOK {
				f.New, f.HasNew = c.New, true
			}
			if oldOK {
				f.Old, f.HasOld = c.Old, true
			}
			r.Value = f
			return out.process(r)
		})
	})
	parent := t.lookup
	return Table[K, V]{b: t.b, n: n, ks: t.ks, vs: t.vs, lookupStores: t.lookupStores, win: t.win,
		lookup: func(tk *task) (func(K) (V, bool, error), error) {
			get, err := parent(tk)
			if err != nil {
				return nil, err
			}
			return func(k K) (V, bool, error) {
				v, ok, err := get(k)
				if err != nil || !ok || !keep(k, v) {
					var zero V
					return zero, false, err
				}
				return v, true, nil
			}, nil
		}}
}

// MapValues maps every value; f is not called for deletions.
func (t Table[K, V]) MapValues[V2 any](f func(V) V2, opts ...Option) Table[K, V2] {
	n := deriveTable(t, "KTABLE-MAPVALUES", collect(opts).name, func(out downstream[K, change[V2]]) downstream[K, change[V]] {
		return processFunc[K, change[V]](func(r Record[K, change[V]]) error {
			c := change[V2]{HasNew: r.Value.HasNew, HasOld: r.Value.HasOld}
			if c.HasNew {
				c.New = f(r.Value.New)
			}
			if c.HasOld {
				c.Old = f(r.Value.Old)
			}
			return out.process(Record[K, change[V2]]{Key: r.Key, Value: c, Timestamp: r.Timestamp, Headers: r.Headers})
		})
	})
	parent := t.lookup
	return Table[K, V2]{b: t.b, n: n, ks: t.ks, lookupStores: t.lookupStores, win: t.win,
		lookup: func(tk *task) (func(K) (V2, bool, error), error) {
			get, err := parent(tk)
			if err != nil {
				return nil, err
			}
			return func(k K) (V2, bool, error) {
				v, ok, err := get(k)
				if err != nil || !ok {
					var zero V2
					return zero, false, err
				}
				return f(v), true, nil
			}, nil
		}}
}

// ToStream turns the table's updates into a stream: a record per update,
// a tombstone per deletion.
func (t Table[K, V]) ToStream(opts ...Option) Stream[K, V] {
	n := deriveTable(t, "KTABLE-TOSTREAM", collect(opts).name, func(out downstream[K, change[V]]) downstream[K, change[V]] { return nil })
	n.build = func(tk *task) (any, error) {
		out, err := children[K, V](tk, n)
		if err != nil {
			return nil, err
		}
		return processFunc[K, change[V]](func(r Record[K, change[V]]) error {
			return out.process(Record[K, V]{Key: r.Key, Value: r.Value.New, Tombstone: !r.Value.HasNew, Timestamp: r.Timestamp, Headers: r.Headers})
		}), nil
	}
	return Stream[K, V]{b: t.b, n: n, ks: t.ks, vs: t.vs}
}

// StoreName is the name of the store the table is materialized in, for
// interactive queries; "" for a derived table that is not materialized.
func (t Table[K, V]) StoreName() string { return t.store }
