package streams

import (
	"fmt"
	"iter"

	"github.com/runnel-io/runnel/streams/serde"
	"github.com/runnel-io/runnel/streams/state"
)

// KeyValueStore is a task's typed view of a key-value state store: keys
// ordered by their encoded bytes. Writes are local until the task commits;
// then they reach the changelog topic and the instance's pebble DB
// together.
//
// A write-back cache of encoded values sits in front of the state DB (as
// Kafka Streams' record cache): a hot key is read and written without a
// pebble lookup, and reaches the DB once per commit (or when the cache is
// full), with only its latest value. It holds bytes, not values, so a value
// Get returns is the caller's own: changing it changes nothing stored.
type KeyValueStore[K, V any] struct {
	s     *state.KeyValue
	ks    serde.Serde[K]
	vs    serde.Serde[V]
	kbuf  []byte
	vbuf  []byte
	cache map[string]*cached // by encoded key; nil: no cache
	limit int                // entries the cache holds before it is flushed and cleared
	dirty int                // entries written since the last flush
}

// cached is a cache entry: the encoded value, or its absence (a delete or
// a miss), and whether the DB does not have it yet.
type cached struct {
	b     []byte
	ok    bool
	dirty bool
}

func newKeyValueStore[K, V any](s *state.KeyValue, ks serde.Serde[K], vs serde.Serde[V], cacheEntries int) *KeyValueStore[K, V] {
	st := &KeyValueStore[K, V]{s: s, ks: ks, vs: vs, limit: cacheEntries}
	if cacheEntries > 0 {
		st.cache = make(map[string]*cached)
	}
	return st
}

// flush writes the cache's dirty entries to the state DB's batch.
func (s *KeyValueStore[K, V]) flush() error {
	if s.dirty == 0 {
		return nil
	}
	for k, e := range s.cache {
		if !e.dirty {
			continue
		}
		var err error
		if e.ok {
			err = s.s.Put([]byte(k), e.b)
		} else {
			err = s.s.Delete([]byte(k))
		}
		if err != nil {
			return err
		}
		e.dirty = false
	}
	s.dirty = 0
	return nil
}

// entry returns kb's cache entry, adding an empty one (making room first
// when the cache is full) if there is none; fresh says it was added.
func (s *KeyValueStore[K, V]) entry(kb []byte) (e *cached, fresh bool, err error) {
	if e := s.cache[string(kb)]; e != nil {
		return e, false, nil
	}
	if len(s.cache) >= s.limit {
		if err := s.flush(); err != nil {
			return nil, false, err
		}
		clear(s.cache)
	}
	e = &cached{}
	s.cache[string(kb)] = e
	return e, true, nil
}

// getEncoded returns the encoded value of the encoded key kb, through the
// cache; the bytes are valid until the store's next call.
func (s *KeyValueStore[K, V]) getEncoded(kb []byte) ([]byte, bool, error) {
	if s.cache == nil {
		return s.s.Get(kb)
	}
	if e := s.cache[string(kb)]; e != nil {
		return e.b, e.ok, nil
	}
	b, ok, err := s.s.Get(kb)
	if err != nil {
		return nil, false, err
	}
	e, _, err := s.entry(kb)
	if err != nil {
		return nil, false, err
	}
	e.b, e.ok = append(e.b[:0], b...), ok
	return e.b, ok, nil
}

// setEncoded writes the encoded value vb (nil: a delete) of kb.
func (s *KeyValueStore[K, V]) setEncoded(kb, vb []byte, ok bool) error {
	if s.cache == nil {
		if !ok {
			return s.s.Delete(kb)
		}
		return s.s.Put(kb, vb)
	}
	e, _, err := s.entry(kb)
	if err != nil {
		return err
	}
	if !e.dirty {
		s.dirty++
	}
	e.b, e.ok, e.dirty = append(e.b[:0], vb...), ok, true
	return nil
}

func (s *KeyValueStore[K, V]) key(k K) ([]byte, error) {
	b, err := s.ks.Encode(s.kbuf[:0], k)
	if err != nil {
		return nil, fmt.Errorf("streams: store key: %w", err)
	}
	s.kbuf = b
	return b, nil
}

// Get returns the value stored for k.
func (s *KeyValueStore[K, V]) Get(k K) (v V, ok bool, err error) {
	kb, err := s.key(k)
	if err != nil {
		return v, false, err
	}
	b, ok, err := s.getEncoded(kb)
	if err != nil || !ok {
		return v, false, err
	}
	v, err = s.vs.Decode(b)
	if err != nil {
		return v, false, fmt.Errorf("streams: store value: %w", err)
	}
	return v, true, nil
}

