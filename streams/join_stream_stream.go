package streams

import (
	"fmt"
	"math"

	"github.com/runnel-io/runnel/streams/serde"
)

// Join joins this stream with another by key within windows: Kafka
// Streams' KStream-KStream inner join. A record of this stream at time t
// meets the other stream's records with its key and a timestamp in
// [t - before, t + after] (see JoinWindows), whichever arrives first; each
// pair gives one output record, timestamped with the later of the two and
// carrying the headers of the record that arrived second.
//
// Both streams are buffered in window stores with changelogs, kept for
// before + after + grace. Stream time is the largest timestamp either
// stream brought to the join; a record whose window ended more than grace
// before it (t + after + grace < stream time) is dropped, as are
// tombstones. The streams must be co-partitioned; streams whose keys may
// have changed go through repartition topics first.
//
// Options: Named (the nodes "<name>-this-windowed", "<name>-this-join",
// ..., "<name>-merge"; the repartition topics "<name>-left" and
// "<name>-right"), Materialized (the stores' base name:
// "<name>-this-join-store", "<name>-other-join-store"; else named after
// the join nodes, "KSTREAM-JOINTHIS-<n>-store" ...), KeySerde, ValueSerde
// (this stream's values; the other stream's come from its source or the
// default), WithoutChangelog, Partitions.
func (s Stream[K, V]) Join[VO, VR any](other Stream[K, VO], joiner func(K, V, VO) VR, w JoinWindows, opts ...Option) Stream[K, VR] {
	return streamStreamJoin(s, other, w, false, false, opts, func(k K, v V, _ bool, vo VO, _ bool) VR { return joiner(k, v, vo) })
}

// LeftJoin is Join that also emits each record of this stream that met
// nothing, with ok false and the zero VO. It does so only once the record's
// window has closed for the other stream too (stream time > t + before +
// after + grace), so a record that meets a match, even a late one, is never
// emitted unmatched as well. Until then it waits in a third store
// ("KSTREAM-OUTERSHARED-<n>-store", or "<name>-left-shared-join-store").
func (s Stream[K, V]) LeftJoin[VO, VR any](other Stream[K, VO], joiner func(k K, v V, vo VO, ok bool) VR, w JoinWindows, opts ...Option) Stream[K, VR] {
	return streamStreamJoin(s, other, w, true, false, opts, func(k K, v V, _ bool, vo VO, ok bool) VR { return joiner(k, v, vo, ok) })
}

// OuterJoin is LeftJoin for both streams: a record of either stream that
// met nothing is emitted once its window has closed, with its value
// followed by true and the other side's zero value followed by false.
func (s Stream[K, V]) OuterJoin[VO, VR any](other Stream[K, VO], joiner func(k K, v V, okV bool, vo VO, okVO bool) VR, w JoinWindows, opts ...Option) Stream[K, VR] {
	return streamStreamJoin(s, other, w, true, true, opts, joiner)
}

