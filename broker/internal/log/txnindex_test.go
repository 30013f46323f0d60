package log

import (
	"context"
	"fmt"
	"math"
	"slices"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/runnel-io/runnel/broker/internal/batch"
)

// txnLog appends n one-record batches to a log whose segments hold about
// perSegment of them, so entries land in different segments.
func txnLog(t *testing.T, h *harness, n int) *Log {
	t.Helper()
	one := len(makeBatch(t, 1, 1, 10))
	h.cfg.SegmentBytes = int64(one * 4)
	l := h.open()
	appendN(t, l, n, 1, 1, 10, 0)
	return l
}

func addTxn(t *testing.T, l *Log, pid, first, last, lso int64) {
	t.Helper()
	if err := l.AddAbortedTxn(AbortedTxn{ProducerID: pid, FirstOffset: first, LastOffset: last, LastStableOffset: lso}); err != nil {
		t.Fatal(err)
	}
}

func fmtTxns(es []AbortedTxn) string {
	s := ""
	for _, e := range es {
		s += fmt.Sprintf("[%d %d-%d lso %d]", e.ProducerID, e.FirstOffset, e.LastOffset, e.LastStableOffset)
	}
	return s
}

// Entries go to the segment of their marker, are not duplicated, survive
// a clean restart (written with the indexes), and AbortedTxns answers as
// Kafka's collectAbortedTransactions.
func TestTxnIndexAddCollectReopen(t *testing.T) {
	eachFS(t, func(t *testing.T, h *harness) {
		l := txnLog(t, h, 10) // segments [0,4) [4,8) [8,10)
		addTxn(t, l, 1, 0, 2, 3)
		addTxn(t, l, 2, 1, 5, 6)
		addTxn(t, l, 2, 1, 5, 6) // again: ignored
		addTxn(t, l, 3, 7, 9, 10)
		addTxn(t, l, 4, 3, 12, 13) // beyond the log: ignored
		check := func(l *Log) {
			t.Helper()
			for _, c := range []struct {
				from, upper int64
				want        string
			}{
				{0, 10, "[1 0-2 lso 3][2 1-5 lso 6][3 7-9 lso 10]"},
				{3, 10, "[2 1-5 lso 6][3 7-9 lso 10]"},
				{0, 1, "[1 0-2 lso 3]"}, // stops: lso 3 >= 1
				{6, 7, "[3 7-9 lso 10]"[:0]},
				{6, 8, "[3 7-9 lso 10]"},
			} {
				if got := fmtTxns(l.AbortedTxns(c.from, c.upper)); got != c.want {
					t.Errorf("AbortedTxns(%d, %d) = %s, want %s", c.from, c.upper, got, c.want)
				}
			}
		}
		check(l)
		if got := segmentFiles(t, h.fs, h.dir, txnIndexSuffix); len(got) != 2 {
			// Entries of older segments are written at once; the active
			// segment's at roll or Close.
			t.Fatalf("txn index files before Close: %v", got)
		}
		mustClose(t, l)
		if got := segmentFiles(t, h.fs, h.dir, txnIndexSuffix); len(got) != 3 {
			t.Fatalf("txn index files after Close: %v", got)
		}
		l = h.open()
		defer mustClose(t, l)
		if l.TxnIndexDamaged() {
			t.Fatal("damaged after a clean close")
		}
		check(l)
	})
}

// Truncation drops the entries at or after the cut (and their files with
// the segments), retention and DeleteRecords delete them with their
// segments, and a restart at an offset clears them.
func TestTxnIndexTruncateDelete(t *testing.T) {
	eachFS(t, func(t *testing.T, h *harness) {
		l := txnLog(t, h, 14) // [0,4) [4,8) [8,12) [12,14)
		addTxn(t, l, 1, 0, 1, 2)
		addTxn(t, l, 2, 2, 5, 6)
		addTxn(t, l, 3, 5, 6, 7)
		addTxn(t, l, 4, 8, 9, 10)
		addTxn(t, l, 5, 9, 13, 14)
		if err := l.Truncate(6); err != nil {
			t.Fatal(err)
		}
		if got := fmtTxns(l.AbortedTxns(0, math.MaxInt64)); got != "[1 0-1 lso 2][2 2-5 lso 6]" {
			t.Fatalf("after Truncate(6): %s", got)
		}
		if got := segmentFiles(t, h.fs, h.dir, txnIndexSuffix); len(got) != 2 {
			t.Fatalf("txn index files after truncation: %v", got)
		}
		// A crash now must not bring the dropped entries back, even once
		// the offsets are written again.
		appendN(t, l, 4, 1, 1, 10, 0)
		mustClose(t, l)
		h.crash()
		l = h.open()
		if got := fmtTxns(l.AbortedTxns(0, math.MaxInt64)); got != "[1 0-1 lso 2][2 2-5 lso 6]" {
			t.Fatalf("after a crash: %s", got)
		}
		if err := l.DeleteRecords(5); err != nil {
			t.Fatal(err)
		}
		if got := fmtTxns(l.AbortedTxns(0, math.MaxInt64)); got != "[2 2-5 lso 6]" {
			t.Fatalf("after DeleteRecords(5): %s", got)
		}
		if got := segmentFiles(t, h.fs, h.dir, txnIndexSuffix); len(got) != 1 {
			t.Fatalf("txn index files after DeleteRecords: %v", got)
		}
		if err := l.TruncateFullyAndStartAt(20); err != nil {
			t.Fatal(err)
		}
		if got := l.AbortedTxns(0, math.MaxInt64); len(got) != 0 {
			t.Fatalf("after TruncateFullyAndStartAt: %s", fmtTxns(got))
		}
		if got := segmentFiles(t, h.fs, h.dir, txnIndexSuffix); len(got) != 0 {
			t.Fatalf("txn index files after TruncateFullyAndStartAt: %v", got)
		}
		mustClose(t, l)
	})
}

