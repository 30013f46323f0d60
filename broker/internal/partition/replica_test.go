package partition

import (
	"bytes"
	"context"
	"errors"
	"slices"
	"testing"
	"testing/synctest"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
)

var t0 = time.UnixMilli(1_000_000)

// openReplica opens partition dir on fs with a clock that reads *now.
func openReplica(t *testing.T, fs vfs.FS, dir string, now *time.Time) *Partition {
	t.Helper()
	p, err := Open(Options{FS: fs, Dir: dir, Topic: "t", Config: testConfig(), Now: func() time.Time { return *now }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	return p
}

func mustLead(t *testing.T, p *Partition, st LeaderState) {
	t.Helper()
	if err := p.BecomeLeader(st); err != nil {
		t.Fatal(err)
	}
}

// appendCommit appends n one-record batches without producer ids and commits.
func appendCommit(t *testing.T, p *Partition, n int, acks int16) AppendResult {
	t.Helper()
	var res AppendResult
	for range n {
		var err error
		if res, err = p.Append(makeBatch(1, 0, -1, -1, -1), acks); err != nil {
			t.Fatal(err)
		}
	}
	if err := p.Commit(); err != nil {
		t.Fatal(err)
	}
	return res
}

func wantHW(t *testing.T, p *Partition, hw int64) {
	t.Helper()
	if got := p.Offsets().HighWatermark; got != hw {
		t.Fatalf("high watermark %d, want %d", got, hw)
	}
}

// A partition given no role, or made leader alone with min.insync.replicas
// 1, behaves as a single replica always did: the high watermark is the
// durable end, and acks=all is answered at once.
func TestSingleReplicaUnchanged(t *testing.T) {
	for _, lead := range []bool{false, true} {
		now := t0
		p := openReplica(t, vfs.NewMem(), "p", &now)
		if lead {
			mustLead(t, p, LeaderState{ID: 1, LeaderEpoch: 1, Replicas: []int32{1}, ISR: []int32{1}, MinISR: 1})
		} else if p.ISR() != nil {
			t.Fatalf("ISR of a partition given no role: %v", p.ISR())
		}
		if l, _ := p.Role(); !l {
			t.Fatal("not leader")
		}
		res, err := p.Append(makeBatch(2, 0, -1, -1, -1), -1)
		if err != nil {
			t.Fatal(err)
		}
		wantHW(t, p, 0)
		if err := p.Commit(); err != nil {
			t.Fatal(err)
		}
		wantHW(t, p, 2)
		if err := p.WaitReplicated(context.Background(), res.LastOffset+1); err != nil {
			t.Fatalf("acks=all alone: %v", err)
		}
	}

	cfg := testConfig()
	cfg.Log.FlushNever = true
	p := openTest(t, vfs.NewMem(), cfg, nil)
	defer p.Close()
	mustLead(t, p, LeaderState{ID: 1, LeaderEpoch: 1, Replicas: []int32{1}, ISR: []int32{1}, MinISR: 1})
	if _, err := p.Append(makeBatch(3, 0, -1, -1, -1), 1); err != nil {
		t.Fatal(err)
	}
	wantHW(t, p, 3) // log.flush=never: visible at append
}

// The high watermark is the least of the leader's durable end and the log
// end of every ISR member, and never moves back.
func TestHighWatermarkIsMinOfISR(t *testing.T) {
	now := t0
	p := openReplica(t, vfs.NewMem(), "p", &now)
	mustLead(t, p, LeaderState{ID: 1, LeaderEpoch: 1, Replicas: []int32{1, 2, 3}, ISR: []int32{1, 2, 3}, MinISR: 2})
	appendCommit(t, p, 6, 1)
	wantHW(t, p, 0) // followers not heard from

	steps := []struct {
		id       int32
		offset   int64
		hw       int64
		hwChange bool
	}{
		{2, 4, 0, false}, // 3 still unknown
		{3, 2, 2, true},
		{3, 6, 4, true},
		{2, 6, 6, true},
		{2, 3, 6, false}, // a lower fetch does not lower the high watermark
		{9, 6, 6, false}, // not a replica: ignored
		{3, 7, 6, false}, // beyond the leader's log end: ignored
	}
	for _, s := range steps {
		u := p.UpdateFollower(s.id, s.offset, now)
		if u.HighWatermark != s.hw || u.HWChanged != s.hwChange || u.ExpandISR != nil {
			t.Fatalf("UpdateFollower(%d, %d) = %+v, want hw %d changed %v", s.id, s.offset, u, s.hw, s.hwChange)
		}
		wantHW(t, p, s.hw)
	}

	// Followers may hold more than the leader's durable end: that bounds it.
	for range 2 {
		if _, err := p.Append(makeBatch(1, 0, -1, -1, -1), 1); err != nil {
			t.Fatal(err)
		}
	}
	p.UpdateFollower(2, 8, now)
	p.UpdateFollower(3, 8, now)
	wantHW(t, p, 6)
	if err := p.Commit(); err != nil {
		t.Fatal(err)
	}
	wantHW(t, p, 8)
	if lag := p.FollowerLag(); lag[2] != 0 || lag[3] != 0 || len(lag) != 2 {
		t.Fatalf("lag %v", lag)
	}
	appendCommit(t, p, 1, 1)
	if lag := p.FollowerLag(); lag[2] != 1 || lag[3] != 1 {
		t.Fatalf("lag %v", lag)
	}
}

// A shrink committed by the controller lets the high watermark move past
// the removed follower.
func TestSetISRShrinkMovesHighWatermark(t *testing.T) {
	now := t0
	p := openReplica(t, vfs.NewMem(), "p", &now)
	mustLead(t, p, LeaderState{ID: 1, LeaderEpoch: 1, PartitionEpoch: 5, Replicas: []int32{1, 2, 3}, ISR: []int32{1, 2, 3}, MinISR: 1})
	appendCommit(t, p, 4, 1)
	p.UpdateFollower(2, 4, now)
	wantHW(t, p, 0)
	p.SetISR([]int32{1, 2}, 5) // not newer: ignored
	wantHW(t, p, 0)
	p.SetISR([]int32{1, 2}, 6)
	wantHW(t, p, 4)
	if got := p.ISR(); !slices.Equal(got, []int32{1, 2}) {
		t.Fatalf("ISR %v", got)
	}
}

func TestNotEnoughReplicasBeforeAppend(t *testing.T) {
	now := t0
	p := openReplica(t, vfs.NewMem(), "p", &now)
	mustLead(t, p, LeaderState{ID: 1, LeaderEpoch: 1, Replicas: []int32{1, 2}, ISR: []int32{1}, MinISR: 2})
	if _, err := p.Append(makeBatch(1, 0, -1, -1, -1), -1); !errors.Is(err, ErrNotEnoughReplicas) {
		t.Fatalf("acks=all with ISR below min.insync.replicas: %v", err)
	}
	if p.Offsets().LogEnd != 0 {
		t.Fatal("a refused batch was written")
	}
	for _, acks := range []int16{0, 1} {
		if _, err := p.Append(makeBatch(1, 0, -1, -1, -1), acks); err != nil {
			t.Fatalf("acks=%d: %v", acks, err)
		}
	}
	if err := p.BecomeFollower(2, 2); err != nil {
		t.Fatal(err)
	}
	if _, err := p.Append(makeBatch(1, 0, -1, -1, -1), 1); !errors.Is(err, ErrNotLeader) {
		t.Fatalf("append on a follower: %v", err)
	}
	if l, e := p.Role(); l || e != 2 {
		t.Fatalf("Role() = %v, %d", l, e)
	}
	if err := p.BecomeLeader(LeaderState{ID: 1, LeaderEpoch: 1}); !errors.Is(err, ErrStaleLeaderEpoch) {
		t.Fatalf("stale BecomeLeader: %v", err)
	}
}

// waitResult runs WaitReplicated in a goroutine of the synctest bubble.
func waitResult(ctx context.Context, p *Partition, end int64) <-chan error {
	ch := make(chan error, 1)
	go func() { ch <- p.WaitReplicated(ctx, end) }()
	return ch
}

func pending(t *testing.T, ch <-chan error) {
	t.Helper()
	synctest.Wait()
	select {
	case err := <-ch:
		t.Fatalf("WaitReplicated returned early: %v", err)
	default:
	}
}

func TestWaitReplicated(t *testing.T) {
	st := LeaderState{ID: 1, LeaderEpoch: 1, PartitionEpoch: 1, Replicas: []int32{1, 2, 3}, ISR: []int32{1, 2, 3}, MinISR: 2}
	setup := func(t *testing.T) (*Partition, int64) {
		now := t0
		p := openReplica(t, vfs.NewMem(), "p", &now)
		mustLead(t, p, st)
		res := appendCommit(t, p, 3, -1)
		return p, res.LastOffset + 1
	}
	t.Run("replicated", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			p, end := setup(t)
			ch := waitResult(t.Context(), p, end)
			pending(t, ch)
			p.UpdateFollower(2, end, t0)
			pending(t, ch) // 3 has not fetched
			p.UpdateFollower(3, end-1, t0)
			pending(t, ch)
			p.UpdateFollower(3, end, t0)
			if err := <-ch; err != nil {
				t.Fatal(err)
			}
		})
	})
	t.Run("followers stop keeping up", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			now := t0
			p := openReplica(t, vfs.NewMem(), "p", &now)
			mustLead(t, p, st)
			end := appendCommit(t, p, 3, -1).LastOffset + 1
			ch := waitResult(t.Context(), p, end)
			pending(t, ch)
			// Within the lag time the write keeps waiting...
			now = t0.Add(5 * time.Second)
			p.CheckISR(now, 10*time.Second)
			pending(t, ch)
			// ...past it, with the ISR unchanged (no controller to
			// shrink it), the write gives up.
			now = t0.Add(11 * time.Second)
			if shrink := p.CheckISR(now, 10*time.Second); shrink == nil {
				t.Fatal("CheckISR proposed no shrink")
			}
			p.AbortISRChange()
			if err := <-ch; !errors.Is(err, ErrNotEnoughReplicasAfterAppend) {
				t.Fatalf("got %v, want ErrNotEnoughReplicasAfterAppend", err)
			}
		})
	})
	t.Run("shrink below min.insync.replicas", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			p, end := setup(t)
			ch := waitResult(t.Context(), p, end)
			p.SetISR([]int32{1, 2}, 2) // still 2 >= MinISR
			pending(t, ch)
			p.SetISR([]int32{1}, 3)
			if err := <-ch; !errors.Is(err, ErrNotEnoughReplicasAfterAppend) {
				t.Fatalf("got %v", err)
			}
		})
	})
	t.Run("leadership lost", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			p, end := setup(t)
			ch := waitResult(t.Context(), p, end)
			pending(t, ch)
			if err := p.BecomeFollower(2, 2); err != nil {
				t.Fatal(err)
			}
			if err := <-ch; !errors.Is(err, ErrNotLeader) {
				t.Fatalf("got %v", err)
			}
		})
	})
	t.Run("closed", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			p, end := setup(t)
			ch := waitResult(t.Context(), p, end)
			pending(t, ch)
			p.Close()
			if err := <-ch; !errors.Is(err, ErrNotLeader) || !errors.Is(err, ErrClosed) {
				t.Fatalf("got %v", err)
			}
		})
	})
	t.Run("context", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			p, end := setup(t)
			ctx, cancel := context.WithTimeout(t.Context(), time.Second)
			defer cancel()
			if err := <-waitResult(ctx, p, end); !errors.Is(err, context.DeadlineExceeded) {
				t.Fatalf("got %v", err)
			}
		})
	})
}

