package streams

import "github.com/runnel-io/runnel/streams/serde"

// aggregation is what every aggregation of a grouped stream (by key, by
// time window, by session) shares: its store, its node and the serdes of
// its key and aggregate.
type aggregation[K, A any] struct {
	b   *Builder
	n   *node
	def *storeDef
	ks  serde.Serde[K]
	as  serde.Serde[A]
}

// addAggregation adds the store newStore defines (named by Materialized,
// else "KSTREAM-AGGREGATE-STATE-STORE-<n>") and the KSTREAM-AGGREGATE node
// that uses it, below g's input (repartitioned if keys may have changed).
// The caller sets the node's build.
func addAggregation[K, V, A any](g GroupedStream[K, V], opts []Option,
	newStore func(o options, name string, ks serde.Serde[K], as serde.Serde[A]) *storeDef) aggregation[K, A] {
	b := g.s.b
	o := collect(opts)
	store := o.store
	if store == "" {
		store = b.newName("KSTREAM-AGGREGATE-STATE-STORE")
	}
	s := g.input(store)
	ks := s.ks
	if ks == nil {
		ks = DefaultSerde[K]()
	}
	as := serdeOf[A](b, o.valueSerde, "aggregate")
	// The store first, so that the node's generated name numbers after the
	// store's, as in Kafka Streams (KSTREAM-AGGREGATE-STATE-STORE-0000000001,
	// KSTREAM-AGGREGATE-0000000002).
	def := newStore(o, store, ks, as)
	b.addStore(def)
	n := b.addNode(kindProcessor, "KSTREAM-AGGREGATE", o.name, s.n)
	n.stores = append(n.stores, def)
	return aggregation[K, A]{b: b, n: n, def: def, ks: ks, as: as}
}
