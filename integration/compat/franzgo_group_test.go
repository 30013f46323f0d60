package compat

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// kgoMember is one franz-go consumer-group member under test. It tracks the
// partitions the group gave it through franz-go's assignment callbacks, and
// polls in its own goroutine between start and stop.
type kgoMember struct {
	name  string
	topic string
	cl    *kgo.Client

	mu struct {
		sync.Mutex
		owned   map[int32]bool
		assigns int     // OnPartitionsAssigned calls
		revoked []int32 // every partition revoked or lost, in order
	}
	cancel context.CancelFunc
	done   chan struct{}
}

// polled is what one poll of one member returned.
type polled struct {
	member string
	recs   []record
	err    error
}

// newKgoMember creates a member of group consuming topic from the start
// without auto-commit (the tests commit explicitly). opts add to or override
// the defaults. The client is closed when the test ends.
func newKgoMember(t *testing.T, addr, group, topic, name string, opts ...kgo.Opt) *kgoMember {
	t.Helper()
	m := &kgoMember{name: name, topic: topic}
	m.mu.owned = map[int32]bool{}
	drop := func(_ context.Context, _ *kgo.Client, ps map[string][]int32) {
		m.mu.Lock()
		defer m.mu.Unlock()
		for _, p := range ps[topic] {
			delete(m.mu.owned, p)
			m.mu.revoked = append(m.mu.revoked, p)
		}
	}
	all := append([]kgo.Opt{
		kgo.SeedBrokers(addr),
		kgo.ClientID("runnel-compat-" + name),
		kgo.ConsumerGroup(group),
		kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.DisableAutoCommit(),
		kgo.FetchMaxWait(100 * time.Millisecond),
		kgo.OnPartitionsAssigned(func(_ context.Context, _ *kgo.Client, ps map[string][]int32) {
			m.mu.Lock()
			defer m.mu.Unlock()
			m.mu.assigns++
			for _, p := range ps[topic] {
				m.mu.owned[p] = true
			}
		}),
		kgo.OnPartitionsRevoked(drop),
		kgo.OnPartitionsLost(drop),
	}, opts...)
	cl, err := kgo.NewClient(all...)
	if err != nil {
		t.Fatalf("member %s: %v", name, err)
	}
	m.cl = cl
	t.Cleanup(func() { m.stop(); cl.Close() })
	return m
}

// owned returns the partitions the member holds now, sorted.
func (m *kgoMember) owned() []int32 {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Sorted(maps.Keys(m.mu.owned))
}

// churn returns how often the member was assigned partitions and which it
// had revoked or lost so far.
func (m *kgoMember) churn() (assigns int, revoked []int32) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.mu.assigns, slices.Clone(m.mu.revoked)
}

// start polls in a goroutine until stop, sending what each poll returns to out.
// Group membership (join, sync, heartbeats) runs in franz-go's background, so
// a member joins even before it polls.
func (m *kgoMember) start(out chan<- polled) {
	ctx, cancel := context.WithCancel(context.Background())
	m.cancel, m.done = cancel, make(chan struct{})
	go func() {
		defer close(m.done)
		for {
			fs := m.cl.PollFetches(ctx)
			if ctx.Err() != nil {
				return
			}
			p := polled{member: m.name, err: fs.Err0()}
			fs.EachRecord(func(r *kgo.Record) { p.recs = append(p.recs, fromKgo(r)) })
			select {
			case out <- p:
			case <-ctx.Done():
				return
			}
		}
	}()
}

// stop ends the member's polling and waits for its goroutine; a stopped (or
// never started) member is left alone.
func (m *kgoMember) stop() {
	if m.cancel != nil {
		m.cancel()
		<-m.done
		m.cancel = nil
	}
}

// commit commits every record the member has polled.
func (m *kgoMember) commit(t *testing.T) {
	t.Helper()
	if err := m.cl.CommitUncommittedOffsets(testContext(t, 30*time.Second)); err != nil {
		t.Fatalf("member %s: commit: %v", m.name, err)
	}
}

// collect reads from in until n records have arrived, and returns them by
// member. A fetch error fails the test.
func collect(t *testing.T, in <-chan polled, n int) map[string][]record {
	t.Helper()
	ctx := testContext(t, 60*time.Second)
	got := map[string][]record{}
	total := 0
	for total < n {
		select {
		case p := <-in:
			if p.err != nil {
				t.Fatalf("member %s: fetch: %v", p.member, p.err)
			}
			got[p.member] = append(got[p.member], p.recs...)
			total += len(p.recs)
		case <-ctx.Done():
			t.Fatalf("group consumed %d of %d records: %v", total, n, ctx.Err())
		}
	}
	return got
}