// Kafka's rule for lastCaughtUp, and the ISR shrink by lag time.
func TestCheckISRShrinksLaggingFollowers(t *testing.T) {
	now := t0
	sec := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }
	const lagMax = 10 * time.Second
	p := openReplica(t, vfs.NewMem(), "p", &now)
	mustLead(t, p, LeaderState{ID: 1, LeaderEpoch: 1, PartitionEpoch: 1, Replicas: []int32{1, 2, 3}, ISR: []int32{1, 2, 3}, MinISR: 1})
	appendCommit(t, p, 2, 1) // leader log end 2

	if got := p.CheckISR(sec(10), lagMax); got != nil {
		t.Fatalf("within lagMax of BecomeLeader: shrink %v", got)
	}
	p.UpdateFollower(2, 2, sec(1)) // at the leader's end: caught up at 1s
	appendCommit(t, p, 2, 1)       // leader log end 4
	// At 20s 2 fetches at 2: behind now, but at the leader's end as of its
	// previous fetch, so it was caught up then (1s) — 19s ago.
	p.UpdateFollower(2, 2, sec(20))
	// 3 never fetched since BecomeLeader (0s).
	if got := p.CheckISR(sec(20), lagMax); !slices.Equal(got, []int32{1}) {
		t.Fatalf("shrink %v, want [1]", got)
	}
	if got := p.CheckISR(sec(20), lagMax); got != nil {
		t.Fatalf("a second proposal while one is pending: %v", got)
	}
	p.AbortISRChange()

	appendCommit(t, p, 2, 1) // leader log end 6
	// At 21s 2 fetches at 4, the leader's end at its previous fetch (20s):
	// caught up as of 20s.
	p.UpdateFollower(2, 4, sec(21))
	if got := p.CheckISR(sec(29), lagMax); !slices.Equal(got, []int32{1, 2}) {
		t.Fatalf("shrink %v, want [1 2]", got)
	}
	p.SetISR([]int32{1, 2}, 2)
	wantHW(t, p, 4)

	// A follower holding everything the leader has never lags, however
	// long ago it fetched.
	p.UpdateFollower(2, 6, sec(30))
	if got := p.CheckISR(sec(1000), lagMax); got != nil {
		t.Fatalf("caught-up follower dropped: %v", got)
	}
}