// Put stores v for k.
func (s *KeyValueStore[K, V]) Put(k K, v V) error {
	kb, err := s.key(k)
	if err != nil {
		return err
	}
	vb, err := s.vs.Encode(s.vbuf[:0], v)
	if err != nil {
		return fmt.Errorf("streams: store value: %w", err)
	}
	s.vbuf = vb
	if vb == nil {
		vb = []byte{} // a nil value would be a delete
	}
	return s.setEncoded(kb, vb, true)
}

// Delete removes k.
func (s *KeyValueStore[K, V]) Delete(k K) error {
	kb, err := s.key(k)
	if err != nil {
		return err
	}
	return s.setEncoded(kb, nil, false)
}

// All iterates over every entry in key order. An error (a value its serde
// cannot decode, a read error) ends the iteration as its last pair.
func (s *KeyValueStore[K, V]) All() iter.Seq2[KeyValue[K, V], error] {
	return s.iterate(func() *state.Iterator { return s.s.Range(nil, nil) })
}

// Range iterates over the keys in [from, to] in key order.
func (s *KeyValueStore[K, V]) Range(from, to K) iter.Seq2[KeyValue[K, V], error] {
	return s.iterate(func() *state.Iterator {
		f, err := s.ks.Encode(nil, from)
		if err != nil {
			return nil
		}
		t, err := s.ks.Encode(nil, to)
		if err != nil {
			return nil
		}
		return s.s.Range(f, append(t, 0)) // to inclusive: the next key after it
	})
}

func (s *KeyValueStore[K, V]) iterate(open func() *state.Iterator) iter.Seq2[KeyValue[K, V], error] {
	return func(yield func(KeyValue[K, V], error) bool) {
		if err := s.flush(); err != nil { // the DB's batch must have every write
			yield(KeyValue[K, V]{}, err)
			return
		}
		it := open()
		if it == nil {
			yield(KeyValue[K, V]{}, fmt.Errorf("streams: store range: cannot encode a bound"))
			return
		}
		defer it.Close()
		for it.Next() {
			k, err := s.ks.Decode(it.Key())
			if err != nil {
				yield(KeyValue[K, V]{}, fmt.Errorf("streams: store key: %w", err))
				return
			}
			v, err := s.vs.Decode(it.Value())
			if err != nil {
				yield(KeyValue[K, V]{}, fmt.Errorf("streams: store value: %w", err))
				return
			}
			if !yield(KeyValue[K, V]{k, v}, nil) {
				return
			}
		}
		if err := it.Err(); err != nil {
			yield(KeyValue[K, V]{}, err)
		}
	}
}

// StoreBuilder defines a state store for the processor API: add it with
// Builder.AddStore and connect processors to it with ConnectStores.
type StoreBuilder struct{ def *storeDef }

// NewKeyValueStore defines a key-value store named name, with the KeySerde
// and ValueSerde options or the default serdes of K and V, logged to the
// changelog topic "<application id>-<name>-changelog" unless
// WithoutChangelog is given.
func NewKeyValueStore[K, V any](b *Builder, name string, opts ...Option) StoreBuilder {
	o := collect(opts)
	ks := serdeOf[K](b, o.keySerde, "key")
	vs := serdeOf[V](b, o.valueSerde, "value")
	return StoreBuilder{def: kvStoreDef(name, !o.noLogging, ks, vs)}
}

func kvStoreDef[K, V any](name string, logged bool, ks serde.Serde[K], vs serde.Serde[V]) *storeDef {
	return &storeDef{name: name, kind: kvStore, logged: logged, keyCodec: newKeyCodec(ks.Encode), open: func(t *task) (any, error) {
		st := newKeyValueStore(t.env.db.KeyValue(name, t.id.Partition), ks, vs, t.env.cacheEntries)
		t.flushers = append(t.flushers, st.flush)
		return st, nil
	}}
}

// AddStore adds a store for processors to connect to.
func (b *Builder) AddStore(s StoreBuilder) {
	if s.def == nil {
		b.fail(fmt.Errorf("%w: AddStore of an empty StoreBuilder", ErrTopology))
		return
	}
	b.addStore(s.def)
}

// GetKeyValueStore returns the key-value store name of a processor's task;
// the processor must be connected to it and K and V must be the store's.
func GetKeyValueStore[K, V any](ctx StoreContext, name string) (*KeyValueStore[K, V], error) {
	return storeAs[*KeyValueStore[K, V]](ctx, name)
}

func storeAs[S any](ctx StoreContext, name string) (S, error) {
	h, err := ctx.storeHandle(name)
	if err != nil {
		var zero S
		return zero, err
	}
	s, ok := h.(S)
	if !ok {
		var zero S
		return zero, fmt.Errorf("%w: store %q is a %T, not a %T", ErrTopology, name, h, zero)
	}
	return s, nil
}
