package state

import (
	"bytes"
	"fmt"
)

// KeyValue is a key-value store partition ordered by key bytes.
type KeyValue struct {
	store
}

// KeyValue returns the key-value store partition (store, partition),
// registering the store on first use. The same handle is returned for the
// same arguments.
func (db *DB) KeyValue(store string, partition int32) *KeyValue {
	hk := handleKey{store, partition}
	if s := db.kvs[hk]; s != nil {
		return s
	}
	s := &KeyValue{store: db.newStore(store, partition, kindKeyValue, 0)}
	db.kvs[hk] = s
	return s
}

func (s *KeyValue) dataKey(key []byte) []byte {
	s.key = append(append(s.key[:0], s.prefix...), key...)
	return s.key
}

// Get returns the value of key. The slice is valid until the next call on
// the store.
func (s *KeyValue) Get(key []byte) (value []byte, ok bool, err error) {
	if err := s.check(); err != nil {
		return nil, false, err
	}
	return s.get(s.dataKey(key))
}

// Put sets key to value; a nil value deletes key.
func (s *KeyValue) Put(key, value []byte) error {
	if value == nil {
		return s.Delete(key)
	}
	if err := s.check(); err != nil {
		return err
	}
	if err := s.db.batch.Set(s.dataKey(key), value, nil); err != nil {
		return fmt.Errorf("state: put %s/%d: %w", s.reg.name, s.partition, err)
	}
	return nil
}

// Delete deletes key. Changes reports a tombstone for it even if key had no
// value, as Kafka Streams' logged stores do.
func (s *KeyValue) Delete(key []byte) error {
	if err := s.check(); err != nil {
		return err
	}
	if err := s.db.batch.Delete(s.dataKey(key), nil); err != nil {
		return fmt.Errorf("state: delete %s/%d: %w", s.reg.name, s.partition, err)
	}
	return nil
}

// bounds returns the pebble bounds of [from, to); nil means unbounded.
func (s *KeyValue) bounds(from, to []byte) (lo, hi []byte) {
	lo = append(append([]byte(nil), s.prefix...), from...)
	if to == nil {
		return lo, s.end
	}
	return lo, append(append([]byte(nil), s.prefix...), to...)
}

// Range iterates the keys in [from, to) in ascending order; a nil bound is
// unbounded.
func (s *KeyValue) Range(from, to []byte) *Iterator {
	return s.rangeIter(from, to, modeKV)
}

// ReverseRange iterates the keys in [from, to) in descending order; a nil
// bound is unbounded.
func (s *KeyValue) ReverseRange(from, to []byte) *Iterator {
	return s.rangeIter(from, to, modeKVReverse)
}

func (s *KeyValue) rangeIter(from, to []byte, mode iterMode) *Iterator {
	if err := s.check(); err != nil {
		return errIterator(err)
	}
	if from != nil && to != nil && bytes.Compare(from, to) >= 0 {
		return &Iterator{done: true}
	}
	lo, hi := s.bounds(from, to)
	it, err := newPebbleIter(&s.store, lo, hi)
	if err != nil {
		return errIterator(err)
	}
	return &Iterator{it: it, mode: mode, plen: len(s.prefix)}
}

// Restore applies one changelog record (the changelog key is the record key;
// a nil value deletes). It is visible once committed, and not reported by
// Changes: it came from the changelog.
func (s *KeyValue) Restore(changelogKey, value []byte) error {
	if err := s.check(); err != nil {
		return err
	}
	b := s.db.restoredBatch()
	var err error
	if value == nil {
		err = b.Delete(s.dataKey(changelogKey), nil)
	} else {
		err = b.Set(s.dataKey(changelogKey), value, nil)
	}
	if err != nil {
		return fmt.Errorf("state: restore %s/%d: %w", s.reg.name, s.partition, err)
	}
	return nil
}
