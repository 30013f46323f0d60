package partition

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"testing/synctest"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/runnel-io/runnel/broker/internal/batch"
	plog "github.com/runnel-io/runnel/broker/internal/log"
)

// txnBatch is makeBatch with the transactional attribute.
func txnBatch(n int, pid int64, epoch int16, seq int32) []byte {
	b := makeBatch(n, 1000, pid, epoch, seq)
	h, _ := batch.ParseHeader(b)
	h.Attributes |= batch.AttrTransactional
	return batch.AppendBatch(nil, &h, b[batch.HeaderSize:])
}

func mustAppendTxn(t *testing.T, p *Partition, b []byte) AppendResult {
	t.Helper()
	res, err := p.Append(b, -1)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Commit(); err != nil {
		t.Fatal(err)
	}
	return res
}

func mustMark(t *testing.T, p *Partition, m Marker) int64 {
	t.Helper()
	off, err := p.AppendMarker(m)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Commit(); err != nil {
		t.Fatal(err)
	}
	return off
}

func wantLSO(t *testing.T, p *Partition, lso int64) {
	t.Helper()
	if got := p.Offsets().LastStable; got != lso {
		t.Fatalf("last stable offset %d, want %d (offsets %+v, open %v)", got, lso, p.Offsets(), openTxns(p))
	}
}

// openTxns returns the open transactions' first offsets by producer id.
func openTxns(p *Partition) [][2]int64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out [][2]int64
	for id, first := range p.mu.txn.open {
		out = append(out, [2]int64{id, first})
	}
	slices.SortFunc(out, func(a, b [2]int64) int { return cmp.Compare(a[0], b[0]) })
	return out
}

// readCommitted reads everything readable for read_committed from offset
// and returns the batches' base offsets and the aborted transactions.
func readCommitted(t *testing.T, p *Partition, offset int64) (bases []int64, aborted string) {
	t.Helper()
	b, _, ab, err := p.ReadCommitted(nil, offset, 1<<20, true)
	if err != nil {
		t.Fatal(err)
	}
	if ab == nil {
		t.Fatal("ReadCommitted returned a nil aborted list")
	}
	for len(b) > 0 {
		h, err := batch.ParseHeader(b)
		if err != nil {
			t.Fatal(err)
		}
		bases = append(bases, h.BaseOffset)
		b = b[h.Size():]
	}
	return bases, fmt.Sprint(ab)
}

// An open transaction pins the LSO at its first offset while the high
// watermark moves; a commit marker releases it; an aborted transaction is
// returned with the read that overlaps it; interleaved producers each hold
// the LSO at their own first offset.
func TestTransactionsLastStableOffset(t *testing.T) {
	p := openTest(t, vfs.NewMem(), testConfig(), nil)
	defer p.Close()
	mustAppendTxn(t, p, makeBatch(1, 1000, -1, -1, -1)) // 0
	mustAppendTxn(t, p, txnBatch(2, 7, 0, 0))           // 1-2: producer 7 opens at 1
	mustAppendTxn(t, p, makeBatch(1, 1000, -1, -1, -1)) // 3
	wantHW(t, p, 4)
	wantLSO(t, p, 1)
	if bases, ab := readCommitted(t, p, 0); !slices.Equal(bases, []int64{0}) || ab != "[]" {
		t.Fatalf("read_committed below an open txn: %v %s", bases, ab)
	}
	mustAppendTxn(t, p, txnBatch(1, 8, 0, 0)) // 4: producer 8 opens at 4
	mustAppendTxn(t, p, txnBatch(1, 7, 0, 2)) // 5: still producer 7's
	if got := fmt.Sprint(openTxns(p)); got != "[[7 1] [8 4]]" {
		t.Fatalf("open transactions %s", got)
	}
	c := mustMark(t, p, Marker{ProducerID: 7, ProducerEpoch: 0, CoordinatorEpoch: 1, Commit: true}) // 6
	if c != 6 {
		t.Fatalf("marker at %d, want 6", c)
	}
	wantLSO(t, p, 4)                                                                  // producer 8's
	a := mustMark(t, p, Marker{ProducerID: 8, ProducerEpoch: 0, CoordinatorEpoch: 1}) // 7: abort
	wantHW(t, p, 8)
	wantLSO(t, p, 8)
	bases, ab := readCommitted(t, p, 0)
	if !slices.Equal(bases, []int64{0, 1, 3, 4, 5, 6, 7}) || ab != "[{8 4}]" {
		t.Fatalf("read_committed after the markers: %v %s", bases, ab)
	}
	if _, ab := readCommitted(t, p, a+1); ab != "[]" {
		t.Fatalf("read after the abort marker: %s", ab)
	}
	if _, ab := readCommitted(t, p, a); ab != "[{8 4}]" {
		t.Fatalf("read at the abort marker: %s", ab)
	}
	// Producer state: 8's transaction is over; it may not write plain
	// batches while one is open, but may now.
	mustAppendTxn(t, p, txnBatch(1, 8, 0, 1)) // 8: opens again
	if _, err := p.Append(makeBatch(1, 1000, 8, 0, 2), -1); !errors.Is(err, ErrInvalidTxnState) {
		t.Fatalf("plain write inside a transaction: %v", err)
	}
	ps := p.Producers()
	if len(ps) != 2 || ps[1].ProducerID != 8 || ps[1].CurrentTxnStartOffset != 8 || ps[1].CoordinatorEpoch != 1 || ps[1].LastSequence != 1 ||
		ps[0].CurrentTxnStartOffset != -1 || ps[0].LastSequence != 2 {
		t.Fatalf("producers %+v", ps)
	}
}

