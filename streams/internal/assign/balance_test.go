package assign

import (
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

var (
	twoSubs    = Config{Subtopologies: [][]string{{"a", "b"}, {"c"}}}
	twoSubsSix = map[string]int32{"a": 6, "b": 6, "c": 6}
)

func TestBalanceFreshGroup(t *testing.T) {
	s := newSim(t, twoSubs, twoSubsSix)
	for _, id := range []string{"m1", "m2", "m3"} {
		s.add(id)
	}
	if n := s.converge(); n != 1 {
		t.Fatalf("fresh group took %d rounds", n)
	}
	s.checkActive()
	for _, m := range s.members {
		if len(m.last.Active) != 4 {
			t.Errorf("%s has %v", m.id, m.last.Active)
		}
		if !slices.Equal(m.owned["a"], m.owned["b"]) {
			t.Errorf("%s owns a%v and b%v", m.id, m.owned["a"], m.owned["b"])
		}
	}
}

func TestBalanceCountsDifferByAtMostOne(t *testing.T) {
	cfg := Config{Subtopologies: [][]string{{"a"}}}
	for _, members := range []int{1, 2, 3, 5, 7} {
		for _, parts := range []int32{1, 4, 12, 13} {
			t.Run(fmt.Sprintf("%d members %d tasks", members, parts), func(t *testing.T) {
				s := newSim(t, cfg, map[string]int32{"a": parts})
				for i := range members {
					s.add(fmt.Sprintf("m%d", i))
				}
				s.converge()
				s.checkActive()
			})
		}
	}
}

func TestBalanceStickyOnJoin(t *testing.T) {
	s := newSim(t, twoSubs, twoSubsSix)
	s.add("m1")
	s.add("m2")
	s.converge()
	before := map[string][]Task{"m1": s.member("m1").last.Active, "m2": s.member("m2").last.Active}
	s.add("m3")
	if !s.round() {
		t.Fatal("round 1 revoked nothing from the old members")
	}
	if got := s.member("m3").last.Active; len(got) != 0 {
		t.Fatalf("round 1 gave m3 %v, still owned by others", got)
	}
	if n := s.converge(); n != 1 {
		t.Fatalf("round 2 was not the last (%d more)", n)
	}
	s.checkActive()
	for id, prev := range before {
		now := s.member(id).last.Active
		if len(now) != 4 || !isSubset(now, prev) {
			t.Errorf("%s went from %v to %v", id, prev, now)
		}
	}
}

func TestBalanceStickyOnLeave(t *testing.T) {
	s := newSim(t, twoSubs, twoSubsSix)
	for _, id := range []string{"m1", "m2", "m3", "m4"} {
		s.add(id)
	}
	s.converge()
	before := map[string][]Task{}
	for _, m := range s.members {
		before[m.id] = m.last.Active
	}
	s.remove("m2")
	if n := s.converge(); n != 1 {
		t.Fatalf("a leave took %d rounds", n)
	}
	s.checkActive()
	for _, m := range s.members {
		if !isSubset(before[m.id], m.last.Active) {
			t.Errorf("%s went from %v to %v", m.id, before[m.id], m.last.Active)
		}
	}
}

func isSubset(sub, of []Task) bool {
	for _, t := range sub {
		if !slices.Contains(of, t) {
			return false
		}
	}
	return true
}

// joinMember builds a member's JoinGroup entry from explicit user data.
func joinMember(id string, gen int32, info memberInfo, owned map[string][]int32) kmsg.JoinGroupResponseMember {
	meta := kmsg.NewConsumerMemberMetadata()
	meta.Version = 3
	meta.Topics = []string{"a", "b"}
	meta.Generation = gen
	for _, topic := range slices.Sorted(maps.Keys(owned)) {
		op := kmsg.NewConsumerMemberMetadataOwnedPartition()
		op.Topic, op.Partitions = topic, owned[topic]
		meta.OwnedPartitions = append(meta.OwnedPartitions, op)
	}
	meta.UserData = info.appendTo(nil)
	jm := kmsg.NewJoinGroupResponseMember()
	jm.MemberID = id
	jm.ProtocolMetadata = meta.AppendTo(nil)
	return jm
}

// parseAll decodes every member's assignment with a balancer of cfg.
func parseAll(t *testing.T, cfg Config, bytes map[string][]byte) map[string]Assignment {
	t.Helper()
	out := make(map[string]Assignment)
	for id, b := range bytes {
		c := cfg
		c.OnAssign = func(a Assignment) { out[id] = a }
		if _, err := New(c).ParseSyncAssignment(b); err != nil {
			t.Fatalf("%s: %v", id, err)
		}
	}
	return out
}

func TestBalanceOrphansGoToWarmMembers(t *testing.T) {
	cfg := Config{Subtopologies: [][]string{{"a", "b"}}, Standbys: 1}
	counts := map[string]int32{"a": 4, "b": 4}
	// m3 left, owning 0_2 and 0_3. m2 had the standby of 0_3; m1 has the
	// most state of 0_2.
	members := []kmsg.JoinGroupResponseMember{
		joinMember("m1", 7, memberInfo{active: []Task{{0, 0}}, offsets: map[Task]int64{{0, 0}: 9, {0, 2}: 500, {0, 3}: 1}},
			map[string][]int32{"a": {0}, "b": {0}}),
		joinMember("m2", 7, memberInfo{active: []Task{{0, 1}}, standby: []Task{{0, 3}}, offsets: map[Task]int64{{0, 2}: 20}},
			map[string][]int32{"a": {1}, "b": {1}}),
	}
	got := parseAll(t, cfg, balance(t, New(cfg), members, counts))
	if a := got["m1"].Active; !slices.Equal(a, []Task{{0, 0}, {0, 2}}) {
		t.Errorf("m1 active %v, want [0_0 0_2]", a)
	}
	if a := got["m2"].Active; !slices.Equal(a, []Task{{0, 1}, {0, 3}}) {
		t.Errorf("m2 active %v, want [0_1 0_3]", a)
	}
	// Standbys go where state is: m1 for 0_3 (offset 1), m2 for 0_2
	// (offset 20); the rest are balanced.
	if s := got["m1"].Standby; !slices.Contains(s, Task{0, 3}) {
		t.Errorf("m1 standby %v lacks 0_3", s)
	}
	if s := got["m2"].Standby; !slices.Contains(s, Task{0, 2}) {
		t.Errorf("m2 standby %v lacks 0_2", s)
	}
}

func TestBalanceCoPartitionErrorReachesEveryMember(t *testing.T) {
	s := newSim(t, twoSubs, map[string]int32{"a": 6, "b": 4, "c": 3})
	for _, id := range []string{"m1", "m2", "m3"} {
		s.add(id)
	}
	s.round()
	for _, m := range s.members {
		e := m.last.Error
		for _, want := range []string{ErrCoPartition.Error(), "a (6 partitions)", "b (4 partitions)", "subtopology 0"} {
			if !strings.Contains(e, want) {
				t.Errorf("%s: error %q lacks %q", m.id, e, want)
			}
		}
		if len(m.owned) != 0 || len(m.last.Active) != 0 || len(m.last.Hosts) != 0 {
			t.Errorf("%s got work despite the error: %v", m.id, m.last)
		}
	}
}

func TestBalanceErrors(t *testing.T) {
	for _, tc := range []struct {
		name   string
		subs   [][]string
		counts map[string]int32
		want   error
	}{
		{"missing topic", [][]string{{"a", "b"}}, map[string]int32{"a": 3}, ErrMissingTopic},
		{"topic in two subtopologies", [][]string{{"a"}, {"b", "a"}}, map[string]int32{"a": 3, "b": 3}, ErrTopology},
		{"empty subtopology", [][]string{{"a"}, {}}, map[string]int32{"a": 3}, ErrTopology},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := Config{Subtopologies: tc.subs}
			members := []kmsg.JoinGroupResponseMember{joinMember("m1", -1, memberInfo{}, nil), joinMember("m2", -1, memberInfo{}, nil)}
			for id, a := range parseAll(t, cfg, balance(t, New(cfg), members, tc.counts)) {
				if !strings.Contains(a.Error, tc.want.Error()) || len(a.Active) != 0 {
					t.Errorf("%s: %+v, want error %q", id, a, tc.want)
				}
			}
		})
	}
}

