package partition

import "fmt"

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
