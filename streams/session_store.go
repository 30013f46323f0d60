package streams

import (
	"fmt"
	"iter"
	"math"
	"time"

	"github.com/runnel-io/runnel/streams/serde"
	"github.com/runnel-io/runnel/streams/state"
)

// SessionStore is a task's typed view of a session store: one value per
// key and session (its start and end, ms). Sessions that ended more than the
// store's retention before the task's stream time are expired. Its
// changelog keys are Kafka's: key + 8-byte end + 8-byte start.
type SessionStore[K, V any] struct {
	s *state.Session
	c windowCodec[K, V]
}

// Put stores v for the session w.Key from w.Start to w.End.
func (s *SessionStore[K, V]) Put(w Windowed[K], v V) error {
	kb, vb, err := s.c.entry(w.Key, v)
	if err != nil {
		return err
	}
	return s.s.Put(kb, w.Start, w.End, vb)
}

// Remove removes the session w.
func (s *SessionStore[K, V]) Remove(w Windowed[K]) error {
	kb, err := s.c.key(w.Key)
	if err != nil {
		return err
	}
	return s.s.Remove(kb, w.Start, w.End)
}

// Get returns the value of the session w (Kafka's fetchSession).
func (s *SessionStore[K, V]) Get(w Windowed[K]) (v V, ok bool, err error) {
	for kv, err := range s.FindSessions(w.Key, w.End, w.Start) {
		if err != nil {
			return v, false, err
		}
		if kv.Key.End > w.End {
			break // in end order: past it
		}
		if kv.Key.Start == w.Start {
			return kv.Value, true, nil
		}
	}
	return v, false, nil
}

// FindSessions iterates over k's sessions that end at or after earliestEnd
// and start at or before latestStart: the sessions a record at time ts
// would join, with earliestEnd = ts - gap and latestStart = ts + gap.
// Sessions come in end order, then start order. An error ends the
// iteration as its last pair.
func (s *SessionStore[K, V]) FindSessions(k K, earliestEnd, latestStart int64) iter.Seq2[KeyValue[Windowed[K], V], error] {
	return s.c.fetch(k, func(kb []byte) *state.Iterator { return s.s.FindSessions(kb, earliestEnd, latestStart) }, (*state.Iterator).End)
}

// Fetch iterates over every live session of k.
func (s *SessionStore[K, V]) Fetch(k K) iter.Seq2[KeyValue[Windowed[K], V], error] {
	return s.FindSessions(k, math.MinInt64, math.MaxInt64)
}

// NewSessionStore defines a session store named name for the processor API
// (add it with Builder.AddStore), keeping sessions for retention after they
// end, in stream time. Keys and values use the KeySerde and ValueSerde
// options or the default serdes; the changelog is as NewWindowStore's.
func NewSessionStore[K, V any](b *Builder, name string, retention time.Duration, opts ...Option) StoreBuilder {
	o := collect(opts)
	if retention.Milliseconds() < 1 {
		b.fail(fmt.Errorf("%w: session store %q: retention %v, want at least 1ms", ErrTopology, name, retention))
	}
	ks := serdeOf[K](b, o.keySerde, "key")
	vs := serdeOf[V](b, o.valueSerde, "value")
	return StoreBuilder{def: sessionStoreDef(name, !o.noLogging, retention, ks, vs)}
}

func sessionStoreDef[K, V any](name string, logged bool, retention time.Duration, ks serde.Serde[K], vs serde.Serde[V]) *storeDef {
	return &storeDef{name: name, kind: sessionStore, logged: logged, retention: retention, keyCodec: newKeyCodec(ks.Encode), open: func(t *task) (any, error) {
		s := t.env.db.Session(name, t.id.Partition, retention)
		t.onStreamTime(s.Expire)
		return &SessionStore[K, V]{s: s, c: windowCodec[K, V]{what: "session", ks: ks, vs: vs}}, nil
	}}
}

// GetSessionStore returns the session store name of a processor's task;
// the processor must be connected to it and K and V must be the store's.
func GetSessionStore[K, V any](ctx StoreContext, name string) (*SessionStore[K, V], error) {
	return storeAs[*SessionStore[K, V]](ctx, name)
}
