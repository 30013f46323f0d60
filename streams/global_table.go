package streams

import (
	"fmt"
	"strings"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/runnel-io/runnel/streams/serde"
	"github.com/runnel-io/runnel/streams/state"
)

// GlobalTable is a table that every app instance holds whole: each
// instance reads all partitions of its topic into a local store before it
// processes anything, and keeps reading as the topic grows. Streams join it
// on a key they compute from each record (JoinGlobal), with no
// co-partitioning and no repartition: Kafka Streams' GlobalKTable. It suits
// small, slowly changing reference data; its store has no changelog, since
// the topic itself is one.
type GlobalTable[K, V any] struct {
	b  *Builder
	g  *globalDef
	ks serde.Serde[K]
	vs serde.Serde[V]
}

// globalPartition is the state DB partition a global table's store lives
// in: all partitions of its topic in one.
const globalPartition int32 = -1

// globalNames is how many generated names a global table takes (store,
// source, processor), though its nodes are not in the graph of tasks.
const globalNames = 3

// globalDef is a global table, outside the graph of tasks.
type globalDef struct {
	topic, store string
	source, proc string // node names, for Describe
	// open returns the function that applies one record of the topic to
	// the table's store in db; a record it cannot decode is an error
	// wrapping ErrBadRecord, which leaves the store as it was.
	open func(db *state.DB) func(r *kgo.Record) error
	// handle returns the store's typed handle (*KeyValueStore[K, V]).
	handle func(db *state.DB) any
}

// GlobalTableFrom reads a topic as a global table. Keys and values are
// decoded with the KeySerde and ValueSerde options or the defaults of K and
// V. Options: Materialized (the store's name, else
// "<topic>-STATE-STORE-<n>"), Named (the source node's name).
func GlobalTableFrom[K, V any](b *Builder, topic string, opts ...Option) GlobalTable[K, V] {
	o := collect(opts)
	base := len(b.nodes) + len(b.stores) + globalNames*len(b.globals)
	g := &globalDef{
		topic:  topic,
		store:  o.store,
		source: o.name,
		proc:   fmt.Sprintf("KTABLE-SOURCE-%010d", base+2),
	}
	if g.store == "" {
		g.store = fmt.Sprintf("%s-STATE-STORE-%010d", topic, base)
	}
	if g.source == "" {
		g.source = fmt.Sprintf("KSTREAM-SOURCE-%010d", base+1)
	}
	ks := serdeOf[K](b, o.keySerde, "key")
	vs := serdeOf[V](b, o.valueSerde, "value")
	g.open = func(db *state.DB) func(r *kgo.Record) error {
		store := newKeyValueStore(db.KeyValue(g.store, globalPartition), ks, vs, 0)
		return func(r *kgo.Record) error {
			k, err := ks.Decode(r.Key)
			if err != nil {
				return fmt.Errorf("%w: global table %s: %s partition %d offset %d: key: %w", ErrBadRecord, g.store, r.Topic, r.Partition, r.Offset, err)
			}
			if r.Value == nil {
				return store.Delete(k)
			}
			v, err := vs.Decode(r.Value)
			if err != nil {
				return fmt.Errorf("%w: global table %s: %s partition %d offset %d: value: %w", ErrBadRecord, g.store, r.Topic, r.Partition, r.Offset, err)
			}
			return store.Put(k, v)
		}
	}
	g.handle = func(db *state.DB) any { return newKeyValueStore(db.KeyValue(g.store, globalPartition), ks, vs, 0) }
	b.globals = append(b.globals, g)
	return GlobalTable[K, V]{b: b, g: g, ks: ks, vs: vs}
}

// StoreName is the name of the global table's store.
func (g GlobalTable[K, V]) StoreName() string {
	if g.g == nil {
		return ""
	}
	return g.g.store
}

