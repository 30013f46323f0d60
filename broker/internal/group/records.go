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
// and each member with its subscription and assignment.
func groupRecord(g *group, _ Config) Record {
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
		v.Members = append(v.Members, vm)
	}
	return Record{Key: groupKey(g.id), Value: v.AppendTo(nil)}
}

// Load replays one record of the partition, in log order, at start. Groups
// load as Empty with their offsets (members rejoin); a group that had
// members counts as empty from now, so its offsets do not expire at once.
func (c *Coordinator) Load(now time.Time, key, value []byte) error {
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
			if g != nil {
				g.deleteOffset(k.Topic, k.Partition)
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
		if g.offsets[k.Topic] == nil {
			g.offsets[k.Topic] = map[int32]committed{}
		}
		g.offsets[k.Topic][k.Partition] = committed{offset: val.Offset, leaderEpoch: epoch, metadata: val.Metadata, commitTime: time.UnixMilli(val.CommitTimestamp)}
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
		g.protocolType, g.generation = val.ProtocolType, val.Generation
		g.stateTime = time.UnixMilli(val.CurrentStateTimestamp)
		if len(val.Members) > 0 || val.CurrentStateTimestamp <= 0 {
			g.stateTime = now
		}
	default:
		// Other coordinators' records (KIP-848 and share groups use key
		// versions 3 and up); Runnel writes none, so skip them.
	}
	return nil
}