// A follower joins the ISR once it reaches the high watermark and the start
// of the current leader epoch (Kafka's isFollowerInSync).
func TestUpdateFollowerExpandsISR(t *testing.T) {
	now := t0
	p := openReplica(t, vfs.NewMem(), "p", &now)
	st := LeaderState{ID: 1, LeaderEpoch: 1, PartitionEpoch: 1, Replicas: []int32{1, 2, 3}, ISR: []int32{1, 2}, MinISR: 1}
	mustLead(t, p, st)
	appendCommit(t, p, 8, 1)
	p.UpdateFollower(2, 8, now)
	wantHW(t, p, 8)
	// A new leadership at epoch 2 starts at 10; the high watermark stays 8.
	appendCommit(t, p, 2, 1)
	st.LeaderEpoch, st.PartitionEpoch = 2, 2
	mustLead(t, p, st)
	wantHW(t, p, 8)

	if u := p.UpdateFollower(3, 7, now); u.ExpandISR != nil {
		t.Fatalf("below the high watermark: %+v", u)
	}
	if u := p.UpdateFollower(3, 9, now); u.ExpandISR != nil {
		t.Fatalf("before the leader epoch's start: %+v", u)
	}
	u := p.UpdateFollower(3, 10, now)
	if !slices.Equal(u.ExpandISR, []int32{1, 2, 3}) {
		t.Fatalf("expand %+v, want [1 2 3]", u)
	}
	if u := p.UpdateFollower(3, 10, now); u.ExpandISR != nil {
		t.Fatalf("proposed again while pending: %+v", u)
	}
	// While pending, the high watermark also waits for 3.
	appendCommit(t, p, 2, 1)
	p.UpdateFollower(2, 12, now)
	wantHW(t, p, 10)
	p.AbortISRChange()
	wantHW(t, p, 12)
	u = p.UpdateFollower(3, 12, now)
	if !slices.Equal(u.ExpandISR, []int32{1, 2, 3}) {
		t.Fatalf("after abort: %+v", u)
	}
	p.SetISR(u.ExpandISR, 3)
	if got := p.ISR(); !slices.Equal(got, []int32{1, 2, 3}) {
		t.Fatalf("ISR %v", got)
	}
	if u := p.UpdateFollower(3, 12, now); u.ExpandISR != nil || u.HighWatermark != 12 {
		t.Fatalf("member: %+v", u)
	}
}