func TestBalanceStandbyPlacement(t *testing.T) {
	stateful := func(s int) bool { return s == 0 }
	for _, members := range []int{1, 2, 3, 5} {
		for _, standbys := range []int{1, 2, 4} {
			t.Run(fmt.Sprintf("%d members %d standbys", members, standbys), func(t *testing.T) {
				cfg := twoSubs
				cfg.Standbys, cfg.Stateful = standbys, stateful
				s := newSim(t, cfg, twoSubsSix)
				for i := range members {
					s.add(fmt.Sprintf("m%d", i))
				}
				s.converge()
				s.checkActive()
				checkStandbys(t, s, min(standbys, members-1), stateful)
				// A member leaves: still valid.
				s.remove("m0")
				if len(s.members) == 0 {
					return
				}
				s.converge()
				s.checkActive()
				checkStandbys(t, s, min(standbys, members-2), stateful)
			})
		}
	}
}

func checkStandbys(t *testing.T, s *sim, replicas int, stateful func(int) bool) {
	t.Helper()
	holders := make(map[Task]int)
	lo, hi := 1<<30, 0
	for _, m := range s.members {
		for _, task := range m.last.Standby {
			if slices.Contains(m.last.Active, task) {
				t.Fatalf("%s has %v active and standby", m.id, task)
			}
			if !stateful(task.Subtopology) {
				t.Fatalf("%s has a standby of stateless %v", m.id, task)
			}
			holders[task]++
		}
		lo, hi = min(lo, len(m.last.Standby)), max(hi, len(m.last.Standby))
	}
	for _, task := range allTasks(t, s.cfg, s.counts) {
		want := 0
		if stateful(task.Subtopology) {
			want = replicas
		}
		if holders[task] != want {
			t.Fatalf("%v has %d standbys, want %d", task, holders[task], want)
		}
	}
	if hi-lo > 1 {
		t.Fatalf("standby counts range %d..%d", lo, hi)
	}
}

