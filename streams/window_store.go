package streams

import (
	"fmt"
	"iter"
	"math"
	"time"

	"github.com/runnel-io/runnel/streams/serde"
	"github.com/runnel-io/runnel/streams/state"
)

// WindowStore is a task's typed view of a window store: one value per key
// and window start (ms), for windows of one size. Windows that started more
// than the store's retention before the task's stream time are expired:
// reads skip them, Put drops them, and the task deletes them from disk as
// stream time advances. Writes are local until the task commits; then they
// reach the changelog topic (key + 8-byte start + 4-byte sequence number,
// Kafka's format) and the instance's pebble DB together.
type WindowStore[K, V any] struct {
	s    *state.Window
	c    windowCodec[K, V]
	size int64 // ms
}

// Put stores v for k in the window that starts at start (ms).
func (s *WindowStore[K, V]) Put(k K, start int64, v V) error {
	kb, vb, err := s.c.entry(k, v)
	if err != nil {
		return err
	}
	return s.s.Put(kb, start, vb)
}

// Delete removes k's window that starts at start.
func (s *WindowStore[K, V]) Delete(k K, start int64) error {
	kb, err := s.c.key(k)
	if err != nil {
		return err
	}
	return s.s.Put(kb, start, nil)
}

// Get returns the value of k's window that starts at start.
func (s *WindowStore[K, V]) Get(k K, start int64) (v V, ok bool, err error) {
	kb, err := s.c.key(k)
	if err != nil {
		return v, false, err
	}
	b, ok, err := s.s.Get(kb, start)
	if err != nil || !ok {
		return v, false, err
	}
	v, err = s.c.value(b)
	return v, err == nil, err
}

// Fetch iterates over k's windows that start in [from, to] (ms, both
// included), in start order. An error (a value its serde cannot decode, a
// read error) ends the iteration as its last pair.
func (s *WindowStore[K, V]) Fetch(k K, from, to int64) iter.Seq2[KeyValue[Windowed[K], V], error] {
	return s.c.fetch(k, func(kb []byte) *state.Iterator { return s.s.Fetch(kb, from, to) }, s.end)
}

// FetchAll iterates over the windows of every key that start in [from, to],
// ordered by start, then by encoded key.
func (s *WindowStore[K, V]) FetchAll(from, to int64) iter.Seq2[KeyValue[Windowed[K], V], error] {
	return func(yield func(KeyValue[Windowed[K], V], error) bool) {
		s.c.iterate(s.s.FetchAll(from, to), s.c.ks.Decode, s.end, yield)
	}
}

// All iterates over every live window, as FetchAll over all times.
func (s *WindowStore[K, V]) All() iter.Seq2[KeyValue[Windowed[K], V], error] {
	return s.FetchAll(math.MinInt64, math.MaxInt64)
}

// end is the end of the iterator's current window: start + size.
func (s *WindowStore[K, V]) end(it *state.Iterator) int64 {
	if it.Start() > math.MaxInt64-s.size {
		return math.MaxInt64
	}
	return it.Start() + s.size
}

// NewWindowStore defines a window store named name for windows of the
// given size, for the processor API (add it with Builder.AddStore). Keys
// and values use the KeySerde and ValueSerde options or the default serdes
// of K and V. The Retention option sets how long windows are kept after
// they start, measured in stream time; by default the window size (a window
// goes once stream time passes its end). The store is logged to the
// changelog topic "<application id>-<name>-changelog" (cleanup.policy
// compact,delete; retention.ms the store's retention plus one day, as Kafka
// Streams' windowstore.changelog.additional.retention.ms) unless
// WithoutChangelog is given.
func NewWindowStore[K, V any](b *Builder, name string, size time.Duration, opts ...Option) StoreBuilder {
	o := collect(opts)
	if size.Milliseconds() < 1 {
		b.fail(fmt.Errorf("%w: window store %q: size %v, want at least 1ms", ErrTopology, name, size))
	}
	ks := serdeOf[K](b, o.keySerde, "key")
	vs := serdeOf[V](b, o.valueSerde, "value")
	return StoreBuilder{def: windowStoreDef(name, !o.noLogging, size, windowRetention(b, o.retention, size, "window store "+name), ks, vs)}
}

func windowStoreDef[K, V any](name string, logged bool, size, retention time.Duration, ks serde.Serde[K], vs serde.Serde[V]) *storeDef {
	return &storeDef{name: name, kind: windowStore, logged: logged, retention: retention, keyCodec: newKeyCodec(ks.Encode), open: func(t *task) (any, error) {
		w := t.env.db.Window(name, t.id.Partition, retention)
		t.onStreamTime(w.Expire)
		return &WindowStore[K, V]{s: w, c: windowCodec[K, V]{what: "window", ks: ks, vs: vs}, size: size.Milliseconds()}, nil
	}}
}

// GetWindowStore returns the window store name of a processor's task; the
// processor must be connected to it and K and V must be the store's.
func GetWindowStore[K, V any](ctx StoreContext, name string) (*WindowStore[K, V], error) {
	return storeAs[*WindowStore[K, V]](ctx, name)
}
