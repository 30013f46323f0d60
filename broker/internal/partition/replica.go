package partition

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"
)

// Errors of replication, mapped to Kafka codes by the server.
var (
	// ErrNotLeader: the partition is not the leader here (or was closed):
	// NOT_LEADER_OR_FOLLOWER.
	ErrNotLeader = errors.New("partition: not the leader")
	// ErrNotEnoughReplicas: an acks=all produce refused before it was
	// written, because the ISR is smaller than min.insync.replicas.
	ErrNotEnoughReplicas = errors.New("partition: fewer in-sync replicas than min.insync.replicas")
	// ErrNotEnoughReplicasAfterAppend: an acks=all produce was written but
	// the ISR shrank below min.insync.replicas before it was replicated.
	ErrNotEnoughReplicasAfterAppend = errors.New("partition: in-sync replicas fell below min.insync.replicas after the append")
	// ErrNotFollower: AppendReplica or TruncateTo on a partition that is not
	// a follower here.
	ErrNotFollower = errors.New("partition: not a follower")
	// ErrStaleLeaderEpoch: BecomeLeader or BecomeFollower with a leader
	// epoch older than the partition's.
	ErrStaleLeaderEpoch = errors.New("partition: leader epoch older than the current one")
)

type role uint8

const (
	roleLeader role = iota // the zero value: an opened partition leads alone
	roleFollower
)

// replication is a replica's role and, on a leader, what it knows of the
// followers (Kafka's Partition and Replica state). Guarded by Partition.mu.
type replication struct {
	role           role
	id             int32 // this node; -1 until BecomeLeader
	leader         int32 // on a follower: the leader's id
	partitionEpoch int32
	replicas       []int32
	isr            []int32 // committed by the controller
	// pending is an ISR change proposed (UpdateFollower, CheckISR) and not
	// yet committed (SetISR) or abandoned (AbortISRChange); nil when none.
	// While one is pending no other is proposed, and the high watermark
	// waits for the members of both (Kafka's maximal ISR).
	pending []int32
	minISR  int
	// lagMax is replica.lag.time.max.ms as CheckISR was last given it
	// (0 until then): acks=all appends are refused while fewer than
	// minISR members have caught up within it.
	lagMax     time.Duration
	epochStart int64 // first offset of the current leader epoch
	// durableEnd is the end of this replica's durable log: what Commit
	// fsynced (the log end at append with log.flush=never; what
	// AppendReplica fsynced on a follower).
	durableEnd int64
	followers  map[int32]*follower
	// changed is closed and replaced whenever something WaitReplicated
	// looks at changes: the high watermark, the ISR, the role, Close.
	changed       chan struct{}
	appendWaiters map[chan struct{}]struct{} // woken when the log end moves
}

// follower is what a leader knows of one follower (Kafka's ReplicaState).
type follower struct {
	leo                int64 // the offset of its last fetch; -1: unknown
	lastFetchLeaderLEO int64 // the leader's log end at its last fetch; -1: none
	lastFetchTime      time.Time
	// lastCaughtUp is the latest time at which the follower had everything
	// the leader had then; CheckISR drops followers for which that is too
	// long ago.
	lastCaughtUp time.Time
}

func newReplication(leo int64) replication {
	return replication{
		id: -1, leader: -1, epochStart: leo, durableEnd: leo,
		followers:     map[int32]*follower{},
		changed:       make(chan struct{}),
		appendWaiters: map[chan struct{}]struct{}{},
	}
}

// LeaderState is what the controller decided for a partition this node
// leads.
type LeaderState struct {
	ID             int32 // this node
	LeaderEpoch    int32
	PartitionEpoch int32
	Replicas, ISR  []int32
	MinISR         int // min.insync.replicas of the topic
}