func TestBalanceCooperativeTwoRounds(t *testing.T) {
	cfg := Config{Subtopologies: [][]string{{"a", "b"}}}
	counts := map[string]int32{"a": 4, "b": 4}
	all := map[string][]int32{"a": {0, 1, 2, 3}, "b": {0, 1, 2, 3}}
	allTasks := []Task{{0, 0}, {0, 1}, {0, 2}, {0, 3}}
	round1 := []kmsg.JoinGroupResponseMember{
		joinMember("A", 3, memberInfo{active: allTasks}, all),
		joinMember("B", -1, memberInfo{}, nil),
	}
	got := parseAll(t, cfg, balance(t, New(cfg), round1, counts))
	if len(got["B"].Active) != 0 {
		t.Fatalf("round 1 gives B %v while A owns it", got["B"].Active)
	}
	kept := got["A"].Active
	if len(kept) != 2 {
		t.Fatalf("round 1 leaves A %v, want 2 tasks", kept)
	}
	if h := got["B"].Hosts; len(h) != 0 {
		t.Fatalf("hosts without endpoints: %v", h)
	}
	// A revoked the other two and rejoins with what it kept.
	owned := map[string][]int32{}
	for _, task := range kept {
		newTopology(cfg.Subtopologies).partitionsOf(owned, task)
	}
	round2 := []kmsg.JoinGroupResponseMember{
		joinMember("A", 4, memberInfo{active: kept}, owned),
		joinMember("B", 4, memberInfo{}, nil),
	}
	got = parseAll(t, cfg, balance(t, New(cfg), round2, counts))
	if !slices.Equal(got["A"].Active, kept) || len(got["B"].Active) != 2 || isSubset(got["B"].Active, kept) {
		t.Fatalf("round 2: A %v, B %v", got["A"].Active, got["B"].Active)
	}
}

