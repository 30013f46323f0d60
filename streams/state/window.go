package state

import (
	"encoding/binary"
	"fmt"
	"time"
)

// Window is a window store partition: values keyed by (key, window start in
// ms). Windows with start < stream time - retention are expired: reads skip
// them, Put drops them and Expire deletes them from disk a segment at a time.
type Window struct {
	segmented
	idx []byte // scratch for the time-index key
}

// Window returns the window store partition (store, partition), registering
// the store on first use. The segment interval, max(retention/2, 60s), is
// fixed when the store is first created.
func (db *DB) Window(store string, partition int32, retention time.Duration) *Window {
	hk := handleKey{store, partition}
	if s := db.windows[hk]; s != nil {
		return s
	}
	s := &Window{segmented: db.newSegmented(store, partition, kindWindow, retention)}
	db.windows[hk] = s
	return s
}

// primaryKey: prefix ts(seg) 0x00 uvarint(len(key)) key ts(start).
func (s *Window) primaryKey(key []byte, start int64) []byte {
	b := append(s.segKey(s.key, start), winPrimary)
	s.key = appendTS(appendLenKey(b, key), start)
	return s.key
}

// indexKey: prefix ts(seg) 0x01 ts(start) key.
func (s *Window) indexKey(key []byte, start int64) []byte {
	b := append(s.segKey(s.idx, start), winIndex)
	s.idx = append(appendTS(b, start), key...)
	return s.idx
}

// Put sets the window (key, start) to value; a nil value deletes it. A window
// already expired is dropped (Put returns nil). Put advances the store's
// stream time to start.
func (s *Window) Put(key []byte, start int64, value []byte) error {
	if err := s.check(); err != nil {
		return err
	}
	if start < s.minLive() {
		return nil
	}
	s.observe(start)
	b := s.db.batch
	var err error
	if value == nil {
		err = b.Delete(s.primaryKey(key, start), nil)
		if err == nil {
			err = b.Delete(s.indexKey(key, start), nil)
		}
	} else {
		err = b.Set(s.primaryKey(key, start), value, nil)
		if err == nil {
			err = b.Set(s.indexKey(key, start), nil, nil)
		}
	}
	if err != nil {
		return fmt.Errorf("state: put %s/%d: %w", s.reg.name, s.partition, err)
	}
	return nil
}

// Get returns the value of window (key, start). The slice is valid until the
// next call on the store.
func (s *Window) Get(key []byte, start int64) ([]byte, bool, error) {
	if err := s.check(); err != nil {
		return nil, false, err
	}
	if start < s.minLive() {
		return nil, false, nil
	}
	return s.get(s.primaryKey(key, start))
}

// Fetch iterates the windows of key with start in [fromStart, toStart] in
// ascending start order. It visits only the segments of that time range.
func (s *Window) Fetch(key []byte, fromStart, toStart int64) *Iterator {
	fromStart = max(fromStart, s.minLive())
	if fromStart > toStart {
		return &Iterator{done: true}
	}
	base := appendLenKey([]byte{winPrimary}, key)
	lo := appendTS(append([]byte(nil), base...), fromStart)
	it := newSegIter(&s.store, modeWindow, segmentOf(fromStart, s.interval), segmentOf(toStart, s.interval), lo, upperInner(base, toStart))
	it.userKey = base[len(base)-len(key):]
	return it
}

// FetchAll iterates the windows of every key with start in [fromStart,
// toStart], ordered by start, then key.
func (s *Window) FetchAll(fromStart, toStart int64) *Iterator {
	fromStart = max(fromStart, s.minLive())
	if fromStart > toStart {
		return &Iterator{done: true}
	}
	base := []byte{winIndex}
	lo := appendTS([]byte{winIndex}, fromStart)
	it := newSegIter(&s.store, modeWindowAll, segmentOf(fromStart, s.interval), segmentOf(toStart, s.interval), lo, upperInner(base, toStart))
	if it.err != nil {
		return it
	}
	it.look, it.err = newPebbleIter(&s.store, s.prefix, s.end)
	if it.err != nil {
		it.done = true
	}
	return it
}

// Expire advances the store's stream time to streamTime and deletes every
// window with start < streamTime - retention. Whole segments go with one
// DeleteRange; windows in the oldest live segment stay on disk but are
// invisible to reads. Expiry writes nothing to the changelog (Kafka Streams'
// changelog topics of windowed stores expire by their own retention).
func (s *Window) Expire(streamTime int64) error { return s.expire(streamTime) }

// Restore applies one changelog record, key + 8-byte big-endian start +
// 4-byte sequence number, as if written with Put.
func (s *Window) Restore(changelogKey, value []byte) error {
	n := len(changelogKey)
	if n < 12 {
		return fmt.Errorf("%w: window changelog key of %d bytes, want >= 12", ErrCorruptChangelog, n)
	}
	start := int64(binary.BigEndian.Uint64(changelogKey[n-12 : n-4]))
	return s.Put(changelogKey[:n-12], start, value)
}