// waitOwned waits until each member holds exactly the number of partitions
// given for it, and together they hold every partition of the topic once.
func waitOwned(t *testing.T, want map[*kgoMember]int) {
	t.Helper()
	ctx := testContext(t, 60*time.Second)
	waitFor(t, ctx, "assignment", func() error {
		seen := map[int32]string{}
		var desc []string
		for m, n := range want {
			ps := m.owned()
			desc = append(desc, fmt.Sprintf("%s=%v", m.name, ps))
			if len(ps) != n {
				return fmt.Errorf("%s owns %v, want %d partitions (%v)", m.name, ps, n, desc)
			}
			for _, p := range ps {
				if o, ok := seen[p]; ok {
					return fmt.Errorf("partition %d owned by %s and %s", p, o, m.name)
				}
				seen[p] = m.name
			}
		}
		if len(seen) != groupPartitions {
			return fmt.Errorf("%d partitions owned (%v)", len(seen), desc)
		}
		return nil
	})
}

// assertFromOwned checks that every record a member consumed is from a
// partition it owns.
func assertFromOwned(t *testing.T, m *kgoMember, recs []record) {
	t.Helper()
	owned := m.owned()
	for _, r := range recs {
		if !slices.Contains(owned, r.Partition) {
			t.Errorf("member %s consumed %d/%d but owns %v", m.name, r.Partition, r.Offset, owned)
		}
	}
}

// describeGroup returns the group's state, protocol and, per member client
// ID, its instance ID and assigned partitions of topic.
func describeGroup(t *testing.T, addr, group, topic string) (state, protocol string, members map[string]string, assigned map[string][]int32) {
	t.Helper()
	ctx := testContext(t, 30*time.Second)
	gs, err := newAdmin(t, addr).DescribeGroups(ctx, group)
	if err != nil {
		t.Fatalf("describe group %s: %v", group, err)
	}
	g := gs[group]
	if g.Err != nil {
		t.Fatalf("describe group %s: %v", group, g.Err)
	}
	members, assigned = map[string]string{}, map[string][]int32{}
	for _, m := range g.Members {
		inst := ""
		if m.InstanceID != nil {
			inst = *m.InstanceID
		}
		members[m.ClientID] = inst
		if a, ok := m.Assigned.AsConsumer(); ok {
			for _, at := range a.Topics {
				if at.Topic == topic {
					assigned[m.ClientID] = slices.Sorted(slices.Values(at.Partitions))
				}
			}
		}
	}
	return g.State, g.Protocol, members, assigned
}

// TestGroupFranzGoRange runs two franz-go members with the range assignor on
// four partitions: each owns two adjacent partitions, the group consumes every
// record exactly once (each member only from its own partitions), and the
// offsets the members commit are the end offsets, read back with kadm.
func TestGroupFranzGoRange(t *testing.T) {
	t.Parallel()
	addr := startBroker(t)
	topic := topicName(t)
	group := topic + ".group"
	createTopic(t, addr, topic, groupPartitions)

	in := make(chan polled)
	a := newKgoMember(t, addr, group, topic, "a", kgo.Balancers(kgo.RangeBalancer()))
	b := newKgoMember(t, addr, group, topic, "b", kgo.Balancers(kgo.RangeBalancer()))
	a.start(in)
	b.start(in)
	waitOwned(t, map[*kgoMember]int{a: 2, b: 2})
	for _, m := range []*kgoMember{a, b} {
		if ps := m.owned(); !slices.Equal(ps, []int32{0, 1}) && !slices.Equal(ps, []int32{2, 3}) {
			t.Errorf("range gave %s partitions %v, want [0 1] or [2 3]", m.name, ps)
		}
	}

	want := produceRound(t, addr, topic, groupPartitions, 25, "r1")
	got := collect(t, in, len(want))
	assertFromOwned(t, a, got["a"])
	assertFromOwned(t, b, got["b"])
	assertConsumedOnce(t, "range group", append(got["a"], got["b"]...), want)

	a.commit(t)
	b.commit(t)
	waitCommitted(t, addr, group, topic, endsOf(want))

	state, protocol, _, assigned := describeGroup(t, addr, group, topic)
	if state != "Stable" || protocol != "range" {
		t.Errorf("group is %s with protocol %q, want Stable with range", state, protocol)
	}
	for _, m := range []*kgoMember{a, b} {
		if got := assigned["runnel-compat-"+m.name]; !slices.Equal(got, m.owned()) {
			t.Errorf("DescribeGroups says %s is assigned %v; the member owns %v", m.name, got, m.owned())
		}
	}
}

