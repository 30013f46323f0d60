package assign

import (
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// This file drives synthetic members through rebalances with the real
// encodings: every member's JoinGroupMetadata, the leader's
// MemberBalancer/BalanceOrError, every member's ParseSyncAssignment.

type simMember struct {
	id      string
	b       kgo.GroupBalancer
	gen     int32
	owned   map[string][]int32
	last    Assignment
	offsets map[Task]int64
}

type sim struct {
	t       testing.TB
	cfg     Config // Subtopologies, Standbys, Stateful of every member
	counts  map[string]int32
	members []*simMember // sorted by id, as kgo sorts them
	gen     int32
}

func newSim(t testing.TB, cfg Config, counts map[string]int32) *sim {
	return &sim{t: t, cfg: cfg, counts: counts}
}

func (s *sim) add(id string) *simMember {
	m := &simMember{id: id, owned: map[string][]int32{}, gen: -1}
	cfg := s.cfg
	cfg.Endpoint = id + ":9000"
	cfg.Offsets = func() map[Task]int64 { return m.offsets }
	cfg.OnAssign = func(a Assignment) { m.last = a }
	m.b = New(cfg)
	s.members = append(s.members, m)
	slices.SortFunc(s.members, func(a, b *simMember) int { return strings.Compare(a.id, b.id) })
	return m
}

func (s *sim) remove(id string) {
	s.members = slices.DeleteFunc(s.members, func(m *simMember) bool { return m.id == id })
}

func (s *sim) member(id string) *simMember {
	for _, m := range s.members {
		if m.id == id {
			return m
		}
	}
	s.t.Fatalf("no member %s", id)
	return nil
}

func (s *sim) joinMembers() []kmsg.JoinGroupResponseMember {
	var out []kmsg.JoinGroupResponseMember
	for _, m := range s.members {
		jm := kmsg.NewJoinGroupResponseMember()
		jm.MemberID = m.id
		jm.ProtocolMetadata = m.b.JoinGroupMetadata(topicsOf(s.cfg), maps.Clone(m.owned), m.gen)
		out = append(out, jm)
	}
	return out
}

func topicsOf(cfg Config) []string {
	var ts []string
	for _, sub := range cfg.Subtopologies {
		ts = append(ts, sub...)
	}
	slices.Sort(ts)
	return slices.Compact(ts)
}

// balance runs the leader's side and returns every member's SyncGroup
// assignment bytes.
func balance(t testing.TB, leader kgo.GroupBalancer, members []kmsg.JoinGroupResponseMember, counts map[string]int32) map[string][]byte {
	t.Helper()
	mb, _, err := leader.MemberBalancer(members)
	if err != nil {
		t.Fatalf("MemberBalancer: %v", err)
	}
	into, err := mb.(kgo.GroupMemberBalancerOrError).BalanceOrError(counts)
	if err != nil {
		t.Fatalf("BalanceOrError: %v", err)
	}
	out := make(map[string][]byte)
	for _, sa := range into.IntoSyncAssignment() {
		out[sa.MemberID] = sa.MemberAssignment
	}
	if len(out) != len(members) {
		t.Fatalf("%d assignments for %d members", len(out), len(members))
	}
	return out
}

// round runs one rebalance (the first member leads) and applies it:
// members keep exactly what they are assigned (revoking the rest). It
// fails the test if a member is given a partition another member owned
// going in. It reports whether any member revoked something, which makes
// kgo rejoin at once.
func (s *sim) round() (revoked bool) {
	s.t.Helper()
	s.gen++
	bytes := balance(s.t, s.members[0].b, s.joinMembers(), s.counts)
	ownerBefore := make(map[tp]string)
	for _, m := range s.members {
		for topic, ps := range m.owned {
			for _, p := range ps {
				ownerBefore[tp{topic, p}] = m.id
			}
		}
	}
	ownerAfter := make(map[tp]string)
	for _, m := range s.members {
		parts, err := m.b.ParseSyncAssignment(bytes[m.id])
		if err != nil {
			s.t.Fatalf("ParseSyncAssignment %s: %v", m.id, err)
		}
		for topic, ps := range parts {
			for _, p := range ps {
				k := tp{topic, p}
				if o, ok := ownerBefore[k]; ok && o != m.id {
					s.t.Fatalf("generation %d gives %s-%d to %s while %s owns it", s.gen, topic, p, m.id, o)
				}
				if o, ok := ownerAfter[k]; ok {
					s.t.Fatalf("generation %d gives %s-%d to %s and %s", s.gen, topic, p, o, m.id)
				}
				ownerAfter[k] = m.id
			}
		}
		for topic, ps := range m.owned {
			for _, p := range ps {
				if !slices.Contains(parts[topic], p) {
					revoked = true
				}
			}
		}
		m.owned = parts
		m.gen = s.gen
	}
	return revoked
}

// converge runs rounds until nobody revokes; it returns how many ran.
func (s *sim) converge() int {
	s.t.Helper()
	for n := 1; n <= 5; n++ {
		if !s.round() {
			return n
		}
	}
	s.t.Fatalf("no convergence after 5 rounds")
	return 0
}

type tp struct {
	topic string
	p     int32
}

// allTasks lists the tasks of cfg given counts (which must be valid).
func allTasks(t testing.TB, cfg Config, counts map[string]int32) []Task {
	tasks, err := newTopology(cfg.Subtopologies).tasks(counts)
	if err != nil {
		t.Fatal(err)
	}
	return tasks
}

// checkActive verifies that every task is active on exactly one member,
// that counts differ by at most one and that every member holds whole
// tasks (the same partitions of every topic of a subtopology).
func (s *sim) checkActive() {
	s.t.Helper()
	seen := make(map[Task]string)
	lo, hi := int(^uint(0)>>1), 0
	for _, m := range s.members {
		for _, task := range m.last.Active {
			if o, ok := seen[task]; ok {
				s.t.Fatalf("task %v active on %s and %s", task, o, m.id)
			}
			seen[task] = m.id
		}
		lo, hi = min(lo, len(m.last.Active)), max(hi, len(m.last.Active))
		want := make(map[string][]int32)
		for _, task := range m.last.Active {
			newTopology(s.cfg.Subtopologies).partitionsOf(want, task)
		}
		for topic := range want {
			slices.Sort(want[topic])
		}
		if !maps.EqualFunc(want, m.owned, slices.Equal) {
			s.t.Fatalf("%s owns %v, its tasks %v need %v", m.id, m.owned, m.last.Active, want)
		}
	}
	if hi-lo > 1 {
		s.t.Fatalf("active counts range %d..%d", lo, hi)
	}
	if all := allTasks(s.t, s.cfg, s.counts); len(seen) != len(all) {
		s.t.Fatalf("%d of %d tasks active", len(seen), len(all))
	}
}
