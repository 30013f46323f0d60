package assign

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// ProtocolName is the group protocol (assignor) name of New's balancer.
const ProtocolName = "runnel-streams"

// Config configures one app instance's balancer.
type Config struct {
	// Subtopologies holds the source topics of each subtopology, index =
	// subtopology id. Every topic of one subtopology must have the same
	// partition count (co-partitioning), else balancing fails with an
	// error naming the topics and counts. A topic belongs to one
	// subtopology only.
	Subtopologies [][]string
	// Endpoint is this instance's "host:port" for interactive queries
	// ("" if none).
	Endpoint string
	// Standbys is the number of standby replicas per stateful task (0 =
	// none); at most members-1 are placed.
	Standbys int
	// Stateful reports whether standbys make sense for a subtopology; nil
	// means every subtopology is stateful.
	Stateful func(subtopology int) bool
	// Offsets reports, when joining, how far this instance's local state
	// goes for each task it has state for (e.g. changelog checkpoint sum);
	// the assignor prefers to give a task (active or standby) to the
	// member with the most state for it, among otherwise balanced choices.
	// May be nil.
	Offsets func() map[Task]int64
	// OnAssign is called from ParseSyncAssignment with this member's full
	// assignment (before kgo invokes its own partition callbacks). May be
	// nil.
	OnAssign func(Assignment)
}

// Assignment is one member's share of a rebalance.
type Assignment struct {
	Active  []Task
	Standby []Task
	// Hosts maps endpoint -> active tasks of every member (for interactive
	// queries: who owns a key's partition); members without endpoint are
	// omitted. A task moving between members this round is in nobody's
	// list until the next round gives it to its new owner.
	Hosts map[string][]Task
	// Error is set when the leader could not assign (e.g. co-partitioning
	// violated): the runtime stops with this message.
	Error string
}

// New returns the group balancer of one app instance: give it to the
// consumer with kgo.Balancers(assign.New(cfg)). ProtocolName() is
// "runnel-streams" and IsCooperative() true.
func New(cfg Config) kgo.GroupBalancer {
	return &balancer{cfg: cfg, topo: newTopology(cfg.Subtopologies)}
}

type balancer struct {
	cfg  Config
	topo topology
	mu   struct {
		sync.Mutex
		standby []Task // of the last assignment, reported on the next join
	}
}

func (*balancer) ProtocolName() string { return ProtocolName }
func (*balancer) IsCooperative() bool  { return true }

// JoinGroupMetadata encodes a kmsg.ConsumerMemberMetadata (v3): the source
// topics, the partitions owned now and, in UserData, the memberInfo.
func (b *balancer) JoinGroupMetadata(interests []string, current map[string][]int32, generation int32) []byte {
	meta := kmsg.NewConsumerMemberMetadata()
	meta.Version = 3
	meta.Topics = slices.Compact(slices.Sorted(slices.Values(append(slices.Clone(interests), b.topo.topics...))))
	meta.Generation = generation
	for _, topic := range slices.Sorted(maps.Keys(current)) {
		op := kmsg.NewConsumerMemberMetadataOwnedPartition()
		op.Topic = topic
		op.Partitions = slices.Sorted(slices.Values(current[topic]))
		meta.OwnedPartitions = append(meta.OwnedPartitions, op)
	}
	info := memberInfo{endpoint: b.cfg.Endpoint, active: b.topo.tasksOf(current)}
	b.mu.Lock()
	info.standby = slices.Clone(b.mu.standby)
	b.mu.Unlock()
	if b.cfg.Offsets != nil {
		info.offsets = b.cfg.Offsets()
	}
	meta.UserData = info.appendTo(nil)
	return meta.AppendTo(nil)
}

// ParseSyncAssignment decodes this member's assignment, hands it to
// Config.OnAssign and returns its partitions.
func (b *balancer) ParseSyncAssignment(assignment []byte) (map[string][]int32, error) {
	var ka kmsg.ConsumerMemberAssignment
	if err := ka.ReadFrom(assignment); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrAssignment, err)
	}
	info, err := decodeAssignmentInfo(ka.UserData)
	if err != nil {
		return nil, err
	}
	parts := make(map[string][]int32, len(ka.Topics))
	for _, t := range ka.Topics {
		for _, p := range t.Partitions {
			if p < 0 {
				return nil, fmt.Errorf("%w: negative partition %d of %q", ErrAssignment, p, t.Topic)
			}
		}
		parts[t.Topic] = append(parts[t.Topic], t.Partitions...)
	}
	a := Assignment{Standby: info.standby, Hosts: info.hosts, Error: info.err}
	a.Active = b.topo.tasksOf(parts)
	if a.Error == "" {
		if err := b.checkComplete(parts, a.Active); err != nil {
			a.Error = err.Error()
		}
	}
	b.mu.Lock()
	b.mu.standby = slices.Clone(a.Standby)
	b.mu.Unlock()
	if b.cfg.OnAssign != nil {
		b.cfg.OnAssign(a)
	}
	return parts, nil
}