// The LSO waits for the marker to be replicated: with a follower in the
// ISR, a decided transaction holds it until the high watermark passes the
// marker; the fetch waiting on the partition is woken then.
func TestLastStableOffsetWaitsForMarkerReplication(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		now := t0
		p := openReplica(t, vfs.NewMem(), "a", &now)
		mustLead(t, p, LeaderState{ID: 1, LeaderEpoch: 1, PartitionEpoch: 1, Replicas: []int32{1, 2}, ISR: []int32{1, 2}, MinISR: 1})
		p.UpdateFollower(2, 0, now)
		if _, err := p.Append(txnBatch(1, 5, 0, 0), -1); err != nil {
			t.Fatal(err)
		}
		if err := p.Commit(); err != nil {
			t.Fatal(err)
		}
		p.UpdateFollower(2, 1, now)
		wantHW(t, p, 1)
		wantLSO(t, p, 0)
		off, err := p.AppendMarker(Marker{ProducerID: 5, CoordinatorEpoch: 0, Commit: true})
		if err != nil || off != 1 {
			t.Fatalf("AppendMarker = %d, %v", off, err)
		}
		if err := p.Commit(); err != nil {
			t.Fatal(err)
		}
		wantLSO(t, p, 0) // the marker is not replicated
		wake := make(chan struct{}, 1)
		p.Wait(wake)
		defer p.Unwait(wake)
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		done := waitResult(ctx, p, off+1)
		pending(t, done)
		p.UpdateFollower(2, 2, now)
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		select {
		case <-wake:
		default:
			t.Fatal("the fetch waiter was not woken")
		}
		wantHW(t, p, 2)
		wantLSO(t, p, 2)
	})
}

// Markers are refused on a follower, with an older producer epoch, and
// from an older coordinator; a newer producer epoch fences the older one's
// data and restarts the producer's sequence.
func TestMarkerFencing(t *testing.T) {
	p := openTest(t, vfs.NewMem(), testConfig(), nil)
	defer p.Close()
	mustAppendTxn(t, p, txnBatch(1, 9, 2, 0))
	if _, err := p.AppendMarker(Marker{ProducerID: 9, ProducerEpoch: 1, CoordinatorEpoch: 5}); !errors.Is(err, ErrInvalidEpoch) {
		t.Fatalf("older producer epoch: %v", err)
	}
	mustMark(t, p, Marker{ProducerID: 9, ProducerEpoch: 2, CoordinatorEpoch: 5, Commit: true})
	if _, err := p.AppendMarker(Marker{ProducerID: 9, ProducerEpoch: 2, CoordinatorEpoch: 4}); !errors.Is(err, ErrCoordinatorFenced) {
		t.Fatalf("older coordinator epoch: %v", err)
	}
	// A timeout abort at a bumped epoch fences epoch 2.
	mustAppendTxn(t, p, txnBatch(1, 9, 2, 1))
	mustMark(t, p, Marker{ProducerID: 9, ProducerEpoch: 3, CoordinatorEpoch: 5})
	if _, err := p.Append(txnBatch(1, 9, 2, 2), -1); !errors.Is(err, ErrInvalidEpoch) {
		t.Fatalf("zombie write after the bump: %v", err)
	}
	if _, err := p.Append(txnBatch(1, 9, 3, 2), -1); !errors.Is(err, ErrOutOfOrderSequence) {
		t.Fatalf("new epoch not at sequence 0: %v", err)
	}
	mustAppendTxn(t, p, txnBatch(1, 9, 3, 0))
	// A marker for a producer this partition never saw is written.
	mustMark(t, p, Marker{ProducerID: 77, ProducerEpoch: 0, CoordinatorEpoch: 0})
	// A coordinator's batch: no sequence, epoch still checked.
	coord := func(epoch int16) []byte {
		b := makeBatch(1, 1000, 9, epoch, -1)
		h, _ := batch.ParseHeader(b)
		h.Attributes |= batch.AttrTransactional
		return batch.AppendBatch(nil, &h, b[batch.HeaderSize:])
	}
	if _, err := p.AppendCoordinator(coord(2)); !errors.Is(err, ErrInvalidEpoch) {
		t.Fatalf("coordinator batch at an old epoch: %v", err)
	}
	if _, err := p.AppendCoordinator(coord(3)); err != nil {
		t.Fatalf("coordinator batch: %v", err)
	}
	if _, err := p.AppendCoordinator(coord(3)); err != nil { // no dedupe
		t.Fatalf("coordinator batch again: %v", err)
	}
	if err := p.BecomeFollower(2, 2); err != nil {
		t.Fatal(err)
	}
	if _, err := p.AppendMarker(Marker{ProducerID: 9, ProducerEpoch: 3, CoordinatorEpoch: 5}); !errors.Is(err, ErrNotLeader) {
		t.Fatalf("marker on a follower: %v", err)
	}
}

