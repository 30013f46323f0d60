package log

import (
	"fmt"
	"slices"
)

// The aborted-transaction index, Kafka's TransactionIndex: one
// <base>.txnindex file per segment, holding an entry for every transaction
// aborted by a marker in that segment, in marker order. Entries are 34 bytes,
// big endian: version int16 (0), producer id int64, first offset int64 (of
// the transaction's first batch here), last offset int64 (the abort
// marker's), last stable offset int64 (the LSO when the marker was written:
// the first offset of another open transaction, or the marker's offset + 1).
//
// It is derived data, kept in memory beside the segment and written
// (atomically) with the segment's other indexes at roll and Close, when a
// cleaning swap installs the segment, and when truncation drops entries; a
// file is written only for a segment that has entries. The partition above
// the log rebuilds what a crash lost: it rescans the log (AddAbortedTxn adds
// an entry only if it is missing). Open drops entries past the recovered log
// end and, when a file does not parse, removes it and reports so
// (TxnIndexDamaged), so that the partition rebuilds from the log start.

const (
	txnIndexSuffix = ".txnindex"
	txnEntrySize   = 34
)

// AbortedTxn is one entry of the aborted-transaction index.
type AbortedTxn struct {
	ProducerID  int64
	FirstOffset int64
	// LastOffset is the offset of the abort marker.
	LastOffset int64
	// LastStableOffset is the last stable offset when the marker was
	// written; a search stops after an entry whose LSO reaches its bound.
	LastStableOffset int64
}

// appendTxnEntry appends e's encoding to dst.
func appendTxnEntry(dst []byte, e AbortedTxn) []byte {
	dst = be.AppendUint16(dst, 0)
	dst = be.AppendUint64(dst, uint64(e.ProducerID))
	dst = be.AppendUint64(dst, uint64(e.FirstOffset))
	dst = be.AppendUint64(dst, uint64(e.LastOffset))
	return be.AppendUint64(dst, uint64(e.LastStableOffset))
}

// parseTxnIndex decodes a .txnindex file: whole entries of version 0 whose
// first offset is not after their last, with last offsets increasing.
func parseTxnIndex(b []byte) ([]AbortedTxn, error) {
	if len(b)%txnEntrySize != 0 {
		return nil, fmt.Errorf("%w: txn index of %d bytes is not a whole number of entries", ErrCorrupt, len(b))
	}
	out := make([]AbortedTxn, 0, len(b)/txnEntrySize)
	for p := 0; p < len(b); p += txnEntrySize {
		e := b[p:]
		if v := int16(be.Uint16(e)); v != 0 {
			return nil, fmt.Errorf("%w: txn index entry %d has version %d", ErrCorrupt, p/txnEntrySize, v)
		}
		t := AbortedTxn{
			ProducerID:       int64(be.Uint64(e[2:])),
			FirstOffset:      int64(be.Uint64(e[10:])),
			LastOffset:       int64(be.Uint64(e[18:])),
			LastStableOffset: int64(be.Uint64(e[26:])),
		}
		if t.FirstOffset < 0 || t.FirstOffset > t.LastOffset || (len(out) > 0 && t.LastOffset <= out[len(out)-1].LastOffset) {
			return nil, fmt.Errorf("%w: txn index entry %d %+v out of order", ErrCorrupt, p/txnEntrySize, t)
		}
		out = append(out, t)
	}
	return out, nil
}

func encodeTxnIndex(es []AbortedTxn) []byte {
	b := make([]byte, 0, len(es)*txnEntrySize)
	for _, e := range es {
		b = appendTxnEntry(b, e)
	}
	return b
}

