package group

import (
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// Describe returns a group as DescribeGroups shows it. An unknown group is
// Dead with no error, as Kafka answers before DescribeGroups v6. As in
// Kafka, members' metadata and assignments and the protocol are shown only
// when the group is Stable.
func (c *Coordinator) Describe(groupID string) kmsg.DescribeGroupsResponseGroup {
	d := kmsg.NewDescribeGroupsResponseGroup()
	d.Group = groupID
	g := c.groups[groupID]
	if g == nil {
		d.State = Dead.String()
		return d
	}
	d.State = g.state.String()
	d.ProtocolType = g.protocolType
	if g.state == Stable {
		d.Protocol = g.protocol
	}
	for _, m := range g.members {
		dm := kmsg.NewDescribeGroupsResponseGroupMember()
		dm.MemberID, dm.InstanceID = m.id, m.instance()
		dm.ClientID, dm.ClientHost = m.clientID, m.clientHost
		if g.state == Stable {
			dm.ProtocolMetadata = m.metadataFor(g.protocol)
			dm.MemberAssignment = m.assignment
		}
		d.Members = append(d.Members, dm)
	}
	return d
}

// Summary is a group as ListGroups shows it.
type Summary struct {
	Group, ProtocolType string
	State               State
}

// List returns every group that is not Dead, in name order.
func (c *Coordinator) List() []Summary {
	var out []Summary
	for _, g := range c.sortedGroups() {
		if g.state != Dead {
			out = append(out, Summary{g.id, g.protocolType, g.state})
		}
	}
	return out
}

// Offsets returns the committed offset of every partition of a group, for
// lag metrics: topic -> partition -> offset.
func (c *Coordinator) Offsets(groupID string) map[string]map[int32]int64 {
	g := c.groups[groupID]
	if g == nil {
		return nil
	}
	out := make(map[string]map[int32]int64, len(g.offsets))
	for t, ps := range g.offsets {
		out[t] = make(map[int32]int64, len(ps))
		for p, o := range ps {
			out[t][p] = o.offset
		}
	}
	return out
}

// Tick fires every timer due at now: the end of a join phase (initial
// delay or rebalance timeout, removing members that did not rejoin), the
// SyncGroup deadline (removing members that did not sync), expired
// sessions and KIP-394 member ids, and offset expiry.
func (c *Coordinator) Tick(now time.Time) Output {
	out := c.tick(now)
	c.seal(now, &out)
	return out
}

func (c *Coordinator) tick(now time.Time) Output {
	var out Output
	for _, g := range c.sortedGroups() {
		for _, id := range sortedKeys(g.pending) {
			if !now.Before(g.pending[id]) {
				delete(g.pending, id)
				c.tryCompleteJoin(now, g, &out)
			}
		}
		if g.state == PreparingRebalance && !now.Before(g.joinDeadline) {
			c.expireJoin(now, g, &out)
		}
		if g.state == CompletingRebalance && !g.syncDeadline.IsZero() && !now.Before(g.syncDeadline) {
			g.syncDeadline = time.Time{}
			var lag []*member
			for _, m := range g.members {
				if len(m.syncWaiters) == 0 {
					lag = append(lag, m)
				}
			}
			// As Kafka's DelayedSync: only members still pending sync
			// make the group rebalance; when all have synced the
			// leader's group record is in flight and Written ends the
			// generation's setup.
			if len(lag) > 0 {
				for _, m := range lag {
					g.remove(m.id)
				}
				c.prepareRebalance(now, g, &out)
			}
		}
		for _, m := range slices.Clone(g.members) {
			if len(m.joinWaiters) == 0 && len(m.syncWaiters) == 0 && !now.Before(m.deadline) {
				c.removeMemberAndUpdateGroup(now, g, m, &out)
			}
		}
	}
	if c.cfg.OffsetsRetention > 0 && !now.Before(c.nextExpiry) {
		if !c.nextExpiry.IsZero() {
			c.expireOffsets(now, &out)
		}
		c.nextExpiry = now.Add(c.cfg.OffsetsRetentionCheckInterval)
	}
	return out
}