// Followers read past the high watermark; consumers do not; and a follower
// fetch waits on the log end, not the high watermark.
func TestReadReplicaPastHighWatermark(t *testing.T) {
	now := t0
	p := openReplica(t, vfs.NewMem(), "p", &now)
	mustLead(t, p, LeaderState{ID: 1, LeaderEpoch: 1, Replicas: []int32{1, 2}, ISR: []int32{1, 2}, MinISR: 1})
	appendCh, hwCh := make(chan struct{}, 1), make(chan struct{}, 1)
	p.WaitAppend(appendCh)
	defer p.UnwaitAppend(appendCh)
	p.Wait(hwCh)
	defer p.Unwait(hwCh)
	appendCommit(t, p, 3, 1)
	select {
	case <-appendCh:
	default:
		t.Fatal("WaitAppend not woken by an append")
	}
	select {
	case <-hwCh:
		t.Fatal("Wait woken, yet the high watermark did not move")
	default:
	}
	got, o, err := p.Read(nil, 0, 1<<20, true)
	if err != nil || len(got) != 0 || o.HighWatermark != 0 {
		t.Fatalf("consumer read: %d bytes, %+v, %v", len(got), o, err)
	}
	got, o, err = p.ReadReplica(nil, 0, 1<<20)
	if next, _ := nextOffset(got); err != nil || next != 3 || o.LogEnd != 3 {
		t.Fatalf("replica read to %d, %+v, %v", next, o, err)
	}
	if err := p.BecomeFollower(2, 2); err != nil {
		t.Fatal(err)
	}
	if _, _, err := p.ReadReplica(nil, 0, 1<<20); !errors.Is(err, ErrNotLeader) {
		t.Fatalf("replica read from a follower: %v", err)
	}
}

