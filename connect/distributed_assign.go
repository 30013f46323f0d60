package connect

import (
	"encoding/json"
	"fmt"
	"sort"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Workers form a group over the Kafka protocol (the classic group
// protocol, through franz-go's consumer group with a balancer of our own,
// as Kafka Connect's workers use the group protocol with their own
// "connect" assignor). Each member's metadata says where its REST API is,
// how far it has read the config topic and what it runs; the leader
// assigns connectors and tasks (sticky: what runs where it still may,
// the rest to the least loaded) and every member receives its share in
// SyncGroup. No topic partition is assigned: the group is used for
// membership and assignment only.

// connectProtocol is the balancer's protocol name.
const connectProtocol = "runnel-connect-v1"

type memberMeta struct {
	URL          string   `json:"url"`
	ConfigOffset int64    `json:"config_offset"`
	Connectors   []string `json:"connectors"`
	Tasks        []TaskID `json:"tasks"`
}

// assignment is what one member gets.
type assignment struct {
	Generation   int32    `json:"generation"`
	Leader       string   `json:"leader"` // the leader's worker id
	LeaderURL    string   `json:"leader_url"`
	ConfigOffset int64    `json:"config_offset"` // read the config topic this far first
	Connectors   []string `json:"connectors"`
	Tasks        []TaskID `json:"tasks"`
	// Rejoin asks the member to rejoin once it has stopped the tasks
	// this assignment took away (see Balance).
	Rejoin bool   `json:"rejoin,omitempty"`
	Error  string `json:"error,omitempty"`
}

// connectBalancer implements kgo.GroupBalancer for the herder.
type connectBalancer struct {
	h *distHerder
}

func (b *connectBalancer) ProtocolName() string { return connectProtocol }
func (b *connectBalancer) IsCooperative() bool  { return false }

func (b *connectBalancer) JoinGroupMetadata([]string, map[string][]int32, int32) []byte {
	m := b.h.memberMeta()
	out, _ := json.Marshal(m)
	return out
}

// ParseSyncAssignment receives this member's assignment; it hands it to
// the herder and asks kgo to consume nothing.
func (b *connectBalancer) ParseSyncAssignment(data []byte) (map[string][]int32, error) {
	var a assignment
	if err := json.Unmarshal(data, &a); err != nil {
		return nil, fmt.Errorf("connect: bad assignment from the group leader: %w", err)
	}
	b.h.assigned(a)
	return map[string][]int32{}, nil
}

func (b *connectBalancer) MemberBalancer(members []kmsg.JoinGroupResponseMember) (kgo.GroupMemberBalancer, map[string]struct{}, error) {
	metas := make([]memberMeta, len(members))
	for i, m := range members {
		if err := json.Unmarshal(m.ProtocolMetadata, &metas[i]); err != nil {
			return nil, nil, fmt.Errorf("connect: member %s sent bad metadata: %w", m.MemberID, err)
		}
	}
	return &connectMemberBalancer{h: b.h, members: members, metas: metas}, map[string]struct{}{b.h.configTopic: {}}, nil
}

type connectMemberBalancer struct {
	h       *distHerder
	members []kmsg.JoinGroupResponseMember
	metas   []memberMeta
}

func (b *connectMemberBalancer) Balance(map[string]int32) kgo.IntoSyncAssignment {
	connectors, tasks, offset := b.h.leaderView()
	ids := make([]string, len(b.members))
	for i, m := range b.members {
		ids[i] = m.MemberID
	}
	owner := func(metaOf func(memberMeta) []string, items []string) map[string][]string {
		prev := map[string]string{}
		for i, m := range b.metas {
			for _, it := range metaOf(m) {
				prev[it] = ids[i]
			}
		}
		return stickyAssign(ids, items, prev)
	}
	connAssign := owner(func(m memberMeta) []string { return m.Connectors }, connectors)
	taskKeys := make([]string, len(tasks))
	byKey := map[string]TaskID{}
	for i, t := range tasks {
		taskKeys[i] = t.String()
		byKey[taskKeys[i]] = t
	}
	taskAssign := owner(func(m memberMeta) []string {
		out := make([]string, len(m.Tasks))
		for i, t := range m.Tasks {
			out[i] = t.String()
		}
		return out
	}, taskKeys)

	held := map[string][]string{}
	for i, m := range b.metas {
		for _, t := range m.Tasks {
			held[ids[i]] = append(held[ids[i]], t.String())
		}
	}
	rejoin := withholdMoving(taskAssign, held)

	leaderID := b.h.w.id
	out := make(syncAssignments, 0, len(b.members))
	for _, id := range ids {
		a := assignment{Leader: leaderID, LeaderURL: b.h.url, ConfigOffset: offset, Connectors: connAssign[id], Tasks: []TaskID{}, Rejoin: rejoin[id]}
		for _, k := range taskAssign[id] {
			a.Tasks = append(a.Tasks, byKey[k])
		}
		data, _ := json.Marshal(a)
		out = append(out, kmsg.SyncGroupRequestGroupAssignment{MemberID: id, MemberAssignment: data})
	}
	return out
}

type syncAssignments []kmsg.SyncGroupRequestGroupAssignment

func (s syncAssignments) IntoSyncAssignment() []kmsg.SyncGroupRequestGroupAssignment { return s }

// stickyAssign spreads items over members as evenly as possible (each
// gets n/m, the first n%m one more) while moving as few as it can: an item
// stays with its previous member while that member is under its share;
// the rest go, in order, to the member with the fewest.
func stickyAssign(members []string, items []string, prev map[string]string) map[string][]string {
	out := map[string][]string{}
	if len(members) == 0 {
		return out
	}
	present := map[string]bool{}
	for _, m := range members {
		present[m] = true
	}
	base, extra := len(items)/len(members), len(items)%len(members)
	var over, rest []string
	for _, it := range items {
		m, ok := prev[it]
		switch {
		case !ok || !present[m]:
			rest = append(rest, it)
		case len(out[m]) < base:
			out[m] = append(out[m], it)
		default:
			over = append(over, it)
		}
	}
	// Members already at their share keep one more while the n%m extra
	// places last.
	for _, it := range over {
		m := prev[it]
		if extra > 0 && len(out[m]) == base {
			out[m] = append(out[m], it)
			extra--
			continue
		}
		rest = append(rest, it)
	}
	for _, it := range rest {
		best := ""
		for _, m := range members {
			if best == "" || len(out[m]) < len(out[best]) {
				best = m
			}
		}
		out[best] = append(out[best], it)
	}
	for _, m := range members {
		sort.Strings(out[m])
	}
	return out
}

// withholdMoving makes a task move in two rounds, as in Kafka Connect's
// incremental cooperative protocol (KIP-415): while another member still
// holds it (held: member → its tasks), this round gives it to nobody and
// asks the holders to stop it and rejoin; the next round, in which no
// member holds it, gives it to its new member. A task thus never runs on
// two workers at once; the tasks of a member that left go on at once. It
// edits assign in place and returns the members that must rejoin.
func withholdMoving(assign, held map[string][]string) map[string]bool {
	holders := map[string][]string{}
	for m, items := range held {
		for _, it := range items {
			holders[it] = append(holders[it], m)
		}
	}
	rejoin := map[string]bool{}
	for m, items := range assign {
		kept := items[:0]
		for _, it := range items {
			moving := false
			for _, h := range holders[it] {
				if h != m {
					moving, rejoin[h] = true, true
				}
			}
			if !moving {
				kept = append(kept, it)
			}
		}
		assign[m] = kept
	}
	return rejoin
}
