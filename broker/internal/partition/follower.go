package partition

import (
	"fmt"

	"github.com/runnel-io/runnel/broker/internal/batch"
)

// BecomeFollower makes this replica a follower of leader in leaderEpoch
// (Kafka's makeFollower). Appends are refused from now on (ErrNotLeader),
// and acks=all waiters get ErrNotLeader. The log is not touched: the
// follower's fetcher finds the divergence point (OffsetForLeaderEpoch or
// the leader's diverging epoch, KIP-101/320), calls TruncateTo, then
// AppendReplica. The high watermark is kept.
func (p *Partition) BecomeFollower(leaderEpoch int32, leader int32) error {
	p.appendMu.Lock()
	defer p.appendMu.Unlock()
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.mu.closed {
		return ErrClosed
	}
	if leaderEpoch < p.mu.leaderEpoch {
		return fmt.Errorf("%w: leader epoch %d < %d", ErrStaleLeaderEpoch, leaderEpoch, p.mu.leaderEpoch)
	}
	r := &p.mu.repl
	p.mu.leaderEpoch = leaderEpoch
	r.role, r.leader = roleFollower, leader
	r.pending = nil
	r.followers = map[int32]*follower{}
	p.signalLocked()
	return nil
}

// AppendReplica appends batches fetched from the leader, with the offsets and
// leader epochs the leader gave them (their CRCs are checked; the first must
// start at the log end offset), fsyncs them, and records their producers,
// transactions and markers (with aborted transactions' index entries), as
// the leader did.
// Then the high watermark becomes the leader's, capped at this log's end:
// max(HW, min(leaderHW, log end)). An empty b only moves the high watermark.
// ErrNotFollower unless BecomeFollower was called.
func (p *Partition) AppendReplica(b []byte, leaderHW int64) error {
	p.appendMu.Lock()
	defer p.appendMu.Unlock()
	if err := p.followerCheck(); err != nil {
		return err
	}
	if len(b) > 0 {
		if err := p.log.AppendFollower(b); err != nil {
			return err
		}
		if err := p.log.Sync(); err != nil {
			return err
		}
		// AppendFollower checked every batch's header and length.
		for pos := 0; pos < len(b); {
			h, err := batch.ParseHeader(b[pos:])
			if err != nil {
				return err
			}
			var control []byte
			if h.IsControl() {
				control = b[pos : pos+h.Size()]
			}
			aborted, err := p.track(p.producers, &h, control)
			if err != nil {
				return err
			}
			if aborted != nil {
				if err := p.log.AddAbortedTxn(*aborted); err != nil {
					return err
				}
			}
			pos += h.Size()
		}
	}
	leo := p.log.LogEndOffset()
	p.mu.Lock()
	defer p.mu.Unlock()
	p.mu.repl.durableEnd = leo
	p.setHWLocked(min(leaderHW, leo))
	if len(b) > 0 {
		p.wakeAppendLocked()
	}
	return nil
}

// TruncateTo drops the log from offset on (a batch straddling offset goes
// whole; see log.Truncate), for a follower whose tail diverged from the
// leader's (KIP-101). The high watermark is lowered to the new log end if it
// was above. The producer table and the transactions are rebuilt by
// scanning the log (a transaction whose marker was cut is open again; one
// opened after the cut is gone), keeping what lies below the log start from
// the table as it was; so sequence numbers and duplicates are checked as
// before. ErrNotFollower unless BecomeFollower was called: a leader never
// truncates.
func (p *Partition) TruncateTo(offset int64) error {
	p.appendMu.Lock()
	defer p.appendMu.Unlock()
	if err := p.followerCheck(); err != nil {
		return err
	}
	if err := p.log.Truncate(offset); err != nil {
		return err
	}
	leo := p.log.LogEndOffset()
	p.mu.Lock()
	p.mu.hw = min(p.mu.hw, leo)
	p.mu.repl.durableEnd = min(p.mu.repl.durableEnd, leo)
	p.wakeAppendLocked()
	p.mu.Unlock()
	return p.rescanLocked()
}

// followerCheck says why this replica may not take replicated data or
// truncate now; nil when it may.
func (p *Partition) followerCheck() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	switch {
	case p.mu.closed:
		return ErrClosed
	case p.mu.repl.role != roleFollower:
		return ErrNotFollower
	}
	return nil
}

// StartAt empties a follower's log and restarts it at offset, the leader's
// log start, when this log ends below it (Kafka's truncateFullyAndStartAt:
// retention or DeleteRecords on the leader removed what the follower would
// fetch next). The producer table starts empty and the high watermark at
// offset. ErrNotFollower unless BecomeFollower was called.
func (p *Partition) StartAt(offset int64) error {
	p.appendMu.Lock()
	defer p.appendMu.Unlock()
	if err := p.followerCheck(); err != nil {
		return err
	}
	if err := p.log.TruncateFullyAndStartAt(offset); err != nil {
		return err
	}
	p.producers = producers{}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.mu.txn = txnState{open: map[int64]int64{}}
	p.mu.hw = offset
	p.mu.repl.durableEnd = offset
	p.wakeAppendLocked()
	return nil
}

// FollowLogStart moves a follower's log start up to the leader's (sent in
// every fetch response), so records the leader deleted (DeleteRecords,
// retention) are gone here too and do not come back if this replica
// leads. It never moves past this log's end or backwards.
func (p *Partition) FollowLogStart(leaderLogStart int64) error {
	if err := p.followerCheck(); err != nil {
		return err
	}
	to := min(leaderLogStart, p.log.LogEndOffset())
	if to <= p.log.LogStartOffset() {
		return nil
	}
	return p.log.DeleteRecords(to)
}
