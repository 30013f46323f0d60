package state

import (
	"encoding/binary"
	"fmt"
	"math"
	"time"
)

// Session is a session store partition: values keyed by (key, start ms, end
// ms), segmented by end. Sessions with end < stream time - retention are
// expired.
type Session struct {
	segmented
}

// Session returns the session store partition (store, partition),
// registering the store on first use.
func (db *DB) Session(store string, partition int32, retention time.Duration) *Session {
	hk := handleKey{store, partition}
	if s := db.sessions[hk]; s != nil {
		return s
	}
	s := &Session{segmented: db.newSegmented(store, partition, kindSession, retention)}
	db.sessions[hk] = s
	return s
}

// dataKey: prefix ts(seg(end)) uvarint(len(key)) key ts(end) ts(start).
func (s *Session) dataKey(key []byte, start, end int64) []byte {
	b := appendLenKey(s.segKey(s.key, end), key)
	s.key = appendTS(appendTS(b, end), start)
	return s.key
}

// Put sets session (key, start, end) to value; a nil value removes it. A
// session already expired is dropped (Put returns nil). Put advances the
// store's stream time to end.
func (s *Session) Put(key []byte, start, end int64, value []byte) error {
	if value == nil {
		return s.Remove(key, start, end)
	}
	if err := s.check(); err != nil {
		return err
	}
	if end < s.minLive() {
		return nil
	}
	s.observe(end)
	if err := s.db.batch.Set(s.dataKey(key, start, end), value, nil); err != nil {
		return fmt.Errorf("state: put %s/%d: %w", s.reg.name, s.partition, err)
	}
	return nil
}

// Remove removes session (key, start, end).
func (s *Session) Remove(key []byte, start, end int64) error {
	if err := s.check(); err != nil {
		return err
	}
	if end < s.minLive() {
		return nil
	}
	if err := s.db.batch.Delete(s.dataKey(key, start, end), nil); err != nil {
		return fmt.Errorf("state: remove %s/%d: %w", s.reg.name, s.partition, err)
	}
	return nil
}

// FindSessions iterates the sessions of key with end >= earliestEnd and
// start <= latestStart, ascending by end, then start.
func (s *Session) FindSessions(key []byte, earliestEnd, latestStart int64) *Iterator {
	earliestEnd = max(earliestEnd, s.minLive())
	base := appendLenKey(nil, key)
	lo := appendTS(append([]byte(nil), base...), earliestEnd)
	it := newSegIter(&s.store, modeSession, segmentOf(earliestEnd, s.interval), math.MaxInt64, lo, prefixEnd(base))
	it.userKey = base[len(base)-len(key):]
	it.latestStart = latestStart
	return it
}

// Fetch iterates every live session of key, ascending by end, then start.
func (s *Session) Fetch(key []byte) *Iterator {
	return s.FindSessions(key, math.MinInt64, math.MaxInt64)
}

// Expire advances the store's stream time to streamTime and deletes every
// session with end < streamTime - retention (whole segments by DeleteRange;
// the rest are invisible to reads). Expiry writes nothing to the changelog.
func (s *Session) Expire(streamTime int64) error { return s.expire(streamTime) }

// Restore applies one changelog record, key + 8-byte big-endian end + 8-byte
// big-endian start (Kafka's SessionKeySchema), as if written with Put.
func (s *Session) Restore(changelogKey, value []byte) error {
	n := len(changelogKey)
	if n < 16 {
		return fmt.Errorf("%w: session changelog key of %d bytes, want >= 16", ErrCorruptChangelog, n)
	}
	end := int64(binary.BigEndian.Uint64(changelogKey[n-16 : n-8]))
	start := int64(binary.BigEndian.Uint64(changelogKey[n-8:]))
	return s.Put(changelogKey[:n-16], start, end, value)
}