func TestCooperativeStaleClaims(t *testing.T) {
	topo := newTopology([][]string{{"a"}})
	tasks := []Task{{0, 0}}
	claim := func(id string, gen int32) member {
		op := kmsg.NewConsumerMemberMetadataOwnedPartition()
		op.Topic, op.Partitions = "a", []int32{0}
		return newMember(id, gen, memberInfo{}, []kmsg.ConsumerMemberMetadataOwnedPartition{op})
	}
	// Planned for A. A's claim is stale (B's generation is higher): B may
	// still consume, so A waits a round.
	if got := cooperative(topo, tasks, []int{0}, []member{claim("A", 2), claim("B", 5)}); got[0] != -1 {
		t.Errorf("stale owner keeps the task while the current owner still has it: %v", got)
	}
	// A's claim is the current one; B's stale claim does not hold A up.
	if got := cooperative(topo, tasks, []int{0}, []member{claim("A", 5), claim("B", 2)}); got[0] != 0 {
		t.Errorf("current owner loses the task to a stale claim: %v", got)
	}
	// Planned for B, owned by A: a move, withheld this round.
	if got := cooperative(topo, tasks, []int{1}, []member{claim("A", 5), newMember("B", 5, memberInfo{}, nil)}); got[0] != -1 {
		t.Errorf("move not withheld: %v", got)
	}
}

func TestBalanceHosts(t *testing.T) {
	s := newSim(t, twoSubs, twoSubsSix)
	for _, id := range []string{"m1", "m2", "m3"} {
		s.add(id)
	}
	// m3 runs without interactive queries.
	c := twoSubs
	c.OnAssign = func(a Assignment) { s.member("m3").last = a }
	s.member("m3").b = New(c)
	s.converge()
	want := map[string][]Task{"m1:9000": s.member("m1").last.Active, "m2:9000": s.member("m2").last.Active}
	for _, m := range s.members {
		if !maps.EqualFunc(m.last.Hosts, want, slices.Equal) {
			t.Errorf("%s hosts %v, want %v", m.id, m.last.Hosts, want)
		}
	}
}

func TestMemberBalancerBadBytes(t *testing.T) {
	good := joinMember("m1", 1, memberInfo{}, nil)
	badUserData := joinMember("m2", 1, memberInfo{}, nil)
	{
		var meta kmsg.ConsumerMemberMetadata
		_ = meta.ReadFrom(badUserData.ProtocolMetadata)
		meta.UserData = []byte{1, 200}
		badUserData.ProtocolMetadata = meta.AppendTo(nil)
	}
	v0 := joinMember("m3", 1, memberInfo{}, nil)
	{
		var meta kmsg.ConsumerMemberMetadata
		_ = meta.ReadFrom(v0.ProtocolMetadata)
		meta.Version = 0
		v0.ProtocolMetadata = meta.AppendTo(nil)
	}
	garbage := kmsg.NewJoinGroupResponseMember()
	garbage.MemberID, garbage.ProtocolMetadata = "m4", []byte{0, 3, 0xff}
	for _, tc := range []struct {
		name   string
		member kmsg.JoinGroupResponseMember
		want   error
	}{
		{"bad user data", badUserData, ErrUserData},
		{"version 0", v0, ErrMetadata},
		{"garbage", garbage, ErrMetadata},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := New(twoSubs).MemberBalancer([]kmsg.JoinGroupResponseMember{good, tc.member})
			if !errors.Is(err, tc.want) {
				t.Fatalf("got %v, want %v", err, tc.want)
			}
		})
	}
}

