package state

import (
	"bytes"
	"cmp"
	"context"
	"encoding/binary"
	"fmt"
	"slices"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/batchrepr"
)

// changes holds Changes' buffers, reused from call to call so that the write
// path keeps no per-write bookkeeping at all: the pending batch is the only
// record of what changed.
type changes struct {
	dels  []batchOp // point deletes of data keys, in batch order
	rdels []batchOp // range deletes of data keys (Expire, Drop), in batch order
	key   []byte    // the changelog key handed to fn
}

type batchOp struct {
	key, end []byte
	pos      int
}

// Changes calls fn once for every store entry changed since the last Commit
// or Discard, with its latest value, or nil for a delete. changelogKey is in
// the changelog key format of Kafka Streams (see the package doc). The slices
// are valid only during the call to fn. Entries removed by Expire or Drop are
// not reported. An error from fn stops the walk and is returned.
//
// Changes reads the indexed batch itself: a batch-only iterator yields each
// key whose latest write is a put, once, with its latest value; a scan of the
// batch's records finds the deletes, which are reported unless the key was
// put again later or range-deleted later.
func (db *DB) Changes(fn func(store string, partition int32, changelogKey, value []byte) error) error {
	if db.batch == nil {
		return ErrClosed
	}
	it, err := db.batch.NewBatchOnlyIter(context.Background(), &pebble.IterOptions{
		LowerBound: []byte{tagData}, UpperBound: []byte{tagData + 1},
	})
	if err != nil {
		return fmt.Errorf("state: changes: %w", err)
	}
	defer it.Close()
	for valid := it.First(); valid; valid = it.Next() {
		v, err := it.ValueAndErr()
		if err != nil {
			return fmt.Errorf("state: changes: %w", err)
		}
		if err := db.emit(it.Key(), v, fn); err != nil {
			return err
		}
	}
	if err := it.Error(); err != nil {
		return fmt.Errorf("state: changes: %w", err)
	}
	if err := db.collectDeletes(); err != nil {
		return err
	}
	c := &db.chg
	for i, d := range c.dels {
		if i+1 < len(c.dels) && bytes.Equal(c.dels[i+1].key, d.key) {
			continue // a later delete of the same key decides
		}
		if rangeDeletedAfter(c.rdels, d) {
			continue
		}
		if it.SeekGE(d.key) && bytes.Equal(it.Key(), d.key) {
			continue // put again after the delete: reported above
		}
		if err := db.emit(d.key, nil, fn); err != nil {
			return err
		}
	}
	return nil
}

// collectDeletes fills db.chg.dels (sorted by key, then batch order) and
// db.chg.rdels from the pending batch's records.
func (db *DB) collectDeletes() error {
	c := &db.chg
	clear(c.dels)
	clear(c.rdels)
	c.dels, c.rdels = c.dels[:0], c.rdels[:0]
	r := batchrepr.Read(db.batch.Repr())
	for pos := 0; ; pos++ {
		kind, k, v, ok, err := r.Next()
		if err != nil {
			return fmt.Errorf("state: changes: %w", err)
		}
		if !ok {
			break
		}
		switch kind {
		case pebble.InternalKeyKindDelete, pebble.InternalKeyKindDeleteSized, pebble.InternalKeyKindSingleDelete:
			if len(k) > 0 && k[0] == tagData {
				c.dels = append(c.dels, batchOp{key: k, pos: pos})
			}
		case pebble.InternalKeyKindRangeDelete:
			if len(k) > 0 && k[0] == tagData {
				c.rdels = append(c.rdels, batchOp{key: k, end: v, pos: pos})
			}
		}
	}
	slices.SortFunc(c.dels, func(a, b batchOp) int {
		if n := bytes.Compare(a.key, b.key); n != 0 {
			return n
		}
		return cmp.Compare(a.pos, b.pos)
	})
	return nil
}

func rangeDeletedAfter(rdels []batchOp, d batchOp) bool {
	for _, r := range rdels {
		if r.pos > d.pos && bytes.Compare(r.key, d.key) <= 0 && (len(r.end) == 0 || bytes.Compare(d.key, r.end) < 0) {
			return true
		}
	}
	return false
}

// emit converts a data key to its store and changelog key and calls fn.
// Window time-index entries are not changes of their own and are skipped.
func (db *DB) emit(k, v []byte, fn func(string, int32, []byte, []byte) error) error {
	id, partition, suffix, ok := decodeDataKey(k)
	e, known := db.byID[id]
	if !ok || !known {
		return fmt.Errorf("%w: data key %x", ErrCorruptDB, k)
	}
	ck, skip, ok := db.changelogKey(e.kind, suffix)
	if !ok {
		return fmt.Errorf("%w: %s key %x", ErrCorruptDB, kindName(e.kind), k)
	}
	if skip {
		return nil
	}
	return fn(e.name, partition, ck, v)
}

func (db *DB) changelogKey(kind byte, suffix []byte) (ck []byte, skip, ok bool) {
	c := &db.chg
	switch kind {
	case kindKeyValue:
		return suffix, false, true
	case kindWindow:
		if len(suffix) < 9 {
			return nil, false, false
		}
		if suffix[8] == winIndex {
			return nil, true, true
		}
		key, rest, ok := splitLenKey(suffix[9:])
		if !ok || len(rest) != 8 {
			return nil, false, false
		}
		c.key = binary.BigEndian.AppendUint64(append(c.key[:0], key...), uint64(readTS(rest)))
		c.key = binary.BigEndian.AppendUint32(c.key, 0)
		return c.key, false, true
	case kindSession:
		if len(suffix) < 8 {
			return nil, false, false
		}
		key, rest, ok := splitLenKey(suffix[8:])
		if !ok || len(rest) != 16 {
			return nil, false, false
		}
		c.key = binary.BigEndian.AppendUint64(append(c.key[:0], key...), uint64(readTS(rest[:8])))
		c.key = binary.BigEndian.AppendUint64(c.key, uint64(readTS(rest[8:])))
		return c.key, false, true
	}
	return nil, false, false
}