// BecomeLeader makes this replica the leader (Kafka's makeLeader). It
// starts st.LeaderEpoch in the epoch cache at the log end offset (unless the
// cache already has it) and makes sure the whole log is durable. A new
// leadership (this node was not leading, or led an older epoch) forgets
// every follower's log end offset until its next fetch, and counts an ISR
// member as caught up now (so CheckISR drops one that never fetches) and any
// other as never; the same leadership again (a metadata refresh) keeps what
// the followers reported. The high watermark is kept: it never moves back on
// a leader, and moves on once the ISR's followers have fetched.
func (p *Partition) BecomeLeader(st LeaderState) error {
	p.appendMu.Lock()
	defer p.appendMu.Unlock()
	p.mu.Lock()
	closed, cur := p.mu.closed, p.mu.leaderEpoch
	p.mu.Unlock()
	if closed {
		return ErrClosed
	}
	if st.LeaderEpoch < cur {
		return fmt.Errorf("%w: leader epoch %d < %d", ErrStaleLeaderEpoch, st.LeaderEpoch, cur)
	}
	// A former follower synced all it has; a former leader may still have
	// appends whose Commit has not run. Either way this is cheap, and the
	// durable end is then the log end.
	if err := p.log.Sync(); err != nil {
		return err
	}
	leo := p.log.LogEndOffset()
	epochs := p.log.Epochs()
	if e, _ := epochs.Latest(); e < st.LeaderEpoch {
		if err := epochs.Assign(st.LeaderEpoch, leo); err != nil {
			return err
		}
	}
	start := leo
	if e, s := epochs.Latest(); e == st.LeaderEpoch {
		start = s
	}
	now := p.now()

	p.mu.Lock()
	defer p.mu.Unlock()
	r := &p.mu.repl
	renewed := r.role == roleLeader && p.mu.leaderEpoch == st.LeaderEpoch && r.id == st.ID
	p.mu.leaderEpoch = st.LeaderEpoch
	r.role, r.id, r.leader = roleLeader, st.ID, st.ID
	r.partitionEpoch = st.PartitionEpoch
	r.replicas, r.isr = slices.Clone(st.Replicas), slices.Clone(st.ISR)
	r.pending = nil
	r.minISR = st.MinISR
	r.epochStart = start
	r.durableEnd = leo // synced above; appendMu held, so nothing was appended since
	old := r.followers
	r.followers = make(map[int32]*follower, len(st.Replicas))
	for _, id := range st.Replicas {
		if id == st.ID {
			continue
		}
		inSync := slices.Contains(st.ISR, id)
		f := &follower{leo: -1, lastFetchLeaderLEO: -1}
		if o := old[id]; renewed && o != nil {
			// Kafka's resetReplicaState for a re-elected leader.
			f.leo = o.leo
			f.lastFetchLeaderLEO = leo
		}
		if inSync {
			f.lastCaughtUp = now
			if renewed {
				f.lastFetchTime = now
			}
		}
		r.followers[id] = f
	}
	p.updateHWLocked()
	p.signalLocked()
	return nil
}

// SetISR applies an ISR the controller committed (the answer to a proposal
// from UpdateFollower or CheckISR, or a change made by someone else). It is
// ignored unless this replica leads and partitionEpoch is newer than the
// one it has. It ends any pending proposal and recomputes the high
// watermark (a shrink may let it move); acks=all waiters look again at the
// ISR's size.
func (p *Partition) SetISR(isr []int32, partitionEpoch int32) {
	p.mu.Lock()
	defer p.mu.Unlock()
	r := &p.mu.repl
	if r.role != roleLeader || p.mu.closed || partitionEpoch <= r.partitionEpoch {
		return
	}
	r.isr, r.partitionEpoch, r.pending = slices.Clone(isr), partitionEpoch, nil
	p.updateHWLocked()
	p.signalLocked()
}

// AbortISRChange forgets the pending ISR proposal (the controller refused it
// or could not be reached), so that UpdateFollower and CheckISR may propose
// again.
func (p *Partition) AbortISRChange() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.mu.repl.pending != nil {
		p.mu.repl.pending = nil
		p.updateHWLocked()
	}
}

// SetMinISR changes min.insync.replicas (a topic config change).
func (p *Partition) SetMinISR(n int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.mu.repl.minISR = n
	p.signalLocked()
}