// A replica that led epoch 1 and wrote a tail no one else got becomes a
// follower in epoch 2, truncates the divergent tail (KIP-101), and catches
// up. Its producer table is rebuilt, so duplicates are still recognized
// when it leads again.
func TestFollowerTruncatesDivergentTailAndCatchesUp(t *testing.T) {
	now := t0
	fs := vfs.NewMem()
	a := openReplica(t, fs, "a", &now) // node 1
	b := openReplica(t, fs, "b", &now) // node 2
	mustAppend := func(p *Partition, batch []byte) AppendResult {
		t.Helper()
		res, err := p.Append(batch, 1)
		if err != nil || res.Duplicate {
			t.Fatalf("append: %+v %v", res, err)
		}
		if err := p.Commit(); err != nil {
			t.Fatal(err)
		}
		return res
	}
	// replicate runs one fetch of follower f (node id) from leader l.
	replicate := func(f, l *Partition, id int32) {
		t.Helper()
		data, o, err := l.ReadReplica(nil, f.Offsets().LogEnd, 1<<20)
		if err != nil {
			t.Fatal(err)
		}
		if err := f.AppendReplica(data, o.HighWatermark); err != nil {
			t.Fatal(err)
		}
		l.UpdateFollower(id, f.Offsets().LogEnd, now)
	}

	// Epoch 1: b leads. Producer 7 writes offset 0, producer 42 offsets 1-2;
	// a replicates them.
	mustLead(t, b, LeaderState{ID: 2, LeaderEpoch: 1, PartitionEpoch: 1, Replicas: []int32{2, 1}, ISR: []int32{2, 1}, MinISR: 1})
	if err := a.BecomeFollower(1, 2); err != nil {
		t.Fatal(err)
	}
	mustAppend(b, makeBatch(1, 0, 7, 0, 0))
	mustAppend(b, makeBatch(2, 0, 42, 0, 0))
	replicate(a, b, 1)
	replicate(a, b, 1) // a learns the high watermark
	wantHW(t, b, 3)
	wantHW(t, a, 3)
	if err := a.AppendReplica(makeBatch(1, 0, -1, -1, -1), 3); err == nil {
		t.Fatal("AppendReplica accepted a batch that does not start at the log end")
	}
	// b writes five more batches of producer 7 (offsets 3-7) that a never
	// gets: they push producer 7's first batch out of b's table.
	for seq := int32(1); seq <= 5; seq++ {
		mustAppend(b, makeBatch(1, 0, 7, 0, seq))
	}
	wantHW(t, b, 3)

	// Epoch 2: a leads. The producers retry: 7's seq 1 lands at 3, 42's
	// seq 2 at 4-5.
	mustLead(t, a, LeaderState{ID: 1, LeaderEpoch: 2, PartitionEpoch: 2, Replicas: []int32{2, 1}, ISR: []int32{1, 2}, MinISR: 1})
	if err := b.BecomeFollower(2, 1); err != nil {
		t.Fatal(err)
	}
	if err := b.AppendReplica(nil, 0); err != nil { // an empty fetch: nothing moves back
		t.Fatal(err)
	}
	wantHW(t, b, 3)
	mustAppend(a, makeBatch(1, 0, 7, 0, 1))
	mustAppend(a, makeBatch(2, 0, 42, 0, 2))

	// b finds where it diverged: a's end of epoch 1.
	if e, end := a.Log().Epochs().EndOffsetFor(1); e != 1 || end != 3 {
		t.Fatalf("EndOffsetFor(1) = %d, %d", e, end)
	}
	if err := a.TruncateTo(3); !errors.Is(err, ErrNotFollower) {
		t.Fatalf("a leader truncated: %v", err)
	}
	if err := b.TruncateTo(3); err != nil {
		t.Fatal(err)
	}
	if o := b.Offsets(); o.LogEnd != 3 || o.HighWatermark != 3 {
		t.Fatalf("after truncation: %+v", o)
	}
	if err := b.AppendReplica(nil, 6); err != nil { // the leader's is ahead of b's log end
		t.Fatal(err)
	}
	wantHW(t, b, 3)
	// Producer 7's state came back from the log: its batch at offset 0.
	if dup, err := b.producers.check(hdr(7, 0, 0, 1, 0)); err != nil || dup == nil || dup.BaseOffset != 0 {
		t.Fatalf("producer 7 after truncation: %+v, %v", dup, err)
	}
	if dup, err := b.producers.check(hdr(42, 0, 0, 2, 0)); err != nil || dup == nil || dup.BaseOffset != 1 {
		t.Fatalf("producer 42 after truncation: %+v, %v", dup, err)
	}

	replicate(b, a, 2)
	replicate(b, a, 2)
	wantHW(t, a, 6)
	wantHW(t, b, 6)
	da, _, _ := a.ReadReplica(nil, 0, 1<<20)
	if err := b.BecomeLeader(LeaderState{ID: 2, LeaderEpoch: 3, PartitionEpoch: 3, Replicas: []int32{2, 1}, ISR: []int32{2}, MinISR: 1}); err != nil {
		t.Fatal(err)
	}
	db, _, _ := b.ReadReplica(nil, 0, 1<<20)
	if !bytes.Equal(da, db) {
		t.Fatal("the follower's log differs from the leader's after catching up")
	}
	// Epoch 3: b leads again and recognizes the retries.
	for _, c := range []struct {
		batch []byte
		base  int64
	}{
		{makeBatch(1, 0, 7, 0, 1), 3},
		{makeBatch(2, 0, 42, 0, 2), 4},
	} {
		res, err := b.Append(c.batch, 1)
		if err != nil || !res.Duplicate || res.BaseOffset != c.base {
			t.Fatalf("retry on the new leader: %+v, %v; want a duplicate at %d", res, err, c.base)
		}
	}
	if res := mustAppend(b, makeBatch(1, 0, 7, 0, 2)); res.BaseOffset != 6 {
		t.Fatalf("next batch at %d, want 6", res.BaseOffset)
	}
	if _, err := b.Append(makeBatch(1, 0, 7, 0, 5), 1); !errors.Is(err, ErrOutOfOrderSequence) {
		t.Fatalf("a sequence from the truncated tail: %v", err)
	}
}

