// Package state: TEMPORARY stub until streams-state lands. NOT COMMITTED.
package state

import (
	"sort"
	"strconv"
	"strings"
	"time"
)

type DB struct {
	data, pend map[string][]byte
	del        map[string]bool
}

func OpenInMemory() (*DB, error) {
	return &DB{data: map[string][]byte{}, pend: map[string][]byte{}, del: map[string]bool{}}, nil
}
func (db *DB) Close() error { return nil }

type KeyValue struct {
	db     *DB
	prefix string
	store  string
	part   int32
}

func (db *DB) KeyValue(store string, partition int32) *KeyValue {
	return &KeyValue{db, store + "\x00" + strconv.Itoa(int(partition)) + "\x00", store, partition}
}
func (db *DB) Window(store string, partition int32, retention time.Duration) *Window { return nil }
func (db *DB) Session(store string, partition int32, retention time.Duration) *Session {
	return nil
}

type Window struct{}
type Session struct{}

func (s *KeyValue) Get(key []byte) ([]byte, bool, error) {
	k := s.prefix + string(key)
	if v, ok := s.db.pend[k]; ok {
		return v, true, nil
	}
	if s.db.del[k] {
		return nil, false, nil
	}
	v, ok := s.db.data[k]
	return v, ok, nil
}
func (s *KeyValue) Put(key, value []byte) error {
	if value == nil {
		return s.Delete(key)
	}
	k := s.prefix + string(key)
	s.db.pend[k] = append([]byte{}, value...)
	delete(s.db.del, k)
	return nil
}
func (s *KeyValue) Delete(key []byte) error {
	k := s.prefix + string(key)
	delete(s.db.pend, k)
	s.db.del[k] = true
	return nil
}
func (s *KeyValue) Restore(key, value []byte) error { return s.Put(key, value) }

type Iterator struct {
	keys, vals [][]byte
	i          int
}

func (s *KeyValue) Range(from, to []byte) *Iterator {
	merged := map[string][]byte{}
	for k, v := range s.db.data {
		merged[k] = v
	}
	for k := range s.db.del {
		delete(merged, k)
	}
	for k, v := range s.db.pend {
		merged[k] = v
	}
	var ks []string
	for k := range merged {
		if strings.HasPrefix(k, s.prefix) {
			uk := k[len(s.prefix):]
			if from != nil && uk < string(from) || to != nil && uk >= string(to) {
				continue
			}
			ks = append(ks, k)
		}
	}
	sort.Strings(ks)
	it := &Iterator{i: -1}
	for _, k := range ks {
		it.keys = append(it.keys, []byte(k[len(s.prefix):]))
		it.vals = append(it.vals, merged[k])
	}
	return it
}
func (it *Iterator) Next() bool    { it.i++; return it.i < len(it.keys) }
func (it *Iterator) Key() []byte   { return it.keys[it.i] }
func (it *Iterator) Value() []byte { return it.vals[it.i] }
func (it *Iterator) Start() int64  { return 0 }
func (it *Iterator) End() int64    { return 0 }
func (it *Iterator) Err() error    { return nil }
func (it *Iterator) Close() error  { return nil }

func (db *DB) Changes(fn func(store string, partition int32, key, value []byte) error) error {
	var ks []string
	for k := range db.pend {
		ks = append(ks, k)
	}
	for k := range db.del {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	for _, k := range ks {
		parts := strings.SplitN(k, "\x00", 3)
		if err := fn(parts[0], atoi(parts[1]), []byte(parts[2]), db.pend[k]); err != nil {
			return err
		}
	}
	return nil
}
func (db *DB) SetCheckpoint(store string, partition int32, offset int64)     {}
func (db *DB) Checkpoint(store string, partition int32) (int64, bool, error) { return 0, false, nil }
func (db *DB) Commit() error {
	for k, v := range db.pend {
		db.data[k] = v
	}
	for k := range db.del {
		delete(db.data, k)
	}
	db.pend = map[string][]byte{}
	db.del = map[string]bool{}
	return nil
}
func (db *DB) Discard()          { db.pend = map[string][]byte{}; db.del = map[string]bool{} }
func (db *DB) PendingBytes() int { return len(db.pend) * 16 }

func atoi(s string) int32 { n, _ := strconv.Atoi(s); return int32(n) }