// checkComplete verifies that parts is exactly the partitions of active:
// otherwise the leader runs another topology than this instance.
func (b *balancer) checkComplete(parts map[string][]int32, active []Task) error {
	want := make(map[string][]int32)
	for _, t := range active {
		if t.Subtopology < len(b.topo.subs) {
			b.topo.partitionsOf(want, t)
		}
	}
	for topic, ps := range parts {
		if !slices.Equal(slices.Compact(slices.Sorted(slices.Values(ps))), slices.Sorted(slices.Values(want[topic]))) {
			return fmt.Errorf("%w: the assignment of %q (%v) is not whole tasks of this instance's subtopologies", ErrTopology, topic, ps)
		}
		delete(want, topic)
	}
	if len(want) > 0 {
		return fmt.Errorf("%w: the assignment lacks co-partitioned topics %v", ErrTopology, slices.Sorted(maps.Keys(want)))
	}
	return nil
}

// MemberBalancer decodes every member's metadata and user data; bad bytes
// fail the whole balance. The topics returned include every source topic,
// so kgo loads their partition counts.
func (b *balancer) MemberBalancer(members []kmsg.JoinGroupResponseMember) (kgo.GroupMemberBalancer, map[string]struct{}, error) {
	r := &round{cfg: &b.cfg, topo: b.topo}
	cb, err := kgo.NewConsumerBalancer(r, members)
	if err != nil {
		return nil, nil, fmt.Errorf("%w: %v", ErrMetadata, err)
	}
	cb.EachMember(func(m *kmsg.JoinGroupResponseMember, meta *kmsg.ConsumerMemberMetadata) {
		if err != nil {
			return
		}
		if meta.Version < 1 {
			err = fmt.Errorf("%w: member %s sent version %d, want 1+ (owned partitions)", ErrMetadata, m.MemberID, meta.Version)
			return
		}
		info, derr := decodeMemberInfo(meta.UserData)
		if derr != nil {
			err = fmt.Errorf("member %s: %w", m.MemberID, derr)
			return
		}
		r.members = append(r.members, newMember(m.MemberID, meta.Generation, info, meta.OwnedPartitions))
	})
	if err != nil {
		return nil, nil, err
	}
	topics := maps.Clone(cb.MemberTopics())
	for _, t := range b.topo.topics {
		topics[t] = struct{}{}
	}
	return cb, topics, nil
}

// round is one leader balance: the decoded members, in kgo's order.
type round struct {
	cfg     *Config
	topo    topology
	members []member
}

// Balance implements kgo.ConsumerBalancerBalance. It never fails: a plan
// that cannot be made reaches every member as Assignment.Error.
func (r *round) Balance(_ *kgo.ConsumerBalancer, counts map[string]int32) kgo.IntoSyncAssignment {
	ms := r.members
	active := make([][]Task, len(ms))
	tasks, err := r.topo.tasks(counts)
	if err != nil {
		return syncPlan(r.encode(active, make([][]Task, len(ms)), err.Error()))
	}
	owner := placeActive(tasks, ms)
	standby := placeStandby(tasks, owner, ms, r.cfg.Standbys, r.cfg.Stateful)
	for k, o := range cooperative(r.topo, tasks, owner, ms) {
		if o >= 0 {
			active[o] = append(active[o], tasks[k])
		}
	}
	return syncPlan(r.encode(active, standby, ""))
}

// encode builds the SyncGroup assignment of every member.
func (r *round) encode(active, standby [][]Task, errMsg string) []kmsg.SyncGroupRequestGroupAssignment {
	hosts := make(map[string][]Task)
	for i, m := range r.members {
		if ep := m.info.endpoint; ep != "" && errMsg == "" {
			hosts[ep] = append(hosts[ep], active[i]...)
		}
	}
	for _, ts := range hosts {
		sortTasks(ts)
	}
	out := make([]kmsg.SyncGroupRequestGroupAssignment, 0, len(r.members))
	for i, m := range r.members {
		parts := make(map[string][]int32)
		for _, t := range active[i] {
			r.topo.partitionsOf(parts, t)
		}
		ka := kmsg.NewConsumerMemberAssignment()
		for _, topic := range slices.Sorted(maps.Keys(parts)) {
			at := kmsg.NewConsumerMemberAssignmentTopic()
			at.Topic = topic
			at.Partitions = slices.Sorted(slices.Values(parts[topic]))
			ka.Topics = append(ka.Topics, at)
		}
		info := assignmentInfo{standby: standby[i], hosts: hosts, err: errMsg}
		ka.UserData = info.appendTo(nil)
		sa := kmsg.NewSyncGroupRequestGroupAssignment()
		sa.MemberID = m.id
		sa.MemberAssignment = ka.AppendTo(nil)
		out = append(out, sa)
	}
	slices.SortFunc(out, func(a, b kmsg.SyncGroupRequestGroupAssignment) int {
		return strings.Compare(a.MemberID, b.MemberID)
	})
	return out
}

// syncPlan is a finished plan, ready for SyncGroup.
type syncPlan []kmsg.SyncGroupRequestGroupAssignment

func (p syncPlan) IntoSyncAssignment() []kmsg.SyncGroupRequestGroupAssignment { return p }
