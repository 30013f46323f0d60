package state

import (
	"bytes"
	"fmt"
	"math"

	"github.com/cockroachdb/pebble/v2"
)

type iterMode byte

const (
	modeKV iterMode = iota
	modeKVReverse
	modeWindow    // one key's windows, primary entries
	modeWindowAll // all keys' windows, time-index entries
	modeSession   // one key's sessions
)

// Iterator walks the entries of one store in order. It sees the pending batch
// as it was when the iterator was created; later writes are not visible to it.
// Key and Value are valid until the next call to Next. Close every iterator,
// and before Commit, Discard or Close of the DB.
type Iterator struct {
	it    *pebble.Iterator
	look  *pebble.Iterator // modeWindowAll: reads the primary entry's value
	err   error
	mode  iterMode
	begun bool
	done  bool
	plen  int // len(store prefix)

	// Segmented scans: visit segments seg..segHi; in each, entries whose
	// suffix after ts(seg) lies in [innerLo, innerHi).
	seg, segHi       int64
	innerLo, innerHi []byte
	prefix           []byte
	seek             []byte
	userKey          []byte // modeWindow, modeSession
	latestStart      int64  // modeSession filter

	key, value []byte
	start, end int64
}

func errIterator(err error) *Iterator { return &Iterator{err: err, done: true} }

func newPebbleIter(s *store, lo, hi []byte) (*pebble.Iterator, error) {
	it, err := s.db.batch.NewIter(&pebble.IterOptions{LowerBound: lo, UpperBound: hi})
	if err != nil {
		return nil, fmt.Errorf("state: iterate %s/%d: %w", s.reg.name, s.partition, err)
	}
	return it, nil
}

// newSegIter creates a segmented scan over segments [segLo, segHi].
func newSegIter(s *store, mode iterMode, segLo, segHi int64, innerLo, innerHi []byte) *Iterator {
	if err := s.check(); err != nil {
		return errIterator(err)
	}
	lo := appendTS(append([]byte(nil), s.prefix...), segLo)
	hi := s.end
	if segHi < math.MaxInt64 {
		hi = appendTS(append([]byte(nil), s.prefix...), segHi+1)
	}
	it, err := newPebbleIter(s, lo, hi)
	if err != nil {
		return errIterator(err)
	}
	return &Iterator{
		it: it, mode: mode, plen: len(s.prefix), prefix: s.prefix,
		seg: segLo, segHi: segHi, innerLo: innerLo, innerHi: innerHi,
	}
}

// Next advances to the next entry and reports whether there is one.
func (it *Iterator) Next() bool {
	if it.done {
		return false
	}
	var ok bool
	switch it.mode {
	case modeKV, modeKVReverse:
		ok = it.nextKV()
	default:
		ok = it.nextSeg()
	}
	if !ok {
		it.done = true
		if it.err == nil && it.it != nil {
			it.err = it.it.Error()
		}
	}
	return ok
}

func (it *Iterator) nextKV() bool {
	var valid bool
	switch {
	case !it.begun && it.mode == modeKV:
		valid = it.it.First()
	case !it.begun:
		valid = it.it.Last()
	case it.mode == modeKV:
		valid = it.it.Next()
	default:
		valid = it.it.Prev()
	}
	it.begun = true
	if !valid {
		return false
	}
	it.key = it.it.Key()[it.plen:]
	return it.loadValue(it.it)
}

func (it *Iterator) loadValue(pi *pebble.Iterator) bool {
	v, err := pi.ValueAndErr()
	if err != nil {
		it.err = err
		return false
	}
	it.value = v
	return true
}

func (it *Iterator) seekSeg(seg int64) bool {
	it.seek = appendTS(append(it.seek[:0], it.prefix...), seg)
	it.seek = append(it.seek, it.innerLo...)
	return it.it.SeekGE(it.seek)
}

// nextSeg is a skip scan: within a segment it reads the entries in
// [innerLo, innerHi), then seeks straight to the next segment that has any
// entry at all, so empty segments cost nothing.
func (it *Iterator) nextSeg() bool {
	var valid bool
	if !it.begun {
		it.begun = true
		valid = it.seekSeg(it.seg)
	} else {
		valid = it.it.Next()
	}
	for valid {
		rest := it.it.Key()[it.plen:]
		if len(rest) < 8 {
			it.err = fmt.Errorf("%w: short segmented key", ErrCorruptDB)
			return false
		}
		seg, inner := readTS(rest), rest[8:]
		if seg != it.seg {
			it.seg = seg
			if bytes.Compare(inner, it.innerLo) < 0 {
				valid = it.seekSeg(seg)
				continue
			}
		}
		if bytes.Compare(inner, it.innerHi) >= 0 {
			if it.seg >= it.segHi {
				return false
			}
			it.seg++
			valid = it.seekSeg(it.seg)
			continue
		}
		if ok, err := it.decode(inner); err != nil {
			it.err = err
			return false
		} else if ok {
			return true
		}
		valid = it.it.Next()
	}
	return false
}

// decode fills key, value, start and end from a segmented entry; false means
// the entry is filtered out.
func (it *Iterator) decode(inner []byte) (bool, error) {
	switch it.mode {
	case modeWindow:
		if len(inner) < 8 {
			return false, fmt.Errorf("%w: short window key", ErrCorruptDB)
		}
		it.key = it.userKey
		it.start = readTS(inner[len(inner)-8:])
		it.end = it.start
		return it.loadValue(it.it), it.err
	case modeWindowAll:
		if len(inner) < 9 {
			return false, fmt.Errorf("%w: short window index key", ErrCorruptDB)
		}
		it.start = readTS(inner[1:9])
		it.end = it.start
		it.key = inner[9:]
		// The primary entry: ts(seg) 0x00 uvarint(len(key)) key ts(start).
		it.seek = appendTS(append(it.seek[:0], it.prefix...), it.seg)
		it.seek = append(it.seek, winPrimary)
		it.seek = appendTS(appendLenKey(it.seek, it.key), it.start)
		if !it.look.SeekGE(it.seek) || !bytes.Equal(it.look.Key(), it.seek) {
			return false, it.look.Error() // an index entry without its window: skip
		}
		return it.loadValue(it.look), it.err
	case modeSession:
		if len(inner) < 16 {
			return false, fmt.Errorf("%w: short session key", ErrCorruptDB)
		}
		it.end = readTS(inner[len(inner)-16:])
		it.start = readTS(inner[len(inner)-8:])
		if it.start > it.latestStart {
			return false, nil
		}
		it.key = it.userKey
		return it.loadValue(it.it), it.err
	}
	return false, nil
}

// Key returns the current entry's key (for windows and sessions: the record
// key, without times).
func (it *Iterator) Key() []byte { return it.key }

// Value returns the current entry's value.
func (it *Iterator) Value() []byte { return it.value }

// Start returns the current window's or session's start in ms.
func (it *Iterator) Start() int64 { return it.start }

// End returns the current session's end in ms; for windows it equals Start
// (the window size is the caller's).
func (it *Iterator) End() int64 { return it.end }

// Err returns the error that ended the iteration, if any.
func (it *Iterator) Err() error { return it.err }

// Close releases the iterator. It returns Err or the error of closing.
func (it *Iterator) Close() error {
	it.done = true
	err := it.err
	for _, pi := range []*pebble.Iterator{it.it, it.look} {
		if pi != nil {
			if cerr := pi.Close(); err == nil {
				err = cerr
			}
		}
	}
	it.it, it.look = nil, nil
	return err
}