// leaderCheckLocked returns the leader epoch to stamp on an append, or why
// this replica may not append now.
func (p *Partition) leaderCheckLocked(acks int16) (int32, error) {
	r := &p.mu.repl
	switch {
	case p.mu.closed:
		return 0, ErrClosed
	case r.role != roleLeader:
		return 0, fmt.Errorf("%w: %s-%d is led by %d", ErrNotLeader, p.Topic, p.Index, r.leader)
	case acks == -1 && len(r.isr) < r.minISR:
		return 0, fmt.Errorf("%w: ISR %v, min.insync.replicas %d", ErrNotEnoughReplicas, r.isr, r.minISR)
	case acks == -1 && r.lagMax > 0 && p.inSyncLocked(p.now()) < r.minISR:
		// The ISR cannot shrink without the controller (with no quorum
		// it cannot shrink at all), but its followers have not kept up
		// for replica.lag.time.max.ms: refuse now rather than take a
		// write that would wait for them until its timeout.
		return 0, fmt.Errorf("%w: ISR %v has fewer than min.insync.replicas %d members caught up within replica.lag.time.max.ms",
			ErrNotEnoughReplicas, r.isr, r.minISR)
	}
	return p.mu.leaderEpoch, nil
}

// inSyncLocked counts the ISR members that are caught up: this replica,
// and the followers at the leader's log end or caught up within lagMax of
// now (the members CheckISR keeps).
func (p *Partition) inSyncLocked(now time.Time) int {
	r := &p.mu.repl
	leo := p.log.LogEndOffset()
	n := 0
	for _, id := range r.isr {
		if f := r.followers[id]; id == r.id || (f != nil && (f.leo == leo || now.Sub(f.lastCaughtUp) <= r.lagMax)) {
			n++
		}
	}
	return n
}