// TestGroupFranzGoCooperativeSticky lets one cooperative-sticky member consume
// and commit alone, then adds a second: the first keeps two of its four
// partitions throughout (cooperative rebalancing revokes only the two that
// move), the second resumes the moved partitions from the first member's
// commits, and the two consume the next round exactly once.
func TestGroupFranzGoCooperativeSticky(t *testing.T) {
	t.Parallel()
	addr := startBroker(t)
	topic := topicName(t)
	group := topic + ".group"
	createTopic(t, addr, topic, groupPartitions)
	sticky := kgo.Balancers(kgo.CooperativeStickyBalancer())

	in := make(chan polled)
	a := newKgoMember(t, addr, group, topic, "a", sticky)
	a.start(in)
	waitOwned(t, map[*kgoMember]int{a: 4})
	r1 := produceRound(t, addr, topic, groupPartitions, 10, "r1")
	assertConsumedOnce(t, "member a alone", collect(t, in, len(r1))["a"], r1)
	a.commit(t)
	waitCommitted(t, addr, group, topic, endsOf(r1))
	_, revokedBefore := a.churn()

	b := newKgoMember(t, addr, group, topic, "b", sticky)
	b.start(in)
	waitOwned(t, map[*kgoMember]int{a: 2, b: 2})
	_, revoked := a.churn()
	moved := slices.Sorted(slices.Values(revoked[len(revokedBefore):]))
	if !slices.Equal(moved, b.owned()) {
		t.Errorf("a had %v revoked when b joined; b owns %v: a cooperative rebalance revokes only what moves", moved, b.owned())
	}

	r2 := produceRound(t, addr, topic, groupPartitions, 10, "r2")
	got := collect(t, in, len(r2))
	assertFromOwned(t, a, got["a"])
	assertFromOwned(t, b, got["b"])
	assertConsumedOnce(t, "cooperative group after the rebalance", append(got["a"], got["b"]...), r2)
	a.commit(t)
	b.commit(t)
	waitCommitted(t, addr, group, topic, endsOf(r2))

	if state, protocol, _, _ := describeGroup(t, addr, group, topic); state != "Stable" || protocol != "cooperative-sticky" {
		t.Errorf("group is %s with protocol %q, want Stable with cooperative-sticky", state, protocol)
	}
}

// TestGroupFranzGoStaticMembership runs two static members (group.instance.id,
// KIP-345). One closes without leaving and comes back under the same instance
// ID: the broker keeps its place meanwhile, hands it its old partitions
// without a rebalance (same generation; the other member sees no revocation)
// and it resumes from its committed offsets. This is Kafka's rule: a static
// member rejoining a Stable group whose selected protocol stays the same
// causes no rebalance, and a returning leader is told to skip assignment
// (KIP-814). (kfake, under -tags kfake, is stricter: it rebalances when the
// returning member's join metadata differs byte for byte, which happens when
// the member was leader, so there this test fails whenever it was.)
func TestGroupFranzGoStaticMembership(t *testing.T) {
	t.Parallel()
	addr := startBroker(t)
	topic := topicName(t)
	group := topic + ".group"
	createTopic(t, addr, topic, groupPartitions)
	static := func(id string) []kgo.Opt {
		return []kgo.Opt{kgo.InstanceID(id), kgo.Balancers(kgo.RangeBalancer()), kgo.SessionTimeout(30 * time.Second)}
	}

	in := make(chan polled)
	s1 := newKgoMember(t, addr, group, topic, "s1", static("s1")...)
	s2 := newKgoMember(t, addr, group, topic, "s2", static("s2")...)
	s1.start(in)
	s2.start(in)
	waitOwned(t, map[*kgoMember]int{s1: 2, s2: 2})
	r1 := produceRound(t, addr, topic, groupPartitions, 10, "r1")
	got := collect(t, in, len(r1))
	assertConsumedOnce(t, "static group", append(got["s1"], got["s2"]...), r1)
	s1.commit(t)
	s2.commit(t)
	waitCommitted(t, addr, group, topic, endsOf(r1))

	s1Parts := s1.owned()
	s1ID, gen := s1.cl.GroupMetadata()
	s2Assigns, s2Revoked := s2.churn()

	// Close sends no LeaveGroup for a static member: the broker keeps s1
	// in the group until its session times out.
	s1.stop()
	s1.cl.Close()
	state, _, members, _ := describeGroup(t, addr, group, topic)
	if state != "Stable" || members["runnel-compat-s1"] != "s1" || members["runnel-compat-s2"] != "s2" {
		t.Errorf("after s1 closed: group %s with members %v, want Stable with s1 and s2 (client ID: instance ID)", state, members)
	}

	s1b := newKgoMember(t, addr, group, topic, "s1", static("s1")...)
	s1b.start(in)
	waitOwned(t, map[*kgoMember]int{s1b: 2, s2: 2})
	if ps := s1b.owned(); !slices.Equal(ps, s1Parts) {
		t.Errorf("s1 came back with partitions %v, had %v", ps, s1Parts)
	}
	newID, newGen := s1b.cl.GroupMetadata()
	if newGen != gen {
		t.Errorf("s1's return moved the group from generation %d to %d: a static member's return must not rebalance", gen, newGen)
	}
	if newID == s1ID {
		t.Errorf("s1 came back with its old member ID %s; the broker gives a returning static member a new one", newID)
	}
	if assigns, revoked := s2.churn(); assigns != s2Assigns || len(revoked) != len(s2Revoked) {
		t.Errorf("s2 saw a rebalance when s1 returned: assigned %d→%d times, revoked %v→%v", s2Assigns, assigns, s2Revoked, revoked)
	}

	r2 := produceRound(t, addr, topic, groupPartitions, 10, "r2")
	got = collect(t, in, len(r2))
	assertFromOwned(t, s1b, got["s1"])
	assertFromOwned(t, s2, got["s2"])
	assertConsumedOnce(t, "static group after s1's return", append(got["s1"], got["s2"]...), r2)
	s1b.commit(t)
	s2.commit(t)
	waitCommitted(t, addr, group, topic, endsOf(r2))
}
