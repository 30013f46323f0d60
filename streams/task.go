package streams

import (
	"fmt"
	"math"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/runnel-io/runnel/streams/serde"
	"github.com/runnel-io/runnel/streams/state"
)

// TaskID names a task: one partition of one subtopology ("1_3" is partition
// 3 of subtopology 1), as Kafka Streams' TaskId.
type TaskID struct {
	Subtopology int
	Partition   int32
}

func (id TaskID) String() string { return fmt.Sprintf("%d_%d", id.Subtopology, id.Partition) }

// env is what every task of one app instance shares: the state DB, the way
// out to Kafka and the app's settings. The App and the test driver fill it.
type env struct {
	appID string
	db    *state.DB
	// send hands an output record (sink, changelog or dead letter) on; its
	// Partition is already chosen.
	send func(r *kgo.Record) error
	// partitions returns a topic's partition count (sinks partition by it).
	partitions  func(topic string) (int32, error)
	onBadRecord BadRecordHandler
	dropped     func(reason string) // counts records dropped (bad timestamp, expired window)
	// cacheEntries is the size of each key-value store handle's cache (0:
	// none).
	cacheEntries int
	now          func() int64 // wall clock, ms
}

// topicName is the Kafka topic of a source or sink's topic: internal
// topics carry the application id as prefix.
func (e *env) topicName(n *node, topic string) string {
	if n.internal {
		return e.appID + "-" + topic
	}
	return topic
}

// task runs one subtopology on one partition: a deterministic core fed
// records and clock ticks, that writes outputs through env.send. It holds
// no goroutine and no lock: its owner calls it from one goroutine.
type task struct {
	id         TaskID
	topo       *Topology
	sub        *subtopology
	env        *env
	instances  map[*node]any
	inputs     map[string]rawInput // by source topic
	stores     map[string]any      // typed store handles by name
	streamTime int64
	meta       RecordMetadata
	streamPunc []*punctuation
	wallPunc   []*punctuation
	closers    []func() error
	flushers   []func() error // store caches, flushed to the state DB before its changes are read
	counts     []int64        // records taken in per node id, since the last metrics flush
	// partitioners by sink topic: Kafka's default partitioner
	partitioners map[string]kgo.TopicPartitioner
}

// rawInput is a source node's instance: it decodes and forwards.
type rawInput interface {
	processRaw(r *kgo.Record) error
}

// downstream is a node instance that takes records of one type.
type downstream[K, V any] interface {
	process(r Record[K, V]) error
}

func newTask(topo *Topology, id TaskID, e *env) (*task, error) {
	t := &task{
		id:           id,
		topo:         topo,
		sub:          topo.subs[id.Subtopology],
		env:          e,
		instances:    map[*node]any{},
		inputs:       map[string]rawInput{},
		stores:       map[string]any{},
		streamTime:   math.MinInt64,
		counts:       make([]int64, len(topo.nodes)),
		partitioners: map[string]kgo.TopicPartitioner{},
	}
	for _, s := range t.sub.stores {
		h, err := s.open(t)
		if err != nil {
			return nil, fmt.Errorf("streams: task %s: open store %s: %w", id, s.name, err)
		}
		t.stores[s.name] = h
	}
	for _, src := range t.sub.sources {
		inst, err := t.instance(src)
		if err != nil {
			t.close()
			return nil, err
		}
		for _, topic := range src.topics {
			t.inputs[e.topicName(src, topic)] = inst.(rawInput)
		}
	}
	return t, nil
}

// instance returns n's instance in this task, building it (and so its
// children) once: a node with two parents (Merge) is shared.
func (t *task) instance(n *node) (any, error) {
	if inst, ok := t.instances[n]; ok {
		return inst, nil
	}
	inst, err := n.build(t)
	if err != nil {
		return nil, fmt.Errorf("streams: task %s: node %s: %w", t.id, n.name, err)
	}
	t.instances[n] = inst
	return inst, nil
}

