package group

import (
	"encoding/binary"
	"errors"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// ErrBadRecord is returned by Load for a record that is not one of Kafka's
// group or offset records.
var ErrBadRecord = errors.New("group: malformed __consumer_offsets record")

// Key versions in __consumer_offsets, as Kafka writes them: 0 and 1 are
// offset commits, 2 is group metadata.
const (
	offsetKeyVersion   = 1
	groupKeyVersion    = 2
	offsetValueVersion = 3 // has the leader epoch, no expire timestamp
	groupValueVersion  = 3 // has group.instance.id
)

func offsetKey(groupID, topic string, part int32) []byte {
	k := kmsg.NewOffsetCommitKey()
	k.Version = offsetKeyVersion
	k.Group, k.Topic, k.Partition = groupID, topic, part
	return k.AppendTo(nil)
}

// offsetRecord is the record of a commit, or its tombstone when o is nil.
func offsetRecord(groupID, topic string, part int32, o *committed) Record {
	r := Record{Key: offsetKey(groupID, topic, part)}
	if o != nil {
		v := kmsg.NewOffsetCommitValue()
		v.Version = offsetValueVersion
		v.Offset, v.LeaderEpoch, v.Metadata = o.offset, o.leaderEpoch, o.metadata
		v.CommitTimestamp = o.commitTime.UnixMilli()
		r.Value = v.AppendTo(nil)
	}
	return r
}

func groupKey(groupID string) []byte {
	k := kmsg.NewGroupMetadataKey()
	k.Version = groupKeyVersion
	k.Group = groupID
	return k.AppendTo(nil)
}

// groupRecord is the group's metadata record: generation, protocol, leader
// and each member with its subscription and assignment: the one in assign,
// or with assign nil the member's current one.
func groupRecord(g *group, assign map[string][]byte) Record {
	v := kmsg.NewGroupMetadataValue()
	v.Version = groupValueVersion
	v.ProtocolType = g.protocolType
	v.Generation = g.generation
	if g.protocol != "" {
		p := g.protocol
		v.Protocol = &p
	}
	if g.leader != "" {
		l := g.leader
		v.Leader = &l
	}
	v.CurrentStateTimestamp = g.stateTime.UnixMilli()
	for _, m := range g.members {
		vm := kmsg.NewGroupMetadataValueMember()
		vm.MemberID, vm.InstanceID = m.id, m.instance()
		vm.ClientID, vm.ClientHost = m.clientID, m.clientHost
		vm.RebalanceTimeoutMillis = int32(m.rebalanceTimeout / time.Millisecond)
		vm.SessionTimeoutMillis = int32(m.sessionTimeout / time.Millisecond)
		vm.Subscription = m.metadataFor(g.protocol)
		vm.Assignment = m.assignment
		if assign != nil {
			vm.Assignment = assign[m.id]
			if vm.Assignment == nil {
				vm.Assignment = []byte{}
			}
		}
		v.Members = append(v.Members, vm)
	}
	return Record{Key: groupKey(g.id), Value: v.AppendTo(nil)}
}

// Load replays one record of the partition, in log order, at start; call
// Loaded after the last. A group comes back as its last group record left
// it, as Kafka's coordinator loads it: with members it is Stable, with its
// generation, protocol, leader and members (ids, instance ids, client,
// timeouts, subscription and assignment), and each member's session
// starts again when Loaded ends the load, so a consumer that outlived the
// restart goes on heartbeating and one that did not expires; without
// members it is Empty.
// Offsets come back as committed.
func (c *Coordinator) Load(now time.Time, key, value []byte) error {
	return c.load(now, -1, key, value)
}

// load replays one record; producer is the producer id of its batch when
// that batch is transactional, else -1.
func (c *Coordinator) load(now time.Time, producer int64, key, value []byte) error {
	if len(key) < 2 {
		return fmt.Errorf("%w: key of %d bytes", ErrBadRecord, len(key))
	}
	switch v := int16(binary.BigEndian.Uint16(key)); v {
	case 0, 1:
		var k kmsg.OffsetCommitKey
		if err := k.ReadFrom(key); err != nil {
			return fmt.Errorf("%w: offset key: %v", ErrBadRecord, err)
		}
		g := c.groups[k.Group]
		if value == nil {
			// A tombstone deletes open transactional offsets of the
			// partition too, as Kafka 4.0 replays it.
			if g != nil {
				g.deleteOffset(k.Topic, k.Partition)
				c.cancelTxn(g, k.Topic, k.Partition)
			}
			return nil
		}
		var val kmsg.OffsetCommitValue
		if err := val.ReadFrom(value); err != nil {
			return fmt.Errorf("%w: offset value: %v", ErrBadRecord, err)
		}
		if g == nil {
			g = newGroup(k.Group, now)
			c.groups[k.Group] = g
		}
		epoch := val.LeaderEpoch
		if val.Version < 3 {
			epoch = -1
		}
		c.loadedRecords++
		o := committed{offset: val.Offset, leaderEpoch: epoch, metadata: val.Metadata, commitTime: time.UnixMilli(val.CommitTimestamp), pos: c.loadedRecords}
		if producer >= 0 {
			c.openTxn(producer, &txnOffset{g: g, topic: k.Topic, partition: k.Partition, o: o, durable: true})
			return nil
		}
		if g.offsets[k.Topic] == nil {
			g.offsets[k.Topic] = map[int32]committed{}
		}
		g.offsets[k.Topic][k.Partition] = o
	case 2:
		var k kmsg.GroupMetadataKey
		if err := k.ReadFrom(key); err != nil {
			return fmt.Errorf("%w: group key: %v", ErrBadRecord, err)
		}
		if value == nil {
			delete(c.groups, k.Group)
			return nil
		}
		var val kmsg.GroupMetadataValue
		if err := val.ReadFrom(value); err != nil {
			return fmt.Errorf("%w: group value: %v", ErrBadRecord, err)
		}
		g := c.groups[k.Group]
		if g == nil {
			g = newGroup(k.Group, now)
			c.groups[k.Group] = g
		}
		g.load(now, &val)
	default:
		// Other coordinators' records (KIP-848 and share groups use key
		// versions 3 and up); Runnel writes none, so skip them.
	}
	return nil
}

// load sets the group to what its metadata record says (see Load).
func (g *group) load(now time.Time, val *kmsg.GroupMetadataValue) {
	g.protocolType, g.generation = val.ProtocolType, val.Generation
	g.protocol, g.leader = deref(val.Protocol), deref(val.Leader)
	g.members, g.statics = nil, map[string]string{}
	if g.protocol != "" {
		for _, vm := range val.Members {
			m := &member{
				id: vm.MemberID, instanceID: deref(vm.InstanceID),
				clientID: vm.ClientID, clientHost: vm.ClientHost,
				sessionTimeout:   time.Duration(vm.SessionTimeoutMillis) * time.Millisecond,
				rebalanceTimeout: time.Duration(vm.RebalanceTimeoutMillis) * time.Millisecond,
				// As Kafka: the member supports the protocol it was
				// assigned with, with the subscription recorded.
				protocols:  []kmsg.JoinGroupRequestProtocol{{Name: g.protocol, Metadata: vm.Subscription}},
				assignment: vm.Assignment,
			}
			if val.Version == 0 || vm.RebalanceTimeoutMillis < 0 {
				m.rebalanceTimeout = m.sessionTimeout // v0 records have none
			}
			if m.assignment == nil {
				m.assignment = []byte{}
			}
			m.deadline = now.Add(m.sessionTimeout)
			g.members = append(g.members, m)
			if m.instanceID != "" {
				g.statics[m.instanceID] = m.id
			}
		}
	}
	g.stateTime = time.UnixMilli(val.CurrentStateTimestamp)
	if val.CurrentStateTimestamp <= 0 {
		g.stateTime = now
	}
	if len(g.members) == 0 {
		// A record without members (or, never written by Runnel or
		// Kafka, members without a protocol): Empty.
		g.state, g.protocol, g.leader = Empty, "", ""
		return
	}
	g.state = Stable
	if g.member(g.leader) == nil {
		g.leader = g.members[0].id
	}
}

// Loaded ends the load at now, which may be well after the records were
// read: each loaded member's session starts again at now, so that a slow
// load does not expire them. As Kafka, a group loaded with more members
// than group.max.size (the setting may have changed) rebalances at once.
func (c *Coordinator) Loaded(now time.Time) Output {
	var out Output
	for _, g := range c.sortedGroups() {
		for _, m := range g.members {
			m.deadline = now.Add(m.sessionTimeout)
		}
		if g.state == Stable && c.cfg.MaxSize > 0 && len(g.members) > c.cfg.MaxSize {
			c.prepareRebalance(now, g, &out)
		}
	}
	c.seal(now, &out)
	return out
}
