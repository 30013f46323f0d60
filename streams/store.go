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
type KeyValueStore[K, V any] struct {
	s    *state.KeyValue
	ks   serde.Serde[K]
	vs   serde.Serde[V]
	kbuf []byte
	vbuf []byte
}

func newKeyValueStore[K, V any](s *state.KeyValue, ks serde.Serde[K], vs serde.Serde[V]) *KeyValueStore[K, V] {
	return &KeyValueStore[K, V]{s: s, ks: ks, vs: vs}
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
	b, ok, err := s.s.Get(kb)
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
	return s.s.Put(kb, vb)
}

// Delete removes k.
func (s *KeyValueStore[K, V]) Delete(k K) error {
	kb, err := s.key(k)
	if err != nil {
		return err
	}
	return s.s.Delete(kb)
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
		return newKeyValueStore(t.env.db.KeyValue(name, t.id.Partition), ks, vs), nil
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
