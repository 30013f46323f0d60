package log

import (
	"encoding/binary"
	"fmt"
)

// The sparse indexes, kept in memory as their on-disk bytes and written to
// <base>.index and <base>.timeindex when the segment rolls and at Close.
//
// offsetIndex entries (8 bytes, big endian): int32 offset relative to the
// segment's base offset, int32 file position. An entry names the base offset
// of the batch that starts at that position. Entries are added every
// index.interval.bytes of batches; the first batch of a segment has no entry
// (position 0 is implied).
//
// timeIndex entries (12 bytes, big endian): int64 timestamp, int32 relative
// offset. An entry records the largest MaxTimestamp seen so far in the segment
// and the base offset of the first batch that reached it; entries are added at
// offset-index points when the maximum grew, and once more at roll/Close so
// that the last entry holds the segment's largest timestamp.

const (
	offsetEntrySize = 8
	timeEntrySize   = 12
)

var be = binary.BigEndian

type offsetIndex []byte

func (x offsetIndex) len() int { return len(x) / offsetEntrySize }

func (x offsetIndex) at(i int) (rel, pos int32) {
	e := x[i*offsetEntrySize:]
	return int32(be.Uint32(e)), int32(be.Uint32(e[4:]))
}

func (x *offsetIndex) add(rel, pos int32) {
	*x = be.AppendUint32(be.AppendUint32(*x, uint32(rel)), uint32(pos))
}

// search returns the number of entries with rel <= target.
func (x offsetIndex) search(target int64) int {
	lo, hi := 0, x.len()
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if r, _ := x.at(m); int64(r) <= target {
			lo = m + 1
		} else {
			hi = m
		}
	}
	return lo
}

// floor returns the position of the last entry whose offset is <= target, or
// 0: the batch holding target starts at or after it.
func (x offsetIndex) floor(target int64) int64 {
	i := x.search(target)
	if i == 0 {
		return 0
	}
	_, p := x.at(i - 1)
	return int64(p)
}

// ceil returns the position of the first entry whose offset is >= target:
// every batch from there on starts at or after target.
func (x offsetIndex) ceil(target int64) (int64, bool) {
	i := x.search(target - 1)
	if i == x.len() {
		return 0, false
	}
	_, p := x.at(i)
	return int64(p), true
}

// truncate drops the entries whose offset is >= target.
func (x *offsetIndex) truncate(target int64) {
	*x = (*x)[:x.search(target-1)*offsetEntrySize]
}

// last returns the final entry.
func (x offsetIndex) last() (rel, pos int32, ok bool) {
	if x.len() == 0 {
		return 0, 0, false
	}
	rel, pos = x.at(x.len() - 1)
	return rel, pos, true
}

// check reports whether x is a well-formed index for a segment file of
// fileSize bytes: whole entries, offsets and positions strictly increasing,
// positions inside the file.
func (x offsetIndex) check(fileSize int64) error {
	if len(x)%offsetEntrySize != 0 {
		return fmt.Errorf("offset index: %d bytes is not a whole number of entries", len(x))
	}
	prevRel, prevPos := int32(0), int32(0)
	for i := range x.len() {
		rel, pos := x.at(i)
		if rel <= prevRel || pos <= prevPos || int64(pos) >= fileSize {
			return fmt.Errorf("offset index: entry %d (%d, %d) out of order or beyond %d bytes", i, rel, pos, fileSize)
		}
		prevRel, prevPos = rel, pos
	}
	return nil
}

type timeIndex []byte

func (x timeIndex) len() int { return len(x) / timeEntrySize }

func (x timeIndex) at(i int) (ts int64, rel int32) {
	e := x[i*timeEntrySize:]
	return int64(be.Uint64(e)), int32(be.Uint32(e[8:]))
}

func (x *timeIndex) add(ts int64, rel int32) {
	*x = be.AppendUint32(be.AppendUint64(*x, uint64(ts)), uint32(rel))
}

// lastBefore returns the offset of the last entry whose timestamp is < ts:
// every batch up to and including that offset has MaxTimestamp < ts.
func (x timeIndex) lastBefore(ts int64) (rel int32, ok bool) {
	lo, hi := 0, x.len()
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if t, _ := x.at(m); t < ts {
			lo = m + 1
		} else {
			hi = m
		}
	}
	if lo == 0 {
		return 0, false
	}
	_, rel = x.at(lo - 1)
	return rel, true
}

// truncate drops the entries whose offset is >= relLimit.
func (x *timeIndex) truncate(relLimit int64) {
	n := x.len()
	for n > 0 {
		if _, rel := x.at(n - 1); int64(rel) < relLimit {
			break
		}
		n--
	}
	*x = (*x)[:n*timeEntrySize]
}

func (x timeIndex) last() (ts int64, rel int32, ok bool) {
	if x.len() == 0 {
		return 0, 0, false
	}
	ts, rel = x.at(x.len() - 1)
	return ts, rel, true
}

// check reports whether x is well formed: whole entries, timestamps strictly
// increasing, offsets non-decreasing and non-negative.
func (x timeIndex) check() error {
	if len(x)%timeEntrySize != 0 {
		return fmt.Errorf("time index: %d bytes is not a whole number of entries", len(x))
	}
	for i := range x.len() {
		ts, rel := x.at(i)
		if rel < 0 {
			return fmt.Errorf("time index: entry %d has negative offset %d", i, rel)
		}
		if i > 0 {
			pts, prel := x.at(i - 1)
			if ts <= pts || rel < prel {
				return fmt.Errorf("time index: entry %d (%d, %d) out of order", i, ts, rel)
			}
		}
	}
	return nil
}
