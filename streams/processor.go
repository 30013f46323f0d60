package streams

import (
	"fmt"
	"math"
	"time"
)

// Processor is the low-level processor API: a node that sees every record
// with its metadata, can use state stores, forward any number of records
// and schedule punctuations. The DSL's operators are built the same way.
//
// A task calls Init once before the first record, Process for each record
// and Close when the task closes (rebalance or shutdown), all from one
// goroutine.
type Processor[KIn, VIn, KOut, VOut any] interface {
	Init(ctx *ProcessorContext[KOut, VOut]) error
	Process(r Record[KIn, VIn]) error
	Close() error
}

// ProcessorContext is a processor's view of its task.
type ProcessorContext[K, V any] struct {
	t    *task
	node *node
	out  downstream[K, V]
}

// Forward sends a record to the node's children, depth first: when Forward
// returns, the children have processed it.
func (c *ProcessorContext[K, V]) Forward(r Record[K, V]) error {
	if c.out == nil {
		return nil
	}
	return c.out.process(r)
}

// Metadata says where the record being processed came from.
func (c *ProcessorContext[K, V]) Metadata() RecordMetadata { return c.t.meta }

// TaskID is the task this processor instance runs in.
func (c *ProcessorContext[K, V]) TaskID() TaskID { return c.t.id }

// ApplicationID is the app's id (its group id and internal topic prefix).
func (c *ProcessorContext[K, V]) ApplicationID() string { return c.t.env.appID }

// StreamTime is the largest record timestamp the task has seen (ms), or
// math.MinInt64 before its first record.
func (c *ProcessorContext[K, V]) StreamTime() int64 { return c.t.streamTime }

// WallClock is the task's wall clock in ms (the test driver's is set by the
// test).
func (c *ProcessorContext[K, V]) WallClock() int64 { return c.t.env.now() }

func (c *ProcessorContext[K, V]) storeHandle(name string) (any, error) {
	for _, s := range c.node.stores {
		if s.name == name {
			return c.t.stores[name], nil
		}
	}
	return nil, fmt.Errorf("%w: processor %s has no store %q (connect it with ConnectStores)", ErrTopology, c.node.name, name)
}

// StoreContext is what the store getters need: any ProcessorContext.
type StoreContext interface {
	storeHandle(name string) (any, error)
}

// PunctuationType says which clock drives a punctuation.
type PunctuationType int

const (
	// StreamTime punctuations fire when records advance stream time: first
	// at the first record after scheduling, then each time stream time
	// passes another interval. No records, no punctuation.
	StreamTime PunctuationType = iota
	// WallClockTime punctuations fire every interval of wall-clock time,
	// whether or not records arrive; the first one interval after scheduling.
	WallClockTime
)

type punctuation struct {
	interval  int64
	next      int64 // math.MinInt64: at the next chance
	fn        func(ts int64) error
	cancelled bool
}

// Cancellable stops a scheduled punctuation.
type Cancellable struct{ p *punctuation }

// Cancel stops the punctuation; it does not fire again.
func (c Cancellable) Cancel() {
	if c.p != nil {
		c.p.cancelled = true
	}
}

// Schedule calls fn every interval of the given clock with that clock's
// time (ms). Like Kafka Streams, a clock that jumps several intervals gives
// one call, not one per interval missed. An error from fn fails the task.
func (c *ProcessorContext[K, V]) Schedule(interval time.Duration, kind PunctuationType, fn func(ts int64) error) Cancellable {
	ms := interval.Milliseconds()
	if ms < 1 {
		ms = 1
	}
	p := &punctuation{interval: ms, next: math.MinInt64, fn: fn}
	if kind == WallClockTime {
		p.next = c.t.env.now() + ms
		c.t.wallPunc = append(c.t.wallPunc, p)
	} else {
		c.t.streamPunc = append(c.t.streamPunc, p)
	}
	return Cancellable{p}
}

// ConnectStores gives a Process node access to stores added with
// Builder.AddStore.
func ConnectStores(names ...string) Option {
	return optionFunc(func(o *options) { o.connect = append(o.connect, names...) })
}

// Process adds a processor made by supplier, one instance per task.
func (s Stream[K, V]) Process[K2, V2 any](supplier func() Processor[K, V, K2, V2], opts ...Option) Stream[K2, V2] {
	o := collect(opts)
	n := s.b.addNode(kindProcessor, "KSTREAM-PROCESSOR", o.name, s.n)
	for _, name := range o.connect {
		def, ok := s.b.stores[name]
		if !ok {
			s.b.fail(fmt.Errorf("%w: processor %s connects unknown store %q (add it with Builder.AddStore first)", ErrTopology, n.name, name))
			continue
		}
		n.stores = append(n.stores, def)
	}
	n.build = func(t *task) (any, error) {
		out, err := children[K2, V2](t, n)
		if err != nil {
			return nil, err
		}
		p := supplier()
		ctx := &ProcessorContext[K2, V2]{t: t, node: n, out: out}
		if err := p.Init(ctx); err != nil {
			return nil, fmt.Errorf("init: %w", err)
		}
		t.closers = append(t.closers, p.Close)
		return processFunc[K, V](p.Process), nil
	}
	return Stream[K2, V2]{b: s.b, n: n, keyChanged: true}
}
