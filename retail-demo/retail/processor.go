package retail

import (
	"container/heap"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"

	"github.com/runnel-io/runnel/streams"
)

// The processor's stores.
const (
	storeItems   = "items"   // key → item
	storePending = "pending" // events waiting for the watermark, in (ts, kind, seq) order
	storeMarks   = "marks"   // the task's watermarks and sequence
)

// The kinds of event, in the order they apply at equal timestamps: a
// delivery is on the shelf before a sale at the same millisecond.
const (
	kindShipment byte = 0
	kindSale     byte = 1
)

// orderer is the app's processor. Sales and shipments of one store and
// product land in the same partition of their topics, so one task sees
// both; it applies them in event-time order, whatever order the two
// topics' records arrive in: each event waits in the pending store until
// both inputs have moved past its timestamp (a later record, or a
// watermark record, on each), then it is applied with the others in
// (timestamp, kind, arrival) order. The outputs are then a function of
// the inputs alone, which the end-to-end test checks against a reference.
// A sale whose value has no ts is applied at once, at the task's current
// event time (a sale from the point-of-sale endpoint).
type orderer struct {
	cfg     Config
	md      *model
	ctx     *streams.ProcessorContext[string, Output]
	items   *streams.KeyValueStore[string, item]
	pending *streams.KeyValueStore[[]byte, []byte]
	marks   *streams.KeyValueStore[string, int64]
	// queue holds the pending store's events in order, read from the
	// store at the first record (after the task restored its stores), so
	// that releasing events needs no scan of the store.
	queue  pendingQueue
	loaded bool
}

func (p *orderer) Init(ctx *streams.ProcessorContext[string, Output]) error {
	p.ctx = ctx
	var err error
	if p.items, err = streams.GetKeyValueStore[string, item](ctx, storeItems); err != nil {
		return err
	}
	if p.pending, err = streams.GetKeyValueStore[[]byte, []byte](ctx, storePending); err != nil {
		return err
	}
	p.marks, err = streams.GetKeyValueStore[string, int64](ctx, storeMarks)
	return err
}

func (p *orderer) Close() error { return nil }

// mark reads a mark; a missing one is math.MinInt64.
func (p *orderer) mark(name string) (int64, error) {
	v, ok, err := p.marks.Get(name)
	if !ok {
		v = math.MinInt64
	}
	return v, err
}

// load fills the queue from the pending store.
func (p *orderer) load() error {
	p.loaded = true
	for kv, err := range p.pending.All() {
		if err != nil {
			return err
		}
		heap.Push(&p.queue, decodePending(kv.Key, kv.Value))
	}
	return nil
}

func (p *orderer) Process(r streams.Record[string, []byte]) error {
	if !p.loaded {
		if err := p.load(); err != nil {
			return err
		}
	}
	input, kind := "", byte(0)
	switch topic := p.ctx.Metadata().Topic; topic {
	case p.cfg.Topics.Sales:
		input, kind = "wm/sales", kindSale
	case p.cfg.Topics.Shipments:
		input, kind = "wm/shipments", kindShipment
	default:
		return fmt.Errorf("retail: a record from %q, which the app does not read", topic)
	}
	if wm, ok, err := watermarkOf(r.Headers); ok {
		if err != nil {
			return err
		}
		return p.advance(input, wm)
	}
	ts, err := eventTime(kind, r.Value)
	if err != nil {
		// A record the app cannot read is skipped (and counted by the
		// dashboard's lag), not fatal: the rest flows.
		return nil
	}
	released, err := p.mark("released")
	if err != nil {
		return err
	}
	if ts == 0 || ts < released {
		// Now (a point-of-sale sale), or late: apply at once.
		return p.apply(max(ts, released), kind, r.Key, r.Value)
	}
	seq, err := p.mark("seq")
	if err != nil {
		return err
	}
	seq = max(seq, 0) + 1
	if err := p.marks.Put("seq", seq); err != nil {
		return err
	}
	e := pendingEvent{ts: ts, kind: kind, seq: seq, key: r.Key, value: r.Value}
	if err := p.pending.Put(e.storeKey(), pendingValue(r.Key, r.Value)); err != nil {
		return err
	}
	heap.Push(&p.queue, e)
	return p.advance(input, ts)
}

