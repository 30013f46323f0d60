package streams

import (
	"fmt"
	"math"
)

// tableWindows is what Suppress knows of a windowed table: when each key's
// window closes (end + grace <= stream time).
type tableWindows[K any] struct {
	end   func(K) int64
	grace int64 // ms; for sessions gap + grace, as Kafka's suppression uses
}

// Suppressed says which updates of a table Suppress holds back. The only
// kind is UntilWindowCloses.
type Suppressed struct{ untilWindowCloses bool }

// UntilWindowCloses holds back every update of a windowed table until its
// window closes, then emits the window's final value once: Kafka Streams'
// Suppressed.untilWindowCloses with an unbounded buffer.
func UntilWindowCloses() Suppressed { return Suppressed{untilWindowCloses: true} }

// Suppress holds back the updates of a windowed table (the result of a
// windowed or session-windowed Count, Reduce or Aggregate, maybe filtered
// or mapped) and emits only each window's final result, once stream time
// reaches the window's end + grace (for sessions end + gap + grace): the
// moment the aggregation stops taking records for it. Deletions (sessions
// merged away) are not emitted. Nothing is emitted without records: stream
// time moves only with them.
//
// The buffer is a key-value store ("KTABLE-SUPPRESS-STATE-STORE-<n>", or
// "<name>-store" with Named; Materialized sets it) logged to a compacted
// changelog, ordered by window end. It also holds the stream time the
// suppression has reached, so that a restarted task, whose stream time
// starts over (Kafka keeps it in the committed offsets' metadata; Runnel
// does not), neither loses a buffered window nor emits a second final for
// one it already emitted: an update for a window that closed before is
// dropped ("expired-window"). Emitting a final and deleting it from the
// buffer are committed together; with exactly-once each final is emitted
// once, with at-least-once a crash between them may emit it again.
// Headers of buffered updates are not kept. ValueSerde sets the serde the
// buffer stores values with (default: the table's, or V's default).
func (t Table[K, V]) Suppress(s Suppressed, opts ...Option) Table[K, V] {
	b := t.b
	o := collect(opts)
	n := b.addNode(kindProcessor, "KTABLE-SUPPRESS", o.name, t.n)
	if !s.untilWindowCloses {
		b.fail(fmt.Errorf("%w: %s: empty Suppressed (use UntilWindowCloses())", ErrTopology, n.name))
	}
	if t.win == nil {
		b.fail(fmt.Errorf("%w: %s: Suppress(UntilWindowCloses()) needs a windowed table (from WindowedBy or SessionWindowedBy)", ErrTopology, n.name))
		return t
	}
	store := o.store
	switch {
	case store != "":
	case o.name != "":
		store = o.name + "-store"
	default:
		store = b.newName("KTABLE-SUPPRESS-STATE-STORE")
	}
	ks := t.ks
	if ks == nil {
		ks = DefaultSerde[K]()
	}
	vs := t.vs
	if o.valueSerde != nil || vs == nil {
		vs = serdeOf[V](b, o.valueSerde, "value")
	}
	def := &storeDef{name: store, kind: kvStore, logged: !o.noLogging, open: func(tk *task) (any, error) {
		return &suppressBuffer[K, V]{s: tk.env.db.KeyValue(store, tk.id.Partition), ks: ks, vs: vs}, nil
	}}
	b.addStore(def, n)
	win := t.win
	n.build = func(tk *task) (any, error) {
		out, err := children[K, change[V]](tk, n)
		if err != nil {
			return nil, err
		}
		buf := tk.stores[store].(*suppressBuffer[K, V])
		p := &suppressor[K, V]{t: tk, buf: buf, win: win, out: out, seen: math.MinInt64}
		if err := p.load(); err != nil {
			return nil, err
		}
		tk.onStreamTime(p.advance)
		return p, nil
	}
	return Table[K, V]{b: b, n: n, ks: ks, vs: vs, win: win, lookup: t.lookup, lookupStores: t.lookupStores}
}

// suppressor is the KTABLE-SUPPRESS node of one task.
type suppressor[K, V any] struct {
	t    *task
	buf  *suppressBuffer[K, V]
	win  *tableWindows[K]
	out  downstream[K, change[V]]
	seen int64 // the largest stream time seen, restored from the buffer
}

func (p *suppressor[K, V]) load() error {
	ts, ok, err := p.buf.streamTime()
	if ok {
		p.seen = ts
	}
	return err
}

// observe moves the suppression's stream time up to the task's, keeping
// it in the buffer store.
func (p *suppressor[K, V]) observe(streamTime int64) error {
	if streamTime <= p.seen {
		return nil
	}
	p.seen = streamTime
	return p.buf.setStreamTime(streamTime)
}

// closed reports whether a window ending at end has closed.
func (p *suppressor[K, V]) closed(end int64) bool {
	return p.seen != math.MinInt64 && end <= p.seen-p.win.grace
}

func (p *suppressor[K, V]) process(r Record[K, change[V]]) error {
	if err := p.observe(p.t.streamTime); err != nil {
		return err
	}
	end := p.win.end(r.Key)
	var err error
	switch {
	case !r.Value.HasNew:
		err = p.buf.remove(r.Key, end) // a final result is never a deletion
	case p.closed(end):
		p.t.env.dropped("expired-window") // its final went out already
	default:
		err = p.buf.put(r.Key, end, r.Timestamp, r.Value.New)
	}
	if err != nil {
		return err
	}
	return p.emit()
}

// advance runs when stream time moves, whether or not the record that moved
// it reached this node.
func (p *suppressor[K, V]) advance(streamTime int64) error {
	if err := p.observe(streamTime); err != nil {
		return err
	}
	return p.emit()
}

// emit sends and removes every buffered window that has closed, in
// window end order.
func (p *suppressor[K, V]) emit() error {
	if p.seen == math.MinInt64 || p.seen-p.win.grace < math.MinInt64+1 {
		return nil
	}
	return p.buf.evict(p.seen-p.win.grace, func(k K, ts int64, v V) error {
		return p.out.process(Record[K, change[V]]{Key: k, Timestamp: ts, Value: change[V]{New: v, HasNew: true}})
	})
}
