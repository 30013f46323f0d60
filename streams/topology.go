package streams

import (
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"
)

// ErrTopology is wrapped by every error Build returns: a topology that cannot
// run (a name used twice, a store no processor can reach, a serde of the
// wrong type, a topic read twice).
var ErrTopology = errors.New("streams: invalid topology")

// Builder collects the sources, operators, sinks and stores of one app.
// DSL calls never fail on their own: the first problem is kept and returned
// by Build, so a topology reads as one fluent chain.
type Builder struct {
	nodes  []*node
	stores map[string]*storeDef
	topics map[string]*node // source topic -> the source that reads it
	// partitionsOf holds the partition counts set for repartition topics.
	partitionsOf map[string]int32
	// globals are the global tables: outside the graph of tasks, each
	// read whole by every instance (global_table.go).
	globals []*globalDef
	err     error
}

// NewBuilder returns an empty topology builder.
func NewBuilder() *Builder {
	return &Builder{stores: map[string]*storeDef{}, topics: map[string]*node{}, partitionsOf: map[string]int32{}}
}

type nodeKind int

const (
	kindSource nodeKind = iota
	kindProcessor
	kindSink
)

// node is one vertex of the topology graph. The graph itself is untyped (for
// Describe, subtopologies and validation); typing lives in build, which
// makes the node's per-task instance and is written by the typed DSL call
// that added the node.
type node struct {
	id       int
	name     string
	kind     nodeKind
	parents  []*node
	children []*node
	topics   []string    // sources: the topics read; sinks: the topic written ("" when chosen per record)
	internal bool        // reads or writes a repartition topic
	stores   []*storeDef // stores the node's processor uses
	sub      int
	reset    OffsetReset

	// build returns the node's instance for one task: a downstream[K,V] of
	// the node's input types, or for a source a rawInput.
	build func(t *task) (any, error)
}

type storeKind int

const (
	kvStore storeKind = iota
	windowStore
	sessionStore
)

func (k storeKind) String() string {
	return [...]string{"key-value", "window", "session"}[k]
}

type storeDef struct {
	name      string
	kind      storeKind
	retention time.Duration // window and session stores
	logged    bool
	sub       int
	keyCodec  // for interactive queries
	// open returns the typed store handle of one task.
	open func(t *task) (any, error)
}

// repartitionTopic is an internal topic between two subtopologies. A
// partition count of 0 is decided at start: the largest partition count of
// the source topics of the subtopology that writes it.
type repartitionTopic struct {
	name       string
	partitions int32
	writer     *node // its sink
}

func (b *Builder) fail(err error) {
	if b.err == nil {
		b.err = err
	}
}

// addNode adds a node named by opts or, like Kafka Streams, by its kind and
// a counter ("KSTREAM-MAP-0000000003").
func (b *Builder) addNode(kind nodeKind, prefix, name string, parents ...*node) *node {
	n := &node{id: len(b.nodes), kind: kind}
	n.name = name
	if n.name == "" {
		n.name = b.newName(prefix)
	}
	for _, p := range parents {
		p.children = append(p.children, n)
		n.parents = append(n.parents, p)
	}
	b.nodes = append(b.nodes, n)
	return n
}

// newName makes a Kafka Streams-style generated name. The counter is the
// number of nodes and stores so far, so names depend on the order of DSL
// calls: name operators that own stores or topics to keep them stable.
func (b *Builder) newName(prefix string) string {
	return fmt.Sprintf("%s-%010d", prefix, len(b.nodes)+len(b.stores)+globalNames*len(b.globals))
}

func (b *Builder) addStore(s *storeDef, users ...*node) {
	if _, dup := b.stores[s.name]; dup {
		b.fail(fmt.Errorf("%w: store %q defined twice", ErrTopology, s.name))
		return
	}
	b.stores[s.name] = s
	for _, n := range users {
		n.stores = append(n.stores, s)
	}
}