// JoinGlobal joins each record of the stream with the global table's value
// for the key keyOf computes from the record: Kafka Streams'
// KStream-GlobalKTable inner join. Records whose computed key the table
// lacks, and tombstones, produce nothing; the output keeps the stream's key,
// timestamp and headers. No repartition is needed, whatever happened to the
// stream's keys. Options: Named.
func (s Stream[K, V]) JoinGlobal[KG, VG, VR any](g GlobalTable[KG, VG], keyOf func(K, V) KG, joiner func(K, V, VG) VR, opts ...Option) Stream[K, VR] {
	return globalJoin(s, g, "KSTREAM-JOIN", keyOf, opts, func(k K, v V, vg VG, ok bool) (VR, bool) {
		if !ok {
			var zero VR
			return zero, false
		}
		return joiner(k, v, vg), true
	})
}

// LeftJoinGlobal is JoinGlobal that keeps every stream record: joiner gets
// ok false, and vg the zero VG, when the global table lacks the key.
func (s Stream[K, V]) LeftJoinGlobal[KG, VG, VR any](g GlobalTable[KG, VG], keyOf func(K, V) KG, joiner func(k K, v V, vg VG, ok bool) VR, opts ...Option) Stream[K, VR] {
	return globalJoin(s, g, "KSTREAM-LEFTJOIN", keyOf, opts, func(k K, v V, vg VG, ok bool) (VR, bool) {
		return joiner(k, v, vg, ok), true
	})
}

func globalJoin[K, V, KG, VG, VR any](s Stream[K, V], g GlobalTable[KG, VG], prefix string, keyOf func(K, V) KG, opts []Option, f func(K, V, VG, bool) (VR, bool)) Stream[K, VR] {
	if g.b != s.b || g.g == nil {
		s.b.fail(fmt.Errorf("%w: %s: the global table is not of this builder", ErrTopology, prefix))
		return Stream[K, VR]{b: s.b, n: s.n}
	}
	def := g.g
	out := lookupJoin(s, prefix, collect(opts).name, nil, func(t *task) (func(K, V) (VG, bool, error), error) {
		// No cache: the global client writes the store through another handle.
		store := newKeyValueStore(t.env.db.KeyValue(def.store, globalPartition), g.ks, g.vs, 0)
		return func(k K, v V) (VG, bool, error) { return store.Get(keyOf(k, v)) }, nil
	}, f)
	out.keyChanged = s.keyChanged
	return out
}

// checkGlobals fails Build for a global table whose topic or store is used
// elsewhere.
func (b *Builder) checkGlobals() error {
	topics, stores := map[string]bool{}, map[string]bool{}
	for _, g := range b.globals {
		switch {
		case g.topic == "":
			return fmt.Errorf("%w: global table %s: empty topic name", ErrTopology, g.store)
		case b.topics[g.topic] != nil:
			return fmt.Errorf("%w: topic %q read both as a global table and by %s (read it once)", ErrTopology, g.topic, b.topics[g.topic].name)
		case topics[g.topic]:
			return fmt.Errorf("%w: topic %q read as two global tables", ErrTopology, g.topic)
		case b.stores[g.store] != nil || stores[g.store]:
			return fmt.Errorf("%w: store %q defined twice", ErrTopology, g.store)
		}
		topics[g.topic], stores[g.store] = true, true
	}
	return nil
}

// describeGlobals writes the global tables as Kafka Streams does: each as a
// sub-topology of its own that generates no tasks, numbered after the
// others.
func (t *Topology) describeGlobals(sb *strings.Builder) {
	for i, g := range t.globals {
		fmt.Fprintf(sb, "   Sub-topology: %d for global store (will not generate tasks)\n", len(t.subs)+i)
		fmt.Fprintf(sb, "    Source: %s (topics: [%s])\n      --> %s\n", g.source, g.topic, g.proc)
		fmt.Fprintf(sb, "    Processor: %s (stores: [%s])\n      --> none\n      <-- %s\n\n", g.proc, g.store, g.source)
	}
}

// GlobalTopics returns the topics read as global tables, in the order the
// tables were defined.
func (t *Topology) GlobalTopics() []string {
	out := make([]string, len(t.globals))
	for i, g := range t.globals {
		out[i] = g.topic
	}
	return out
}