// streamStreamJoin builds the join as Kafka Streams does: per side a
// WINDOWED node that admits and buffers the record and a JOIN node that
// probes the other side's buffer, then a MERGE node. The nodes of one task
// share their state through the MERGE node's instance.
func streamStreamJoin[K, V, VO, VR any](s Stream[K, V], other Stream[K, VO], w JoinWindows, leftOuter, rightOuter bool,
	opts []Option, joiner func(K, V, bool, VO, bool) VR) Stream[K, VR] {
	b := s.b
	o := collect(opts)
	if other.b != b {
		b.fail(fmt.Errorf("%w: stream-stream join: the other stream is not of this builder", ErrTopology))
		return Stream[K, VR]{b: b, n: s.n}
	}
	if err := w.check(); err != nil {
		b.fail(err)
		return Stream[K, VR]{b: b, n: s.n}
	}
	named := func(suffix string) string {
		if o.name == "" {
			return ""
		}
		return o.name + suffix
	}
	otherOpts := o
	otherOpts.valueSerde = nil // ValueSerde is this stream's
	s = repartitionForJoin(s, named("-left"), o)
	other = repartitionForJoin(other, named("-right"), otherOpts)
	ks := s.ks
	if o.keySerde != nil {
		ks = serdeOf[K](b, o.keySerde, "key")
	} else if ks == nil {
		ks = other.ks
	}
	if ks == nil {
		ks = DefaultSerde[K]()
	}
	vs := s.vs
	if o.valueSerde != nil || vs == nil {
		vs = serdeOf[V](b, o.valueSerde, "value")
	}
	vos := other.vs
	if vos == nil {
		vos = DefaultSerde[VO]()
	}

	thisPrefix, thisSuffix := "KSTREAM-JOINTHIS", "-this-join"
	if rightOuter {
		thisPrefix, thisSuffix = "KSTREAM-OUTERTHIS", "-outer-this-join"
	}
	otherPrefix, otherSuffix := "KSTREAM-JOINOTHER", "-other-join"
	if leftOuter {
		otherPrefix, otherSuffix = "KSTREAM-OUTEROTHER", "-outer-other-join"
	}
	thisWin := b.addNode(kindProcessor, "KSTREAM-WINDOWED", named("-this-windowed"), s.n)
	otherWin := b.addNode(kindProcessor, "KSTREAM-WINDOWED", named("-other-windowed"), other.n)
	thisGen := b.newName(thisPrefix)
	joinThis := b.addNode(kindProcessor, thisPrefix, named(thisSuffix), thisWin)
	otherGen := b.newName(otherPrefix)
	joinOther := b.addNode(kindProcessor, otherPrefix, named(otherSuffix), otherWin)
	merge := b.addNode(kindProcessor, "KSTREAM-MERGE", named("-merge"), joinThis, joinOther)

	thisStore, otherStore := thisGen+"-store", otherGen+"-store"
	pendStore := "KSTREAM-OUTERSHARED-" + thisGen[len(thisPrefix)+1:] + "-store"
	if o.store != "" {
		thisStore, otherStore = o.store+thisSuffix+"-store", o.store+otherSuffix+"-store"
		pendStore = o.store + "-left-shared-join-store"
		if rightOuter {
			pendStore = o.store + "-outer-shared-join-store"
		}
	}
	logged := !o.noLogging
	b.addStore(joinBufferDef(thisStore, w.retention(), logged, vs), thisWin, joinOther)
	b.addStore(joinBufferDef(otherStore, w.retention(), logged, vos), otherWin, joinThis)
	if leftOuter {
		b.addStore(joinPendingDef(pendStore, logged), joinThis, joinOther)
	}

	ms := joinWindowsMs{before: w.before.Milliseconds(), after: w.after.Milliseconds(), grace: w.grace.Milliseconds()}
	merge.build = func(t *task) (any, error) {
		out, err := children[K, VR](t, merge)
		if err != nil {
			return nil, err
		}
		left, lok := t.stores[thisStore].(*joinBuffer[V])
		right, rok := t.stores[otherStore].(*joinBuffer[VO])
		if !lok || !rok {
			return nil, fmt.Errorf("%w: join stores %s, %s are not in task %s", ErrTopology, thisStore, otherStore, t.id)
		}
		m := &streamJoinMerge[K, V, VO, VR]{out: out}
		c := &joinClock{w: ms, now: math.MinInt64, pendMin: math.MinInt64, dropped: t.env.dropped}
		c.expire = func() error {
			if err := left.ws.Expire(c.now); err != nil {
				return err
			}
			return right.ws.Expire(c.now)
		}
		if leftOuter {
			c.pending = t.stores[pendStore].(*joinPending)
			c.emit = pendingEmitter(ks, vs, vos, joiner, m)
		}
		m.left = &joinSide[K, V, VO, VR]{c: c, side: sideLeft, before: ms.before, after: ms.after,
			outer: leftOuter, otherOuter: rightOuter, own: left, other: right, ks: ks, vs: vs, out: m,
			join: func(k K, v V, vo VO) VR { return joiner(k, v, true, vo, true) }}
		m.right = &joinSide[K, VO, V, VR]{c: c, side: sideRight, before: ms.after, after: ms.before,
			outer: rightOuter, otherOuter: leftOuter, own: right, other: left, ks: ks, vs: vos, out: m,
			join: func(k K, vo VO, v V) VR { return joiner(k, v, true, vo, true) }}
		return m, nil
	}
	buildJoinSide(merge, thisWin, joinThis, func(m *streamJoinMerge[K, V, VO, VR]) *joinSide[K, V, VO, VR] { return m.left })
	buildJoinSide(merge, otherWin, joinOther, func(m *streamJoinMerge[K, V, VO, VR]) *joinSide[K, VO, V, VR] { return m.right })
	return Stream[K, VR]{b: b, n: merge, ks: ks}
}