// children returns n's children's instances as one downstream.
func children[K, V any](t *task, n *node) (downstream[K, V], error) {
	var out fanout[K, V]
	for _, c := range n.children {
		inst, err := t.instance(c)
		if err != nil {
			return nil, err
		}
		d, ok := inst.(downstream[K, V])
		if !ok {
			return nil, fmt.Errorf("%w: %s cannot take the records of %s (%T)", ErrTopology, c.name, n.name, inst)
		}
		out = append(out, counted[K, V]{d: d, n: &t.counts[c.id]})
	}
	if len(out) == 1 {
		return out[0], nil
	}
	return out, nil
}

// fanout forwards each record to every child in order, as Kafka Streams'
// depth-first forwarding.
type fanout[K, V any] []downstream[K, V]

func (f fanout[K, V]) process(r Record[K, V]) error {
	for _, d := range f {
		if err := d.process(r); err != nil {
			return err
		}
	}
	return nil
}

// processFunc adapts a function to a downstream.
type processFunc[K, V any] func(Record[K, V]) error

func (f processFunc[K, V]) process(r Record[K, V]) error { return f(r) }

// process runs one input record through the task.
func (t *task) process(r *kgo.Record) error {
	in, ok := t.inputs[r.Topic]
	if !ok {
		return fmt.Errorf("streams: task %s does not read topic %q", t.id, r.Topic)
	}
	t.meta = RecordMetadata{Topic: r.Topic, Partition: r.Partition, Offset: r.Offset}
	err := in.processRaw(r)
	t.meta = RecordMetadata{Offset: -1}
	if err != nil {
		return err
	}
	return t.punctuate(t.streamPunc, t.streamTime)
}

// observe advances stream time to ts when ts is later: stream time is the
// largest timestamp the task has seen, so it never goes back.
func (t *task) observe(ts int64) {
	if ts > t.streamTime {
		t.streamTime = ts
	}
}

// punctuateWall runs the wall-clock punctuations due at now (ms).
func (t *task) punctuateWall(now int64) error { return t.punctuate(t.wallPunc, now) }

func (t *task) punctuate(ps []*punctuation, now int64) error {
	if now == math.MinInt64 {
		return nil
	}
	for _, p := range ps {
		if p.cancelled {
			continue
		}
		if p.next != math.MinInt64 && now < p.next {
			continue
		}
		// One call per due tick would replay hours after a long pause; like
		// Kafka Streams, call once and schedule the next tick after now.
		if err := p.fn(now); err != nil {
			return fmt.Errorf("streams: task %s: punctuation: %w", t.id, err)
		}
		if p.next == math.MinInt64 { // stream time: the first record fires it
			p.next = now + p.interval
		} else {
			p.next = now - (now-p.next)%p.interval + p.interval
		}
	}
	return nil
}

func (t *task) close() error {
	var first error
	for i := len(t.closers) - 1; i >= 0; i-- {
		if err := t.closers[i](); err != nil && first == nil {
			first = err
		}
	}
	t.closers = nil
	return first
}

// produce encodes and sends one record to topic, partitioned by key as
// Kafka's default partitioner (murmur2) unless partition >= 0.
func produce[K, V any](t *task, topic string, partition int32, ks serde.Serde[K], vs serde.Serde[V], r Record[K, V]) error {
	key, err := ks.Encode(nil, r.Key)
	if err != nil {
		return fmt.Errorf("streams: encode key for %s: %w", topic, err)
	}
	var value []byte
	if !r.Tombstone {
		if value, err = vs.Encode(nil, r.Value); err != nil {
			return fmt.Errorf("streams: encode value for %s: %w", topic, err)
		}
		if value == nil {
			value = []byte{}
		}
	}
	out := &kgo.Record{Topic: topic, Key: key, Value: value, Headers: r.Headers, Partition: partition}
	if r.Timestamp >= 0 {
		out.Timestamp = time.UnixMilli(r.Timestamp)
	}
	if partition < 0 {
		n, err := t.env.partitions(topic)
		if err != nil {
			return err
		}
		tp, ok := t.partitioners[topic]
		if !ok {
			tp = keyPartitioner.ForTopic(topic)
			t.partitioners[topic] = tp
		}
		out.Partition = int32(tp.Partition(out, int(n)))
	}
	return t.env.send(out)
}

// keyPartitioner is Kafka's default: murmur2 of the key bytes.
var keyPartitioner = kgo.StickyKeyPartitioner(nil)
