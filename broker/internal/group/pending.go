package group

import (
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// WriteID names the records of one Output. IDs grow in the order the
// calls made them, which is the order the owner appends them.
type WriteID uint64

// pendingWrite is the state an Output's records will make true once they
// are durable: the offsets of an OffsetCommit, or the assignment of a
// leader's SyncGroup. Kafka keeps the same in its pendingOffsetCommits and
// in the SyncGroup's append callback.
type pendingWrite struct {
	offsets []*pendingOffset
	txn     []*txnOffset
	sync    *pendingSync
	static  *pendingStatic
}

// pendingOffset is one committed offset waiting for its record.
type pendingOffset struct {
	g         *group
	topic     string
	partition int32
	o         committed
	// cancelled: a deletion (OffsetDelete, DeleteGroups) wrote a tombstone
	// after this record, so the offset must not come back.
	cancelled bool
}

// pendingSync is a leader's assignment waiting for its group record.
type pendingSync struct {
	g          *group
	generation int32
	assignment map[string][]byte
}

// pendingStatic is a static member replaced without a rebalance, waiting
// for its group record before the new member hears of it.
type pendingStatic struct {
	g         *group
	m         *member // the member, now under its new id
	was       member  // the member as it was
	wasLeader bool
	w         Waiter
	resp      *kmsg.JoinGroupResponse
}

// stage returns the pending state of the call in progress.
func (c *Coordinator) stage() *pendingWrite {
	if c.staged == nil {
		c.staged = &pendingWrite{}
	}
	return c.staged
}

// seal ends a public call: it names the Output's records with the next
// WriteID and files what the call staged under it.
func (c *Coordinator) seal(now time.Time, out *Output) {
	p := c.staged
	c.staged = nil
	if len(out.Records) == 0 {
		if p != nil {
			// Nothing to wait for (never the case today: every staged
			// state comes with its record).
			c.apply(now, p, nil, out)
		}
		return
	}
	c.nextWrite++
	out.Write = c.nextWrite
	if p != nil {
		c.pending[out.Write] = p
	}
}

// Written reports the outcome of Output w's records: nil once they are
// appended and durable, else the Kafka error the failure maps to (the
// owner's mapping: NOT_COORDINATOR for a storage error, UNKNOWN_SERVER_ERROR
// for a batch too large, ...). On success the pending state becomes
// visible: committed offsets to FetchOffsets, Offsets and expiry, a
// SyncGroup's assignment to the group, which turns Stable and answers its
// members. On failure it is dropped: the previous offsets stay, and a group
// whose assignment was lost answers the waiting SyncGroups with failure and
// rebalances, as Kafka does. Written may be called in any order; an
// unknown or repeated w is ignored.
func (c *Coordinator) Written(now time.Time, w WriteID, failure *kerr.Error) Output {
	var out Output
	p, ok := c.pending[w]
	if !ok {
		return out
	}
	delete(c.pending, w)
	c.apply(now, p, failure, &out)
	c.seal(now, &out)
	return out
}

// apply makes p's state visible (failure nil) or drops it.
func (c *Coordinator) apply(now time.Time, p *pendingWrite, failure *kerr.Error, out *Output) {
	for _, po := range p.offsets {
		g := po.g
		if failure != nil || po.cancelled || c.groups[g.id] != g {
			continue
		}
		g.commit(po.topic, po.partition, po.o)
	}
	for _, t := range p.txn {
		c.txnWritten(t, failure)
	}
	if s := p.static; s != nil {
		c.applyStatic(s, failure, out)
	}
	if s := p.sync; s != nil {
		g := s.g
		// The group may have moved on (a member joined or left) while the
		// record was written; then this generation's assignment is moot.
		if c.groups[g.id] != g || g.state != CompletingRebalance || g.generation != s.generation {
			return
		}
		if failure != nil {
			c.failSync(now, g, failure, out)
			return
		}
		for _, m := range g.members {
			m.assignment = s.assignment[m.id]
			if m.assignment == nil {
				m.assignment = []byte{}
			}
		}
		g.setState(Stable, now)
		g.syncDeadline = time.Time{}
		for _, m := range g.members {
			resp := c.syncResponse(g, m)
			for _, sw := range m.syncWaiters {
				out.reply(sw, resp)
			}
			m.syncWaiters = nil
		}
	}
}

// applyStatic answers the JoinGroup of a static member's replacement: as
// prepared once its record is durable; on failure, as Kafka, with the
// error and no member id, and the member goes back to its old id (unless
// the group moved on and it is gone or replaced again).
func (c *Coordinator) applyStatic(s *pendingStatic, failure *kerr.Error, out *Output) {
	if failure == nil {
		out.reply(s.w, s.resp)
		return
	}
	g, m := s.g, s.m
	resp := kmsg.NewPtrJoinGroupResponse()
	resp.ErrorCode, resp.Generation, resp.LeaderID = failure.Code, g.generation, g.leader
	pt, p := g.protocolType, g.protocol
	resp.ProtocolType, resp.Protocol = &pt, &p
	if c.groups[g.id] == g && g.member(m.id) == m && g.statics[m.instanceID] == m.id {
		newID := m.id
		m.id, m.clientID, m.clientHost = s.was.id, s.was.clientID, s.was.clientHost
		m.sessionTimeout, m.rebalanceTimeout, m.protocols = s.was.sessionTimeout, s.was.rebalanceTimeout, s.was.protocols
		g.statics[m.instanceID] = m.id
		if s.wasLeader && g.leader == newID {
			g.leader = m.id
		}
		resp.LeaderID = g.leader
	}
	out.reply(s.w, resp)
}

// commit makes o the committed offset of a partition unless the current
// one has a later record: a later commit that completed first (or a
// transactional one committed after it) wins, as its record is later in
// the log.
func (g *group) commit(topic string, part int32, o committed) {
	if cur, ok := g.offsets[topic][part]; ok && cur.pos > o.pos {
		return
	}
	if g.offsets[topic] == nil {
		g.offsets[topic] = map[int32]committed{}
	}
	g.offsets[topic][part] = o
}

// failSync answers every waiting SyncGroup of g with code, forgets the
// assignments and starts a new join phase (Kafka's
// resetAndPropagateAssignmentWithError, then a rebalance).
func (c *Coordinator) failSync(now time.Time, g *group, code *kerr.Error, out *Output) {
	for _, m := range g.members {
		m.assignment = nil
		for _, sw := range m.syncWaiters {
			out.reply(sw, syncError(code))
		}
		m.syncWaiters = nil
	}
	c.prepareRebalance(now, g, out)
}

// pendingOffsets returns the offsets of g still waiting for their records
// (not cancelled), in no particular order (c.pending is a map).
func (c *Coordinator) pendingOffsets(g *group) []*pendingOffset {
	var out []*pendingOffset
	for _, p := range c.pending {
		for _, po := range p.offsets {
			if po.g == g && !po.cancelled {
				out = append(out, po)
			}
		}
	}
	return out
}

// cancelPending marks g's pending commits of topic/partition as
// superseded by a tombstone written after them.
func (c *Coordinator) cancelPending(g *group, topic string, partition int32) {
	for _, po := range c.pendingOffsets(g) {
		if po.topic == topic && po.partition == partition {
			po.cancelled = true
		}
	}
}

// hasPending reports whether g has a commit of topic/partition in flight.
func (c *Coordinator) hasPending(g *group, topic string, partition int32) bool {
	for _, po := range c.pendingOffsets(g) {
		if po.topic == topic && po.partition == partition {
			return true
		}
	}
	return false
}