// pendingEmitter returns the function that emits pending records whose
// window closed, each with the other side absent.
func pendingEmitter[K, V, VO, VR any](ks serde.Serde[K], vs serde.Serde[V], vos serde.Serde[VO], joiner func(K, V, bool, VO, bool) VR, out downstream[K, VR]) func(side byte, key []byte, ts int64, list []byte) error {
	return func(side byte, key []byte, ts int64, list []byte) error {
		k, err := ks.Decode(key)
		if err != nil {
			return fmt.Errorf("streams: join pending store key: %w", err)
		}
		return eachListValue(list, func(b []byte) error {
			var v V
			var vo VO
			var err error
			if side == sideLeft {
				v, err = vs.Decode(b)
			} else {
				vo, err = vos.Decode(b)
			}
			if err != nil {
				return fmt.Errorf("streams: join pending store value: %w", err)
			}
			return out.process(Record[K, VR]{Key: k, Value: joiner(k, v, side == sideLeft, vo, side == sideRight), Timestamp: ts})
		})
	}
}

// buildJoinSide sets the builds of one side's WINDOWED and JOIN nodes:
// both reach the side's state through the MERGE node's instance.
func buildJoinSide[K, V, VO, VR, VT, VX any](merge, win, join *node, side func(*streamJoinMerge[K, V, VO, VR]) *joinSide[K, VT, VX, VR]) {
	win.build = func(t *task) (any, error) {
		m, err := streamJoinMergeOf[K, V, VO, VR](t, merge)
		if err != nil {
			return nil, err
		}
		next, err := children[K, VT](t, win)
		if err != nil {
			return nil, err
		}
		return side(m).admitThen(next), nil
	}
	join.build = func(t *task) (any, error) {
		m, err := streamJoinMergeOf[K, V, VO, VR](t, merge)
		if err != nil {
			return nil, err
		}
		return processFunc[K, VT](side(m).probe), nil
	}
}

// streamJoinMerge is the MERGE node's instance: it forwards both sides'
// results and holds the state the join's nodes share in one task.
type streamJoinMerge[K, V, VO, VR any] struct {
	out   downstream[K, VR]
	left  *joinSide[K, V, VO, VR]
	right *joinSide[K, VO, V, VR]
}

func (m *streamJoinMerge[K, V, VO, VR]) process(r Record[K, VR]) error { return m.out.process(r) }

func streamJoinMergeOf[K, V, VO, VR any](t *task, merge *node) (*streamJoinMerge[K, V, VO, VR], error) {
	inst, err := t.instance(merge)
	if err != nil {
		return nil, err
	}
	m, ok := inst.(*streamJoinMerge[K, V, VO, VR])
	if !ok {
		return nil, fmt.Errorf("%w: %s is a %T", ErrTopology, merge.name, inst)
	}
	return m, nil
}

type joinWindowsMs struct{ before, after, grace int64 }

// joinClock is what both sides of a stream-stream join share in one task:
// the join's stream time (Kafka Streams' shared TimeTracker) and the
// pending records of a left or outer join.
type joinClock struct {
	w       joinWindowsMs
	now     int64 // the largest timestamp admitted; math.MinInt64 before the first
	pendMin int64 // earliest pending time; math.MinInt64 unknown, math.MaxInt64 none
	pending *joinPending
	emit    func(side byte, key []byte, ts int64, list []byte) error
	expire  func() error
	dropped func(reason string)
}