// TestNotEnoughReplicasWhileFollowersLag: an ISR that cannot shrink (the
// controller refused or cannot be reached) still counts, for acks=all,
// only the members caught up within replica.lag.time.max.ms: with fewer
// than min.insync.replicas of them the append is refused before it is
// written, and accepted again once a follower catches up.
func TestNotEnoughReplicasWhileFollowersLag(t *testing.T) {
	now := t0
	sec := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }
	const lagMax = 10 * time.Second
	p := openReplica(t, vfs.NewMem(), "p", &now)
	mustLead(t, p, LeaderState{ID: 1, LeaderEpoch: 1, PartitionEpoch: 1, Replicas: []int32{1, 2, 3}, ISR: []int32{1, 2, 3}, MinISR: 2})
	appendCommit(t, p, 2, 1)
	p.UpdateFollower(2, 2, sec(1))
	p.UpdateFollower(3, 2, sec(1))
	appendCommit(t, p, 2, 1) // log end 4; both followers stop fetching

	now = sec(30)
	if got := p.CheckISR(now, lagMax); !slices.Equal(got, []int32{1}) {
		t.Fatalf("CheckISR = %v, want [1]", got)
	}
	p.AbortISRChange() // the controller could not be reached
	end := p.Offsets().LogEnd
	if _, err := p.Append(makeBatch(1, 0, -1, -1, -1), -1); !errors.Is(err, ErrNotEnoughReplicas) {
		t.Fatalf("acks=all with both followers lagging: %v", err)
	}
	if p.Offsets().LogEnd != end {
		t.Fatal("a refused batch was written")
	}
	if _, err := p.Append(makeBatch(1, 0, -1, -1, -1), 1); err != nil {
		t.Fatalf("acks=1 is the leader's alone: %v", err)
	}
	p.UpdateFollower(2, p.Offsets().LogEnd, now) // follower 2 catches up
	if _, err := p.Append(makeBatch(1, 0, -1, -1, -1), -1); err != nil {
		t.Fatalf("acks=all with a follower caught up again: %v", err)
	}
}
