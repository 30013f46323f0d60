package state

import (
	"fmt"
	"math"
	"time"
)

// segmented is what window and session stores share: time segments, the
// observed stream time and expiry.
type segmented struct {
	store
	retention  int64 // ms
	interval   int64 // segment interval in ms, fixed when the store was created
	streamTime int64 // max of the times put and of Expire's argument; MinInt64 if none

	// Segments below expiredBelow are already deleted (in the DB or the
	// pending batch) if expiredGen == db.gen: Expire then skips the
	// DeleteRange. Discard bumps db.gen, Drop clears memo.
	expiredBelow int64
	expiredGen   uint64
	memo         bool
}

func (db *DB) newSegmented(name string, partition int32, kind byte, retention time.Duration) segmented {
	r := retentionMs(retention)
	s := segmented{retention: r, streamTime: math.MinInt64}
	s.store = db.newStore(name, partition, kind, segmentInterval(r))
	s.interval = s.reg.interval
	if s.err == nil && s.interval <= 0 {
		s.err = fmt.Errorf("%w: store %q has segment interval %d", ErrCorruptDB, name, s.interval)
	}
	if s.err != nil {
		s.interval = segmentInterval(r) // the handle fails every call, but computes no division by zero
	}
	return s
}

// minLive is the oldest live time: older records are expired.
func (s *segmented) minLive() int64 { return minLive(s.streamTime, s.retention) }

func (s *segmented) observe(t int64) { s.streamTime = max(s.streamTime, t) }

func (s *segmented) reset() {
	s.streamTime = math.MinInt64
	s.memo = false
}

// expire advances stream time to at least streamTime and deletes, with one
// DeleteRange, every segment that holds only times below minLive.
func (s *segmented) expire(streamTime int64) error {
	if err := s.check(); err != nil {
		return err
	}
	s.observe(streamTime)
	ml := s.minLive()
	if ml == math.MinInt64 {
		return nil
	}
	below := segmentOf(ml, s.interval) // segment `below` still holds live times
	if s.memo && s.expiredGen == s.db.gen && below <= s.expiredBelow {
		return nil
	}
	hi := appendTS(append([]byte(nil), s.prefix...), below)
	if err := s.db.batch.DeleteRange(s.prefix, hi, nil); err != nil {
		return fmt.Errorf("state: expire %s/%d: %w", s.reg.name, s.partition, err)
	}
	s.memo, s.expiredGen, s.expiredBelow = true, s.db.gen, below
	return nil
}

// segKey starts a data key in segment seg of time t: prefix ts(seg).
func (s *segmented) segKey(b []byte, t int64) []byte {
	return appendTS(append(b[:0], s.prefix...), segmentOf(t, s.interval))
}

// upperInner returns the exclusive upper bound of a segment-inner range whose
// entries are base followed by ts(t) with t <= to.
func upperInner(base []byte, to int64) []byte {
	if to == math.MaxInt64 {
		return prefixEnd(base)
	}
	return appendTS(append([]byte(nil), base...), to+1)
}