// A corrupt index file is removed and reported, not fatal; an orphan one
// (no segment) is removed.
func TestTxnIndexCorrupt(t *testing.T) {
	eachFS(t, func(t *testing.T, h *harness) {
		l := txnLog(t, h, 10)
		addTxn(t, l, 1, 0, 2, 3)
		mustClose(t, l)
		path := h.fs.PathJoin(h.dir, segmentFileName(0, txnIndexSuffix))
		rewriteFile(t, h.fs, path, readFile(t, h.fs, path)[:20])
		rewriteFile(t, h.fs, h.fs.PathJoin(h.dir, segmentFileName(100, txnIndexSuffix)), nil)
		l = h.open()
		defer mustClose(t, l)
		if !l.TxnIndexDamaged() || len(l.AbortedTxns(0, math.MaxInt64)) != 0 {
			t.Fatalf("damaged %v, entries %s", l.TxnIndexDamaged(), fmtTxns(l.AbortedTxns(0, math.MaxInt64)))
		}
		if got := segmentFiles(t, h.fs, h.dir, txnIndexSuffix); len(got) != 0 {
			t.Fatalf("txn index files: %v", got)
		}
	})
}

// Compaction removes the records of aborted transactions (they never shadow
// committed values in the map), keeps markers, and moves the index entries
// to the cleaned segment.
func TestCleanAbortedTxn(t *testing.T) {
	h := newHarness(t, vfs.NewCrashableMem(), "/data/t-0")
	compactConfig(h, 1<<20)
	l := h.open()
	defer mustClose(t, l)
	txnBatch := func(pid int64, seq int32, recs ...kv) []byte {
		b := kvBatch(t, batch.CodecNone, 1, pid, seq, recs...)
		hd, _ := batch.ParseHeader(b)
		hd.Attributes |= batch.AttrTransactional
		return batch.AppendBatch(nil, &hd, b[batch.HeaderSize:])
	}
	mustAppend(t, l, kvBatch(t, batch.CodecNone, 1, -1, 0, kv{"a", val("a0")}, kv{"b", val("b0")})) // 0-1
	mustAppend(t, l, txnBatch(7, 0, kv{"a", val("aborted")}, kv{"c", val("aborted")}))              // 2-3
	mustAppend(t, l, txnBatch(8, 0, kv{"b", val("b1")}))                                            // 4
	mustAppend(t, l, batch.AppendEndTxnMarker(nil, 7, 0, batch.EndTxnMarker{}, 1))                  // 5
	mustAppend(t, l, batch.AppendEndTxnMarker(nil, 8, 0, batch.EndTxnMarker{Commit: true}, 1))      // 6
	addTxn(t, l, 7, 2, 5, 6)
	mustAppend(t, l, kvBatch(t, batch.CodecNone, 1, -1, 0, kv{"z", val("z")})) // 7
	l.appendMu.Lock()
	err := l.rollLocked()
	l.appendMu.Unlock()
	if err != nil {
		t.Fatal(err)
	}
	mustAppend(t, l, kvBatch(t, batch.CodecNone, 1, -1, 0, kv{"y", val("y")}))
	m := NewOffsetMap(1<<20, 0)
	if _, err := l.Clean(context.Background(), m, CleanOptions{MaxOffset: math.MaxInt64}); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range readRecords(t, l) {
		v := "<nil>"
		if r.val != nil {
			v = *r.val
		}
		got = append(got, fmt.Sprintf("%d:%s=%s", r.offset, r.key, v))
	}
	want := []string{"0:a=a0", "4:b=b1", "5:\x00\x00\x00\x00=\x00\x00\x00\x00\x00\x00", "6:\x00\x00\x00\x01=\x00\x00\x00\x00\x00\x00", "7:z=z", "8:y=y"}
	if !slices.Equal(got, want) {
		t.Fatalf("records after cleaning %v, want %v", got, want)
	}
	controls := 0
	if err := l.Scan(0, func(hd batch.Header) error {
		if hd.IsControl() {
			controls++
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if controls != 2 {
		t.Fatalf("%d markers kept, want 2", controls)
	}
	if got := fmtTxns(l.AbortedTxns(0, math.MaxInt64)); got != "[7 2-5 lso 6]" {
		t.Fatalf("index after cleaning: %s", got)
	}
}

// FuzzTxnIndex: any bytes either parse into entries that encode back to the
// same bytes, or fail with ErrCorrupt; never a panic.
func FuzzTxnIndex(f *testing.F) {
	f.Add(encodeTxnIndex([]AbortedTxn{{1, 0, 2, 3}, {2, 1, 5, 6}}))
	f.Add([]byte{0, 1, 2})
	f.Fuzz(func(t *testing.T, b []byte) {
		es, err := parseTxnIndex(b)
		if err != nil {
			return
		}
		if got := encodeTxnIndex(es); string(got) != string(b) {
			t.Fatalf("re-encoded %x, parsed from %x", got, b)
		}
	})
}