// closed reports whether a record at ts can meet nothing more:
// no record of the other side that could still be admitted is in its
// window.
func (c *joinClock) closed(ts int64) bool { return ts+c.w.before+c.w.after+c.w.grace < c.now }

// emitClosed emits the pending records whose window has closed.
func (c *joinClock) emitClosed() error {
	if c.pending == nil || c.pendMin == math.MaxInt64 || (c.pendMin != math.MinInt64 && !c.closed(c.pendMin)) {
		return nil
	}
	next, err := c.pending.drain(c.closed, c.emit)
	c.pendMin = next
	return err
}

func (c *joinClock) pend(side byte, kb []byte, ts int64, vb []byte) error {
	if c.pendMin != math.MinInt64 {
		c.pendMin = min(c.pendMin, ts)
	}
	return c.pending.add(side, kb, ts, vb)
}

// joinSide is one side of a stream-stream join in one task: VT is this
// side's value type, VX the other's.
type joinSide[K, VT, VX, VR any] struct {
	c                 *joinClock
	side              byte
	before, after     int64 // the window around a record of this side
	outer, otherOuter bool  // whether this side's, the other side's unmatched records are emitted
	own               *joinBuffer[VT]
	other             *joinBuffer[VX]
	ks                serde.Serde[K]
	vs                serde.Serde[VT]
	join              func(K, VT, VX) VR
	out               downstream[K, VR]
	kbuf, vbuf        []byte // the record admitted last, encoded; probe reuses them
}

// admitThen is the WINDOWED node's instance: it admits each record and
// passes on those it buffered.
func (s *joinSide[K, VT, VX, VR]) admitThen(next downstream[K, VT]) downstream[K, VT] {
	return processFunc[K, VT](func(r Record[K, VT]) error {
		ok, err := s.admit(r)
		if err != nil || !ok {
			return err
		}
		return next.process(r)
	})
}

// admit advances the join's stream time, drops the record if it is late
// or a tombstone, and otherwise buffers it.
func (s *joinSide[K, VT, VX, VR]) admit(r Record[K, VT]) (bool, error) {
	c := s.c
	if r.Tombstone {
		c.dropped("join-null-value")
		return false, nil
	}
	c.now = max(c.now, r.Timestamp)
	if r.Timestamp+s.after+c.w.grace < c.now {
		c.dropped("expired-window")
		return false, nil
	}
	kb, err := s.ks.Encode(s.kbuf[:0], r.Key)
	if err != nil {
		return false, fmt.Errorf("streams: join key: %w", err)
	}
	s.kbuf = kb
	vb, err := s.vs.Encode(s.vbuf[:0], r.Value)
	if err != nil {
		return false, fmt.Errorf("streams: join value: %w", err)
	}
	s.vbuf = vb
	if err := s.own.add(kb, r.Timestamp, vb); err != nil {
		return false, err
	}
	return true, c.expire()
}

// probe is the JOIN node's instance: it emits the pending records that
// closed, then joins the record (just admitted by its parent) with the
// other side's records in its window, or leaves it pending.
func (s *joinSide[K, VT, VX, VR]) probe(r Record[K, VT]) error {
	c := s.c
	if r.Timestamp == c.now {
		if err := c.emitClosed(); err != nil {
			return err
		}
	}
	ts := r.Timestamp
	found := false
	err := s.other.fetch(s.kbuf, max(0, ts-s.before), max(0, ts+s.after), func(ots int64, vx VX) error {
		found = true
		if s.otherOuter {
			if err := c.pending.remove(sideLeft+sideRight-s.side, s.kbuf, ots); err != nil {
				return err
			}
		}
		return s.out.process(Record[K, VR]{Key: r.Key, Value: s.join(r.Key, r.Value, vx), Timestamp: max(ts, ots), Headers: r.Headers})
	})
	if err != nil || found || !s.outer {
		return err
	}
	return c.pend(s.side, s.kbuf, ts, s.vbuf)
}