// AddAbortedTxn records e in the index of the segment that holds its
// marker (e.LastOffset), unless that segment has it already (the same
// producer and marker offset). The active segment's entries are written at
// its roll or Close; an older segment's file is rewritten now (a rescan
// rebuilding what a crash lost). An entry outside the log is ignored.
func (l *Log) AddAbortedTxn(e AbortedTxn) error {
	l.appendMu.Lock()
	defer l.appendMu.Unlock()
	if err := l.writableLocked(); err != nil {
		return err
	}
	if e.LastOffset < l.mu.segments[0].base || e.LastOffset >= l.leo.Load() {
		return nil
	}
	k, s := l.segmentForLocked(e.LastOffset)
	i, found := slices.BinarySearchFunc(s.txns, e.LastOffset, func(a AbortedTxn, off int64) int {
		switch {
		case a.LastOffset < off:
			return -1
		case a.LastOffset > off:
			return 1
		}
		return 0
	})
	if found {
		return nil
	}
	l.mu.Lock()
	s.txns = slices.Insert(slices.Clone(s.txns), i, e)
	l.mu.Unlock()
	if k == len(l.mu.segments)-1 {
		return nil
	}
	if err := l.writeTxnIndexLocked(s); err != nil {
		l.fail(err)
		return fmt.Errorf("%w: %w", ErrFailed, err)
	}
	return syncDir(l.fs, l.dir)
}

// writeTxnIndexLocked writes s's entries to its .txnindex file, or removes
// the file when it has none. appendMu held.
func (l *Log) writeTxnIndexLocked(s *segment) error {
	name := segmentFileName(s.base, txnIndexSuffix)
	if len(s.txns) == 0 {
		if err := l.fs.Remove(l.path(name)); err != nil && !isNotExist(err) {
			return fmt.Errorf("log: remove %s: %w", name, err)
		}
		return nil
	}
	return writeFileAtomic(l.fs, l.dir, name, encodeTxnIndex(s.txns))
}

// AbortedTxns returns the aborted transactions that a read of [from, upper)
// must know of (Kafka's collectAbortedTransactions): those whose marker is
// at or after from and whose first offset is before upper, searching from
// the segment holding from and stopping after an entry whose last stable
// offset reaches upper.
func (l *Log) AbortedTxns(from, upper int64) []AbortedTxn {
	l.mu.RLock()
	defer l.mu.RUnlock()
	if l.mu.closed || len(l.mu.segments) == 0 {
		return nil
	}
	var out []AbortedTxn
	k, _ := l.segmentForLocked(from)
	for _, s := range l.mu.segments[k:] {
		for _, e := range s.txns {
			if e.LastOffset >= from && e.FirstOffset < upper {
				out = append(out, e)
			}
			if e.LastStableOffset >= upper {
				return out
			}
		}
	}
	return out
}

// TxnIndexDamaged reports whether Open found a .txnindex file it could not
// read (and removed it): the caller must rebuild the index by rescanning the
// log from its start.
func (l *Log) TxnIndexDamaged() bool { return l.txnDamaged }

// loadTxnIndex reads s's .txnindex file, if any. An unreadable one is
// removed and the log marked damaged.
func (l *Log) loadTxnIndex(s *segment) error {
	name := segmentFileName(s.base, txnIndexSuffix)
	b, err := readWholeFile(l.fs, l.path(name))
	if isNotExist(err) {
		return nil
	}
	if err != nil {
		return err
	}
	es, err := parseTxnIndex(b)
	if err == nil && len(es) > 0 && es[0].LastOffset < s.base {
		err = fmt.Errorf("%w: txn index entry at %d before the segment", ErrCorrupt, es[0].LastOffset)
	}
	if err != nil {
		l.logger.Warn("log: removing an unreadable txn index; the partition rebuilds it", "dir", l.dir, "file", name, "err", err)
		l.txnDamaged = true
		if err := l.fs.Remove(l.path(name)); err != nil && !isNotExist(err) {
			return err
		}
		return nil
	}
	s.txns = es
	return nil
}

// truncateTxns drops s's entries whose marker is at or after offset and
// reports whether any went. appendMu and mu held (or during Open).
func (s *segment) truncateTxns(offset int64) bool {
	n := len(s.txns)
	for n > 0 && s.txns[n-1].LastOffset >= offset {
		n--
	}
	if n == len(s.txns) {
		return false
	}
	s.txns = slices.Clone(s.txns[:n])
	return true
}