func TestParseSyncAssignment(t *testing.T) {
	cfg := Config{Subtopologies: [][]string{{"a", "b"}}}
	encode := func(parts map[string][]int32, info assignmentInfo) []byte {
		ka := kmsg.NewConsumerMemberAssignment()
		for _, topic := range slices.Sorted(maps.Keys(parts)) {
			at := kmsg.NewConsumerMemberAssignmentTopic()
			at.Topic, at.Partitions = topic, parts[topic]
			ka.Topics = append(ka.Topics, at)
		}
		ka.UserData = info.appendTo(nil)
		return ka.AppendTo(nil)
	}
	for _, tc := range []struct {
		name      string
		bytes     []byte
		wantErr   error
		wantError string // Assignment.Error
		active    []Task
	}{
		{"whole tasks", encode(map[string][]int32{"a": {1, 0}, "b": {0, 1}}, assignmentInfo{}), nil, "", []Task{{0, 0}, {0, 1}}},
		{"leader error", encode(nil, assignmentInfo{err: "boom"}), nil, "boom", nil},
		{"half a task", encode(map[string][]int32{"a": {0}}, assignmentInfo{}), nil, ErrTopology.Error(), []Task{{0, 0}}},
		{"unknown topic", encode(map[string][]int32{"z": {0}}, assignmentInfo{}), nil, ErrTopology.Error(), nil},
		{"negative partition", encode(map[string][]int32{"a": {-1}}, assignmentInfo{}), ErrAssignment, "", nil},
		{"empty", nil, ErrAssignment, "", nil},
		{"bad user data", append(encode(nil, assignmentInfo{})[:6], 0, 0, 0, 1, 7), ErrUserData, "", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got Assignment
			c := cfg
			c.OnAssign = func(a Assignment) { got = a }
			_, err := New(c).ParseSyncAssignment(tc.bytes)
			if !errors.Is(err, tc.wantErr) {
				t.Fatalf("err %v, want %v", err, tc.wantErr)
			}
			if err != nil {
				return
			}
			if !strings.Contains(got.Error, tc.wantError) || (tc.wantError == "") != (got.Error == "") {
				t.Errorf("Error %q, want %q", got.Error, tc.wantError)
			}
			if !slices.Equal(got.Active, tc.active) {
				t.Errorf("Active %v, want %v", got.Active, tc.active)
			}
		})
	}
}

// TestBalanceRandomMembership joins and removes members at random and
// checks after every rebalance that no partition was ever given to a
// member while another owned it (sim.round), and after convergence that
// the group is balanced and covers every task with standbys in place.
func TestBalanceRandomMembership(t *testing.T) {
	for seed := range uint64(8) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(seed, 1))
			cfg := twoSubs
			cfg.Standbys = 1
			s := newSim(t, cfg, map[string]int32{"a": 8, "b": 8, "c": 5})
			next := 0
			for range 25 {
				if len(s.members) == 0 || len(s.members) < 6 && rng.IntN(2) == 0 {
					s.add(fmt.Sprintf("m%02d", next))
					next++
				} else {
					s.remove(s.members[rng.IntN(len(s.members))].id)
				}
				if len(s.members) == 0 {
					continue
				}
				// Local state drifts: offsets for a few random tasks.
				m := s.members[rng.IntN(len(s.members))]
				m.offsets = map[Task]int64{{rng.IntN(2), rng.Int32N(5)}: rng.Int64N(100)}
				if n := s.converge(); n > 2 {
					t.Fatalf("%d rounds to converge", n)
				}
				s.checkActive()
				checkStandbys(t, s, min(1, len(s.members)-1), func(int) bool { return true })
			}
		})
	}
}

var _ kgo.ConsumerBalancerBalance = (*round)(nil)