// After a clean close and after a crash (only synced bytes kept, no
// producer snapshot), open transactions stay open at the same first
// offsets, the LSO is the same, and the aborted index answers the same.
func TestTransactionsSurviveRestart(t *testing.T) {
	for _, clean := range []bool{true, false} {
		t.Run(fmt.Sprint("clean=", clean), func(t *testing.T) {
			fs := vfs.NewCrashableMem()
			cfg := testConfig()
			cfg.Log.SegmentBytes = 300 // several segments
			p := openTest(t, fs, cfg, nil)
			mustAppendTxn(t, p, txnBatch(2, 1, 0, 0))                                // 0-1
			mustAppendTxn(t, p, txnBatch(1, 2, 0, 0))                                // 2
			mustMark(t, p, Marker{ProducerID: 1, CoordinatorEpoch: 3})               // 3: abort
			mustAppendTxn(t, p, txnBatch(1, 3, 0, 0))                                // 4
			mustMark(t, p, Marker{ProducerID: 2, CoordinatorEpoch: 3, Commit: true}) // 5
			mustAppendTxn(t, p, makeBatch(1, 1000, -1, -1, -1))                      // 6
			wantLSO(t, p, 4)
			_, ab := readCommitted(t, p, 0)
			if p.Log().NumSegments() < 2 || ab != "[{1 0}]" {
				t.Fatalf("%d segments, aborted %s", p.Log().NumSegments(), ab)
			}
			if clean {
				if err := p.Close(); err != nil {
					t.Fatal(err)
				}
			} else {
				fs = fs.CrashClone(vfs.CrashCloneCfg{})
			}
			p = openTest(t, fs, cfg, nil)
			defer p.Close()
			wantLSO(t, p, 4)
			if got := fmt.Sprint(openTxns(p)); got != "[[3 4]]" {
				t.Fatalf("open after restart: %s", got)
			}
			if _, ab := readCommitted(t, p, 0); ab != "[{1 0}]" {
				t.Fatalf("aborted after restart: %s", ab)
			}
			mustMark(t, p, Marker{ProducerID: 3, CoordinatorEpoch: 3, Commit: true})
			wantLSO(t, p, 8)
			if _, err := p.AppendMarker(Marker{ProducerID: 1, CoordinatorEpoch: 2}); !errors.Is(err, ErrCoordinatorFenced) {
				t.Fatalf("coordinator epoch forgotten: %v", err)
			}
		})
	}
}

// A damaged aborted-transaction index is rebuilt from the log on Open,
// even with a producer snapshot.
func TestTxnIndexRebuiltWhenDamaged(t *testing.T) {
	fs := vfs.NewMem()
	p := openTest(t, fs, testConfig(), nil)
	mustAppendTxn(t, p, txnBatch(1, 1, 0, 0))
	mustMark(t, p, Marker{ProducerID: 1})
	mustAppendTxn(t, p, makeBatch(1, 1000, -1, -1, -1))
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	f, err := fs.Create("p/00000000000000000000.txnindex", vfs.WriteCategoryUnspecified)
	if err != nil {
		t.Fatal(err)
	}
	f.Write([]byte{1, 2, 3})
	f.Close()
	p = openTest(t, fs, testConfig(), nil)
	defer p.Close()
	if _, ab := readCommitted(t, p, 0); ab != "[{1 0}]" {
		t.Fatalf("aborted after a damaged index: %s", ab)
	}
}