func (b *Builder) addSourceTopics(n *node, topics []string) {
	if len(topics) == 0 {
		b.fail(fmt.Errorf("%w: source %s reads no topic", ErrTopology, n.name))
	}
	for _, topic := range topics {
		if topic == "" {
			b.fail(fmt.Errorf("%w: source %s: empty topic name", ErrTopology, n.name))
		}
		if other, dup := b.topics[topic]; dup {
			b.fail(fmt.Errorf("%w: topic %q read by both %s and %s (read it once and reuse the stream)", ErrTopology, topic, other.name, n.name))
		}
		b.topics[topic] = n
	}
	n.topics = topics
}

// Topology is a built, validated topology: what an App runs and a test
// driver drives. It is immutable and can run in any number of apps.
type Topology struct {
	nodes       []*node
	subs        []*subtopology
	stores      map[string]*storeDef
	topics      map[string]*node // source topic -> source node
	repartition []*repartitionTopic
	globals     []*globalDef
}

// subtopology is a connected part of the graph: the nodes one task runs.
// Repartition topics cut the graph into subtopologies.
type subtopology struct {
	id      int
	nodes   []*node
	sources []*node
	topics  []string // source topics, sorted
	stores  []*storeDef
}

// Build validates the topology and splits it into subtopologies.
func (b *Builder) Build() (*Topology, error) {
	if b.err != nil {
		return nil, b.err
	}
	names := map[string]bool{}
	for _, n := range b.nodes {
		if names[n.name] {
			return nil, fmt.Errorf("%w: two nodes named %q", ErrTopology, n.name)
		}
		names[n.name] = true
	}
	if len(b.topics) == 0 {
		return nil, fmt.Errorf("%w: no source", ErrTopology)
	}
	if err := b.checkGlobals(); err != nil {
		return nil, err
	}

	// Union-find over parent links and shared stores.
	parent := make([]int, len(b.nodes))
	for i := range parent {
		parent[i] = i
	}
	var find func(int) int
	find = func(i int) int {
		for parent[i] != i {
			parent[i] = parent[parent[i]]
			i = parent[i]
		}
		return i
	}
	union := func(a, c int) { parent[find(a)] = find(c) }
	storeUser := map[*storeDef]int{}
	for _, n := range b.nodes {
		for _, p := range n.parents {
			union(n.id, p.id)
		}
		for _, s := range n.stores {
			if u, ok := storeUser[s]; ok {
				union(n.id, u)
			} else {
				storeUser[s] = n.id
			}
		}
	}
	t := &Topology{nodes: b.nodes, stores: b.stores, topics: b.topics, globals: b.globals}
	byRoot := map[int]*subtopology{}
	for _, n := range b.nodes { // in id order: subtopologies numbered by their first node
		r := find(n.id)
		sub, ok := byRoot[r]
		if !ok {
			sub = &subtopology{id: len(t.subs)}
			byRoot[r] = sub
			t.subs = append(t.subs, sub)
		}
		n.sub = sub.id
		sub.nodes = append(sub.nodes, n)
		if n.kind == kindSource {
			sub.sources = append(sub.sources, n)
			sub.topics = append(sub.topics, n.topics...)
		}
	}
	for _, sub := range t.subs {
		sort.Strings(sub.topics)
		if len(sub.sources) == 0 {
			return nil, fmt.Errorf("%w: nodes %s read from no source", ErrTopology, sub.nodes[0].name)
		}
	}
	storeNames := make([]string, 0, len(b.stores))
	for name := range b.stores {
		storeNames = append(storeNames, name)
	}
	sort.Strings(storeNames)
	for _, name := range storeNames {
		s := b.stores[name]
		u, ok := storeUser[s]
		if !ok {
			return nil, fmt.Errorf("%w: store %q is used by no processor", ErrTopology, name)
		}
		s.sub = b.nodes[u].sub
		t.subs[s.sub].stores = append(t.subs[s.sub].stores, s)
	}
	for _, n := range b.nodes {
		if n.kind == kindSink && n.internal {
			t.repartition = append(t.repartition, &repartitionTopic{name: n.topics[0], writer: n, partitions: b.partitionsOf[n.topics[0]]})
		}
	}
	for _, r := range t.repartition {
		if src := b.topics[r.name]; src == nil || !src.internal {
			return nil, fmt.Errorf("%w: repartition topic %q has no reader", ErrTopology, r.name)
		}
	}
	return t, nil
}

