package streams

import (
	"fmt"
	"iter"

	"github.com/runnel-io/runnel/streams/serde"
	"github.com/runnel-io/runnel/streams/state"
)

// windowCodec encodes the keys and values of a typed window or session
// store into reused buffers, and decodes its iterators' entries.
type windowCodec[K, V any] struct {
	what string // "window" or "session", for errors
	ks   serde.Serde[K]
	vs   serde.Serde[V]
	kbuf []byte
	vbuf []byte
}

// key encodes k; the result is valid until the next call.
func (c *windowCodec[K, V]) key(k K) ([]byte, error) {
	b, err := c.ks.Encode(c.kbuf[:0], k)
	if err != nil {
		return nil, fmt.Errorf("streams: %s store key: %w", c.what, err)
	}
	c.kbuf = b
	return b, nil
}

// entry encodes k and v, never as a nil value (which would delete).
func (c *windowCodec[K, V]) entry(k K, v V) (kb, vb []byte, err error) {
	if kb, err = c.key(k); err != nil {
		return nil, nil, err
	}
	if vb, err = c.vs.Encode(c.vbuf[:0], v); err != nil {
		return nil, nil, fmt.Errorf("streams: %s store value: %w", c.what, err)
	}
	c.vbuf = vb
	if vb == nil {
		vb = []byte{}
	}
	return kb, vb, nil
}

// value decodes a stored value.
func (c *windowCodec[K, V]) value(b []byte) (V, error) {
	v, err := c.vs.Decode(b)
	if err != nil {
		return v, fmt.Errorf("streams: %s store value: %w", c.what, err)
	}
	return v, nil
}

// fetch iterates over the entries of one key that open returns, given the
// key's bytes: Fetch and FindSessions.
func (c *windowCodec[K, V]) fetch(k K, open func(kb []byte) *state.Iterator, end func(*state.Iterator) int64) iter.Seq2[KeyValue[Windowed[K], V], error] {
	return func(yield func(KeyValue[Windowed[K], V], error) bool) {
		kb, err := c.ks.Encode(nil, k) // not kbuf: the caller may use the store while iterating
		if err != nil {
			yield(KeyValue[Windowed[K], V]{}, fmt.Errorf("streams: %s store key: %w", c.what, err))
			return
		}
		c.iterate(open(kb), func([]byte) (K, error) { return k, nil }, end, yield)
	}
}

// iterate hands the entries of it to yield as windowed pairs, then closes
// it: key decodes the record key, end gives the window's end. An error ends
// the iteration as its last pair.
func (c *windowCodec[K, V]) iterate(it *state.Iterator, key func([]byte) (K, error), end func(*state.Iterator) int64, yield func(KeyValue[Windowed[K], V], error) bool) {
	defer it.Close()
	for it.Next() {
		k, err := key(it.Key())
		if err != nil {
			yield(KeyValue[Windowed[K], V]{}, fmt.Errorf("streams: %s store key: %w", c.what, err))
			return
		}
		v, err := c.value(it.Value())
		if err != nil {
			yield(KeyValue[Windowed[K], V]{}, err)
			return
		}
		if !yield(KeyValue[Windowed[K], V]{Windowed[K]{k, it.Start(), end(it)}, v}, nil) {
			return
		}
	}
	if err := it.Err(); err != nil {
		yield(KeyValue[Windowed[K], V]{}, err)
	}
}