// WaitReplicated waits until the high watermark reaches end (an acks=all
// produce: end is its LastOffset+1, after Commit). It returns nil then,
// ErrNotEnoughReplicasAfterAppend when the ISR is smaller than
// min.insync.replicas (checked first, as Kafka does, so a shrink that lets
// the high watermark jump does not acknowledge a write fewer replicas hold)
// or when, before end is reached, fewer ISR members than that are caught
// up within replica.lag.time.max.ms (as CheckISR last saw it),
// ErrNotLeader when this replica stopped leading (BecomeFollower, Close), or
// ctx.Err(). It holds no lock while it waits.
func (p *Partition) WaitReplicated(ctx context.Context, end int64) error {
	for {
		p.mu.Lock()
		r := &p.mu.repl
		var err error
		done := true
		switch {
		case p.mu.closed:
			err = fmt.Errorf("%w: %w", ErrNotLeader, ErrClosed)
		case r.role != roleLeader:
			err = fmt.Errorf("%w: leadership moved to %d", ErrNotLeader, r.leader)
		case len(r.isr) < r.minISR:
			err = fmt.Errorf("%w: ISR %v, min.insync.replicas %d", ErrNotEnoughReplicasAfterAppend, r.isr, r.minISR)
		case p.mu.hw >= end:
		case r.lagMax > 0 && p.inSyncLocked(p.now()) < r.minISR:
			// The ISR cannot shrink (no controller), but its followers
			// stopped keeping up: the write will not be replicated in
			// time, so say so now rather than at the request's timeout.
			err = fmt.Errorf("%w: ISR %v has fewer than min.insync.replicas %d members caught up within replica.lag.time.max.ms",
				ErrNotEnoughReplicasAfterAppend, r.isr, r.minISR)
		default:
			done = false
		}
		ch := r.changed
		p.mu.Unlock()
		if done {
			return err
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// FollowerUpdate is what a follower's fetch changed on the leader.
type FollowerUpdate struct {
	// ExpandISR is a proposed ISR that adds the follower (send it to the
	// controller; then SetISR or AbortISRChange); nil when none.
	ExpandISR []int32
	// HWChanged says the high watermark moved (fetches and acks=all
	// waiters have been woken).
	HWChanged     bool
	HighWatermark int64
}

// UpdateFollower records a follower's fetch at fetchOffset (Kafka's
// updateFollowerFetchState). A follower fetches only after fsyncing what it
// has, so fetchOffset is its durable log end. Call it only for a fetch the
// leader answers with data or nothing — not one whose offset is out of range
// or whose last fetched epoch diverges from the leader's log (KIP-320), since
// such an offset says nothing about what the follower holds. Fetches from
// nodes that are not replicas, offsets beyond the leader's log end, and
// calls on a non-leader are ignored.
//
// The follower is caught up (its lastCaughtUp becomes now) when fetchOffset
// reaches the leader's log end now, or it reaches the leader's log end at its
// previous fetch (lastCaughtUp becomes that fetch's time): Kafka's rule, so a
// follower that keeps up with a steady stream of small appends stays in sync.
// The high watermark then moves to the least of the leader's durable end and
// the log end offsets of the ISR's followers (never backwards). A follower
// outside the ISR whose fetchOffset reaches the high watermark and the start
// of the current leader epoch (Kafka's isFollowerInSync) is proposed for the
// ISR, unless a proposal is pending.
func (p *Partition) UpdateFollower(id int32, fetchOffset int64, now time.Time) FollowerUpdate {
	p.mu.Lock()
	defer p.mu.Unlock()
	r := &p.mu.repl
	leo := p.log.LogEndOffset()
	f := r.followers[id]
	if p.mu.closed || r.role != roleLeader || f == nil || fetchOffset < 0 || fetchOffset > leo {
		return FollowerUpdate{HighWatermark: p.mu.hw}
	}
	switch {
	case fetchOffset >= leo:
		f.lastCaughtUp = later(f.lastCaughtUp, now)
	case f.lastFetchLeaderLEO >= 0 && fetchOffset >= f.lastFetchLeaderLEO:
		f.lastCaughtUp = later(f.lastCaughtUp, f.lastFetchTime)
	}
	f.leo, f.lastFetchLeaderLEO, f.lastFetchTime = fetchOffset, leo, now

	var u FollowerUpdate
	if r.pending == nil && !slices.Contains(r.isr, id) && fetchOffset >= p.mu.hw && fetchOffset >= r.epochStart {
		r.pending = append(slices.Clone(r.isr), id)
		u.ExpandISR = slices.Clone(r.pending)
	}
	u.HWChanged = p.updateHWLocked()
	u.HighWatermark = p.mu.hw
	return u
}

func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// CheckISR returns the ISR without the followers that have not been caught
// up within lagMax (replica.lag.time.max.ms) of now, to propose to the
// controller (then SetISR or AbortISRChange); nil when none lag, when this
// replica does not lead, or while a proposal is pending. A follower whose
// log end equals the leader's is never lagging (Kafka's isCaughtUp).
func (p *Partition) CheckISR(now time.Time, lagMax time.Duration) (shrink []int32) {
	p.mu.Lock()
	defer p.mu.Unlock()
	r := &p.mu.repl
	r.lagMax = lagMax
	if r.role == roleLeader && p.inSyncLocked(now) < r.minISR {
		p.signalLocked() // acks=all waiters give up (WaitReplicated)
	}
	if p.mu.closed || r.role != roleLeader || r.pending != nil {
		return nil
	}
	leo := p.log.LogEndOffset()
	keep := make([]int32, 0, len(r.isr))
	for _, id := range r.isr {
		f := r.followers[id]
		if id == r.id || (f != nil && (f.leo == leo || now.Sub(f.lastCaughtUp) <= lagMax)) {
			keep = append(keep, id)
		}
	}
	if len(keep) == len(r.isr) {
		return nil
	}
	r.pending = keep
	return slices.Clone(keep)
}

// updateHWLocked recomputes a leader's high watermark: the least of its
// durable end and the log end of every follower in the ISR or a pending
// ISR. It never moves it back. It reports whether it moved, and wakes
// fetches and acks=all waiters when it did.
func (p *Partition) updateHWLocked() bool {
	r := &p.mu.repl
	if r.role != roleLeader {
		return false
	}
	hw := min(r.durableEnd, p.log.LogEndOffset())
	for _, set := range [][]int32{r.isr, r.pending} {
		for _, id := range set {
			if id == r.id {
				continue
			}
			if f := r.followers[id]; f != nil {
				hw = min(hw, f.leo)
			} else {
				hw = -1 // an ISR member that is not a replica: hold
			}
		}
	}
	return p.setHWLocked(hw)
}

// setHWLocked raises the high watermark to hw if that is higher, waking
// fetches and acks=all waiters.
func (p *Partition) setHWLocked(hw int64) bool {
	if hw <= p.mu.hw {
		return false
	}
	p.mu.hw = hw
	p.pruneTxnsLocked()
	p.wakeLocked()
	p.signalLocked()
	return true
}

// signalLocked wakes every WaitReplicated.
func (p *Partition) signalLocked() {
	close(p.mu.repl.changed)
	p.mu.repl.changed = make(chan struct{})
}

// wakeAppendLocked signals every channel registered with WaitAppend.
func (p *Partition) wakeAppendLocked() {
	for ch := range p.mu.repl.appendWaiters {
		select {
		case ch <- struct{}{}:
		default:
		}
	}
}

// wakeAllLocked wakes every waiter of every kind (Close, Delete).
func (p *Partition) wakeAllLocked() {
	p.wakeLocked()
	p.wakeAppendLocked()
	p.signalLocked()
}

// WaitAppend registers ch to receive a value (without blocking) whenever
// the log end offset moves (an append, a replicated append, a truncation)
// and at Close: follower fetches wait on it, since they read up to the log
// end, not the high watermark. Call UnwaitAppend when done.
func (p *Partition) WaitAppend(ch chan struct{}) {
	p.mu.Lock()
	p.mu.repl.appendWaiters[ch] = struct{}{}
	p.mu.Unlock()
}

// UnwaitAppend removes a channel registered with WaitAppend.
func (p *Partition) UnwaitAppend(ch chan struct{}) {
	p.mu.Lock()
	delete(p.mu.repl.appendWaiters, ch)
	p.mu.Unlock()
}

// ReadReplica is Read for a follower's fetch: whole batches from offset up
// to the log end offset (past the high watermark), at least one batch when
// there is one. Only a leader serves it (ErrNotLeader otherwise).
func (p *Partition) ReadReplica(dst []byte, offset int64, maxBytes int) ([]byte, Offsets, error) {
	p.mu.Lock()
	closed, r := p.mu.closed, p.mu.repl.role
	p.mu.Unlock()
	o := p.Offsets()
	switch {
	case closed:
		return dst, o, ErrClosed
	case r != roleLeader:
		return dst, o, ErrNotLeader
	}
	return p.readTo(dst, offset, o.LogEnd, maxBytes, true, o)
}

// Role says whether this replica leads, and the leader epoch it knows.
func (p *Partition) Role() (leader bool, leaderEpoch int32) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.mu.repl.role == roleLeader, p.mu.leaderEpoch
}

// Replicas returns the replica set a leader was given (BecomeLeader).
func (p *Partition) Replicas() []int32 {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.mu.repl.replicas)
}

// ISR returns a copy of the committed ISR (nil for a partition given no
// role, which leads alone).
func (p *Partition) ISR() []int32 {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.mu.repl.isr)
}

// FollowerLag returns, on a leader, the leader's log end offset minus each
// follower's last fetch offset, for metrics. Followers that have not fetched
// since this leadership began are left out; it is empty on a follower.
func (p *Partition) FollowerLag() map[int32]int64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	r := &p.mu.repl
	out := map[int32]int64{}
	if r.role != roleLeader {
		return out
	}
	leo := p.log.LogEndOffset()
	for id, f := range r.followers {
		if f.leo >= 0 {
			out[id] = leo - f.leo
		}
	}
	return out
}