// Describe returns the topology in Kafka Streams' TopologyDescription text:
// its subtopologies, each node with its topics, stores and links. Internal
// topic names are shown without the application id prefix.
func (t *Topology) Describe() string {
	var sb strings.Builder
	sb.WriteString("Topologies:\n")
	for _, sub := range t.subs {
		fmt.Fprintf(&sb, "   Sub-topology: %d\n", sub.id)
		for _, n := range sub.nodes {
			switch n.kind {
			case kindSource:
				fmt.Fprintf(&sb, "    Source: %s (topics: [%s])\n", n.name, strings.Join(n.topics, ", "))
			case kindProcessor:
				fmt.Fprintf(&sb, "    Processor: %s (stores: [%s])\n", n.name, strings.Join(storeNamesOf(n), ", "))
			case kindSink:
				topic := n.topics[0]
				if topic == "" {
					topic = "<chosen per record>"
				}
				fmt.Fprintf(&sb, "    Sink: %s (topic: %s)\n", n.name, topic)
			}
			if len(n.children) > 0 {
				fmt.Fprintf(&sb, "      --> %s\n", strings.Join(nodeNames(n.children), ", "))
			} else if n.kind != kindSink {
				sb.WriteString("      --> none\n")
			}
			if len(n.parents) > 0 {
				fmt.Fprintf(&sb, "      <-- %s\n", strings.Join(nodeNames(n.parents), ", "))
			}
		}
		sb.WriteString("\n")
	}
	t.describeGlobals(&sb)
	return sb.String()
}

// DescribeDOT returns the topology as a Graphviz digraph: one cluster per
// subtopology, topics as ellipses, stores as cylinders.
func (t *Topology) DescribeDOT() string {
	var sb strings.Builder
	sb.WriteString("digraph topology {\n  rankdir=LR;\n  node [shape=box];\n")
	var topics []string
	for _, sub := range t.subs {
		fmt.Fprintf(&sb, "  subgraph cluster_%d {\n    label=\"Sub-topology %d\";\n", sub.id, sub.id)
		for _, n := range sub.nodes {
			fmt.Fprintf(&sb, "    %q;\n", n.name)
		}
		sb.WriteString("  }\n")
		for _, n := range sub.nodes {
			for _, c := range n.children {
				fmt.Fprintf(&sb, "  %q -> %q;\n", n.name, c.name)
			}
			switch n.kind {
			case kindSource:
				for _, topic := range n.topics {
					fmt.Fprintf(&sb, "  %q -> %q;\n", "topic:"+topic, n.name)
					topics = append(topics, topic)
				}
			case kindSink:
				if n.topics[0] != "" {
					fmt.Fprintf(&sb, "  %q -> %q;\n", n.name, "topic:"+n.topics[0])
					topics = append(topics, n.topics[0])
				}
			}
			for _, s := range n.stores {
				fmt.Fprintf(&sb, "  %q -> %q [dir=both, style=dashed];\n", n.name, "store:"+s.name)
			}
		}
	}
	slices.Sort(topics)
	for _, topic := range slices.Compact(topics) {
		fmt.Fprintf(&sb, "  %q [shape=ellipse, label=%q];\n", "topic:"+topic, topic)
	}
	names := make([]string, 0, len(t.stores))
	for name := range t.stores {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		fmt.Fprintf(&sb, "  %q [shape=cylinder, label=%q];\n", "store:"+name, name)
	}
	sb.WriteString("}\n")
	return sb.String()
}

func nodeNames(ns []*node) []string {
	out := make([]string, len(ns))
	for i, n := range ns {
		out[i] = n.name
	}
	return out
}

func storeNamesOf(n *node) []string {
	out := make([]string, len(n.stores))
	for i, s := range n.stores {
		out[i] = s.name
	}
	return out
}

// SourceTopics returns the topics the app reads that it does not create:
// the user's input topics, sorted.
func (t *Topology) SourceTopics() []string {
	var out []string
	for topic, n := range t.topics {
		if !n.internal {
			out = append(out, topic)
		}
	}
	sort.Strings(out)
	return out
}