// advance moves an input's watermark to t and applies every pending
// event below the lower of the two.
func (p *orderer) advance(input string, t int64) error {
	wm, err := p.mark(input)
	if err != nil || t <= wm {
		return err
	}
	if err := p.marks.Put(input, t); err != nil {
		return err
	}
	sales, err := p.mark("wm/sales")
	if err != nil {
		return err
	}
	ships, err := p.mark("wm/shipments")
	if err != nil {
		return err
	}
	released, err := p.mark("released")
	if err != nil {
		return err
	}
	w := min(sales, ships)
	if w <= released {
		return nil
	}
	if err := p.marks.Put("released", w); err != nil {
		return err
	}
	for len(p.queue) > 0 && p.queue[0].ts < w {
		e := heap.Pop(&p.queue).(pendingEvent)
		if err := p.pending.Delete(e.storeKey()); err != nil {
			return err
		}
		if err := p.apply(e.ts, e.kind, e.key, e.value); err != nil {
			return err
		}
	}
	return nil
}

// apply runs one event through the model and emits its outputs.
func (p *orderer) apply(ts int64, kind byte, key string, value []byte) error {
	store, product, ok := SplitKey(key)
	if !ok {
		return nil // not a store:product key: skipped
	}
	it, ok, err := p.items.Get(key)
	if err != nil {
		return err
	}
	if !ok {
		it = *p.md.newItem(ts)
	}
	if kind == kindSale {
		var s Sale
		if json.Unmarshal(value, &s) != nil {
			return nil
		}
		p.md.sale(&it, ts, s)
	} else {
		var sh Shipment
		if json.Unmarshal(value, &sh) != nil {
			return nil
		}
		p.md.shipment(&it, ts, sh)
	}
	ro, pc := p.md.decide(&it, ts, store, product)
	if err := p.items.Put(key, it); err != nil {
		return err
	}
	out := func(o Output) error {
		return p.ctx.Forward(streams.Record[string, Output]{Key: key, Value: o, Timestamp: ts})
	}
	if ro != nil {
		if err := out(Output{Reorder: ro}); err != nil {
			return err
		}
	}
	if pc != nil {
		if err := out(Output{Price: pc}); err != nil {
			return err
		}
	}
	return out(Output{Stock: &Stock{TS: ts, StoreID: store, ProductID: product, Stock: it.Stock, Velocity: it.velocity(),
		LostSales: it.Lost, PriceCts: it.price(), OnOrder: it.OnOrder}})
}

// eventTime reads an event's ts; 0 when the value has none.
func eventTime(kind byte, value []byte) (int64, error) {
	var v struct {
		TS *int64 `json:"ts"`
	}
	if err := json.Unmarshal(value, &v); err != nil {
		return 0, err
	}
	if v.TS == nil {
		return 0, nil
	}
	if *v.TS <= 0 {
		return 0, errors.New("retail: ts must be positive")
	}
	return *v.TS, nil
}

// pendingEvent is an event waiting for the watermark. Its store key
// orders events by timestamp (sign bit flipped, so that bytes sort as
// numbers), kind and arrival.
type pendingEvent struct {
	ts    int64
	kind  byte
	seq   int64
	key   string
	value []byte
}

func (e pendingEvent) storeKey() []byte {
	b := make([]byte, 17)
	binary.BigEndian.PutUint64(b, uint64(e.ts)^(1<<63))
	b[8] = e.kind
	binary.BigEndian.PutUint64(b[9:], uint64(e.seq)^(1<<63))
	return b
}

func (e pendingEvent) before(o pendingEvent) bool {
	if e.ts != o.ts {
		return e.ts < o.ts
	}
	if e.kind != o.kind {
		return e.kind < o.kind
	}
	return e.seq < o.seq
}

func pendingValue(key string, value []byte) []byte {
	b := binary.AppendUvarint(nil, uint64(len(key)))
	b = append(b, key...)
	return append(b, value...)
}

func decodePending(k, v []byte) pendingEvent {
	n, w := binary.Uvarint(v)
	return pendingEvent{ts: int64(binary.BigEndian.Uint64(k) ^ (1 << 63)), kind: k[8], seq: int64(binary.BigEndian.Uint64(k[9:]) ^ (1 << 63)),
		key: string(v[w : w+int(n)]), value: v[w+int(n):]}
}

// pendingQueue is a min-heap of pending events (container/heap).
type pendingQueue []pendingEvent

func (q pendingQueue) Len() int           { return len(q) }
func (q pendingQueue) Less(i, j int) bool { return q[i].before(q[j]) }
func (q pendingQueue) Swap(i, j int)      { q[i], q[j] = q[j], q[i] }
func (q *pendingQueue) Push(x any)        { *q = append(*q, x.(pendingEvent)) }
func (q *pendingQueue) Pop() any {
	old := *q
	e := old[len(old)-1]
	*q = old[:len(old)-1]
	return e
}

func itoa(v int64) string { return strconv.FormatInt(v, 10) }