// A follower tracks the leader's transactions (AppendReplica), so when it
// leads it has the same LSO and open transactions; truncating a marker
// reopens its transaction and drops its index entry.
func TestFollowerTransactions(t *testing.T) {
	now := t0
	fs := vfs.NewMem()
	a := openReplica(t, fs, "a", &now)
	b := openReplica(t, fs, "b", &now)
	mustLead(t, a, LeaderState{ID: 1, LeaderEpoch: 1, PartitionEpoch: 1, Replicas: []int32{1, 2}, ISR: []int32{1}, MinISR: 1})
	if err := b.BecomeFollower(1, 1); err != nil {
		t.Fatal(err)
	}
	replicate := func() {
		t.Helper()
		data, o, err := a.ReadReplica(nil, b.Offsets().LogEnd, 1<<20)
		if err != nil {
			t.Fatal(err)
		}
		if err := b.AppendReplica(data, o.HighWatermark); err != nil {
			t.Fatal(err)
		}
	}
	mustAppendTxn(t, a, txnBatch(1, 4, 0, 0))                  // 0
	mustAppendTxn(t, a, txnBatch(1, 5, 0, 0))                  // 1
	mustMark(t, a, Marker{ProducerID: 4, CoordinatorEpoch: 1}) // 2: abort
	mustAppendTxn(t, a, makeBatch(1, 1000, -1, -1, -1))        // 3
	replicate()
	replicate() // the high watermark
	wantLSO(t, b, 1)
	if got := fmt.Sprint(openTxns(b)); got != "[[5 1]]" {
		t.Fatalf("follower's open transactions %s", got)
	}
	if _, ab := readCommitted(t, b, 0); ab != "[{4 0}]" {
		t.Fatalf("follower's aborted %s", ab)
	}
	// Truncation below the marker reopens producer 4's transaction.
	if err := b.TruncateTo(2); err != nil {
		t.Fatal(err)
	}
	if got := fmt.Sprint(openTxns(b)); got != "[[4 0] [5 1]]" {
		t.Fatalf("open after truncation %s", got)
	}
	if got := b.Log().AbortedTxns(0, 100); len(got) != 0 {
		t.Fatalf("index after truncation %+v", got)
	}
	wantLSO(t, b, 0)
	replicate()
	replicate()
	mustLead(t, b, LeaderState{ID: 2, LeaderEpoch: 2, PartitionEpoch: 2, Replicas: []int32{2, 1}, ISR: []int32{2}, MinISR: 1})
	wantLSO(t, b, 1)
	if _, ab := readCommitted(t, b, 0); ab != "[{4 0}]" {
		t.Fatalf("new leader's aborted %s", ab)
	}
	mustMark(t, b, Marker{ProducerID: 5, CoordinatorEpoch: 1, Commit: true})
	wantLSO(t, b, 5)
}

// Compaction never cleans at or past the LSO, and removes aborted records.
func TestCleanRespectsTransactions(t *testing.T) {
	p := openTest(t, vfs.NewMem(), compactedConfig(200), nil)
	defer p.Close()
	mustAppendTxn(t, p, makeBatch(1, 1000, -1, -1, -1)) // 0: k=value
	mustAppendTxn(t, p, txnBatch(1, 6, 0, 0))           // 1: aborted k
	mustMark(t, p, Marker{ProducerID: 6})               // 2
	mustAppendTxn(t, p, txnBatch(1, 7, 0, 0))           // 3: open
	for range 6 {
		mustAppendTxn(t, p, makeBatch(1, 1000, -1, -1, -1))
	}
	wantLSO(t, p, 3)
	if c := p.Cleanable(); c.FirstUncleanable > 3 {
		t.Fatalf("cleanable past the LSO: %+v", c)
	}
	if _, err := p.Clean(context.Background(), plog.NewOffsetMap(1<<20, 0), plog.CleanOptions{}); err != nil {
		t.Fatal(err)
	}
	var kept []int64
	if err := p.Log().Scan(0, func(h batch.Header) error {
		if h.NumRecords > 0 {
			kept = append(kept, h.BaseOffset)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	// Offset 0 stays: the aborted write of its key at 1 does not shadow
	// it, and the open transaction's at 3 is past the LSO, out of the
	// map. The aborted batch at 1 lost its record (it stays empty, as
	// producer 6's newest); the marker and everything from 3 on stay.
	if !slices.Contains(kept, 0) || slices.Contains(kept, 1) || !slices.Contains(kept, 2) || !slices.Contains(kept, 3) {
		t.Fatalf("batches with records after cleaning: %v", kept)
	}
}
