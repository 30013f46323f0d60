package groups

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/runnel-io/runnel/internal/groupmember"
)

const (
	seedTopic      = "seed"
	seedPartitions = 4
	// Kafka's smallest session timeout (group.min.session.timeout.ms),
	// so a killed member is noticed soon.
	sessionTimeout    = 6 * time.Second
	heartbeatInterval = time.Second
	// progressStep is how many records per partition each group must
	// consume after each step before the next one starts.
	progressStep = 200
)

// group is one consumer group of the scenario.
type group struct {
	name     string
	balancer string
	// mu guards members: the producer reads them (progress) while the
	// test adds one.
	mu      sync.Mutex
	members []*groupmember.Member
}

func (g *group) add(m *groupmember.Member) {
	g.mu.Lock()
	g.members = append(g.members, m)
	g.mu.Unlock()
}

func (g *group) all() []*groupmember.Member {
	g.mu.Lock()
	defer g.mu.Unlock()
	return slices.Clone(g.members)
}

func (g *group) running() []*groupmember.Member {
	var ms []*groupmember.Member
	for _, m := range g.all() {
		if !m.Killed() {
			ms = append(ms, m)
		}
	}
	return ms
}

// progress is, per partition, the highest offset any member of g polled,
// plus one.
func (g *group) progress() [seedPartitions]int64 {
	var out [seedPartitions]int64
	for _, m := range g.all() {
		for p, h := range m.High() {
			out[p] = max(out[p], h)
		}
	}
	return out
}

// owners maps each partition to the running members that own it.
func (g *group) owners() map[int32][]string {
	out := map[int32][]string{}
	for _, m := range g.running() {
		for _, p := range m.Owned() {
			out[p] = append(out[p], m.Name)
		}
	}
	return out
}

// balanced reports whether the running members own every partition
// exactly once, with the given number of partitions per member (sorted).
func (g *group) balanced(counts ...int) bool {
	owners := g.owners()
	if len(owners) != seedPartitions {
		return false
	}
	for _, o := range owners {
		if len(o) != 1 {
			return false
		}
	}
	var got []int
	for _, m := range g.running() {
		got = append(got, len(m.Owned()))
	}
	slices.Sort(got)
	return slices.Equal(got, counts)
}

// TestSeedScenario is issue 3's picture: topic seed with partitions P0–P3;
// group A (range) with two members owns two partitions each, group B
// (cooperative-sticky) with four owns one each, and a fifth member of B
// stays idle. Records are produced throughout. Then one member of each
// group, running in a child process, is SIGKILLed; the survivors take its
// partitions once its session times out. In the end every record reached
// exactly one member of each group, except the ones a killed member had
// polled but not committed, which reached it and one survivor; every member
// saw each partition in order; no group skipped a record; the committed
// offsets equal the end offsets; and the groups end Empty after the rest
// leave.
func TestSeedScenario(t *testing.T) {
	addr := startBroker(t)
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	adm := newAdmin(t, addr)
	if resp, err := adm.CreateTopic(ctx, seedPartitions, 1, nil, seedTopic); err != nil || resp.Err != nil {
		t.Fatalf("create topic: %v %v", err, resp.Err)
	}

	board := groupmember.NewBoard()
	groupA := &group{name: "A", balancer: "range"}
	groupB := &group{name: "B", balancer: "cooperative-sticky"}
	groups := []*group{groupA, groupB}
	start := func(g *group, name string, child bool) *groupmember.Member {
		cfg := groupmember.Config{
			Name: g.name + "-" + name, Seeds: []string{addr}, Group: g.name, Topic: seedTopic,
			Balancer: g.balancer, SessionTimeout: sessionTimeout, HeartbeatInterval: heartbeatInterval,
		}
		var m *groupmember.Member
		if child {
			var err error
			if m, err = groupmember.StartProcess(cfg, board); err != nil {
				t.Fatal(err)
			}
		} else {
			m = groupmember.Start(cfg, board)
		}
		g.add(m)
		t.Cleanup(func() {
			stopCtx, stop := context.WithTimeout(context.Background(), 30*time.Second)
			defer stop()
			if m.Killed() {
				return
			}
			m.Stop(stopCtx)
		})
		return m
	}

	prod := startProducer(t, ctx, addr, board, groups)
	start(groupA, "1", false)
	a2 := start(groupA, "2-proc", true)
	for _, name := range []string{"1", "2", "3"} {
		start(groupB, name, false)
	}
	b4 := start(groupB, "4-proc", true)

	step := func(what string) {
		t.Helper()
		base := prod.produced()
		for _, g := range groups {
			err := board.Wait(ctx, fmt.Sprintf("group %s to consume %d more records per partition after %s (%v)", g.name, progressStep, what, base),
				func() bool {
					pr := g.progress()
					for p := range seedPartitions {
						if pr[p] < base[p]+progressStep {
							return false
						}
					}
					return true
				})
			if err != nil {
				t.Fatalf("%v; group %s has %v", err, g.name, g.progress())
			}
		}
	}
	// waitBalanced waits until the running members of g own the
	// partitions in counts (sorted) and the broker describes the same.
	waitBalanced := func(g *group, counts ...int) {
		t.Helper()
		var last error
		err := board.Wait(ctx, fmt.Sprintf("group %s balanced as %v", g.name, counts), func() bool {
			if !g.balanced(counts...) {
				last = fmt.Errorf("the members own %v", g.owners())
				return false
			}
			last = describedAsOwned(ctx, adm, g)
			return last == nil
		})
		if err != nil {
			t.Fatalf("%v; %v", err, last)
		}
	}

	// Step 1: A's two members own two partitions each, B's four one each.
	waitBalanced(groupA, 2, 2)
	waitBalanced(groupB, 1, 1, 1, 1)
	step("both groups formed")

	// Step 2: a fifth member of B joins and stays idle.
	b5 := start(groupB, "5-idle", false)
	if err := board.Wait(ctx, "the fifth member of B to be in the group", func() bool {
		return describedMembers(ctx, adm, "B") == 5
	}); err != nil {
		t.Fatal(err)
	}
	waitBalanced(groupB, 0, 1, 1, 1, 1)
	if owned := b5.Owned(); len(owned) != 0 {
		t.Fatalf("the fifth member of B owns %v", owned)
	}
	step("the fifth member of B joined")
	if n := len(b5.Records()); n != 0 || len(b5.Owned()) != 0 {
		t.Fatalf("the idle fifth member of B received %d records and owns %v", n, b5.Owned())
	}
	t.Logf("before the kill: A %v, B %v", groupA.owners(), groupB.owners())

	// Step 3: SIGKILL one member of each group (no LeaveGroup, no last
	// commit). Their partitions move to the survivors once their
	// sessions time out.
	killedAt := time.Now()
	a2Owned, b4Owned := a2.Owned(), b4.Owned()
	a2.Kill()
	b4.Kill()
	waitBalanced(groupA, 4)
	waitBalanced(groupB, 1, 1, 1, 1) // the idle member takes B-4's partition (sticky)
	t.Logf("the survivors own everything %v after the kill: A %v (A-2 had %v), B %v (B-4 had %v)",
		time.Since(killedAt).Round(time.Millisecond), groupA.owners(), a2Owned, groupB.owners(), b4Owned)
	step("the kill")

	// Step 4: stop producing; both groups read to the end and commit it.
	ends := prod.stop()
	for _, g := range groups {
		if err := board.Wait(ctx, fmt.Sprintf("group %s to consume to the end %v", g.name, ends), func() bool {
			return g.progress() == ends
		}); err != nil {
			t.Fatalf("%v; group %s has %v", err, g.name, g.progress())
		}
		if err := board.Wait(ctx, fmt.Sprintf("group %s's committed offsets to reach the end %v", g.name, ends), func() bool {
			return committedOffsets(ctx, adm, g.name) == ends
		}); err != nil {
			t.Fatalf("%v; committed: %v", err, committedOffsets(ctx, adm, g.name))
		}
	}

	// Step 5: the rest leave; both groups end Empty.
	for _, g := range groups {
		for _, m := range g.running() {
			if err := m.Stop(ctx); err != nil {
				t.Errorf("member %s: %v", m.Name, err)
			}
		}
		if err := board.Wait(ctx, fmt.Sprintf("group %s to be Empty", g.name), func() bool {
			dg, err := adm.DescribeGroups(ctx, g.name)
			return err == nil && dg[g.name].State == "Empty"
		}); err != nil {
			t.Error(err)
		}
	}

	log := readLog(t, ctx, addr, ends)
	for _, g := range groups {
		checkDelivery(t, g, log)
	}
}

// describedAsOwned compares the broker's view of g (DescribeGroups) with
// the members' own: Stable, the running members, the partitions of each.
func describedAsOwned(ctx context.Context, adm *kadm.Client, g *group) error {
	dgs, err := adm.DescribeGroups(ctx, g.name)
	if err != nil {
		return fmt.Errorf("describe group %s: %w", g.name, err)
	}
	dg := dgs[g.name]
	if dg.Err != nil || dg.State != "Stable" || dg.ProtocolType != "consumer" || dg.Protocol != g.balancer {
		return fmt.Errorf("group %s described as state %q, protocol type %q, protocol %q, err %v; want Stable, consumer, %s",
			g.name, dg.State, dg.ProtocolType, dg.Protocol, dg.Err, g.balancer)
	}
	want := map[string][]int32{}
	for _, m := range g.running() {
		want[m.Name] = append([]int32{}, m.Owned()...)
	}
	got := map[string][]int32{}
	for _, m := range dg.Members {
		ps := []int32{}
		if a, ok := m.Assigned.AsConsumer(); ok {
			for _, tp := range a.Topics {
				if tp.Topic == seedTopic {
					ps = append(ps, tp.Partitions...)
				}
			}
		}
		slices.Sort(ps)
		got[m.ClientID] = ps
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		return fmt.Errorf("group %s: DescribeGroups assigns %v, the members own %v", g.name, got, want)
	}
	return nil
}

func describedMembers(ctx context.Context, adm *kadm.Client, group string) int {
	dgs, err := adm.DescribeGroups(ctx, group)
	if err != nil {
		return -1
	}
	return len(dgs[group].Members)
}

// committedOffsets is what OffsetFetch returns for the seed topic (-1 for
// a partition without a commit or on error).
func committedOffsets(ctx context.Context, adm *kadm.Client, group string) [seedPartitions]int64 {
	var out [seedPartitions]int64
	for p := range out {
		out[p] = -1
	}
	resp, err := adm.FetchOffsets(ctx, group)
	if err != nil {
		return out
	}
	for p := range out {
		if o, ok := resp.Lookup(seedTopic, int32(p)); ok && o.Err == nil {
			out[p] = o.At
		}
	}
	return out
}

// checkDelivery checks everything g's members polled against the log.
func checkDelivery(t *testing.T, g *group, log [seedPartitions][]string) {
	t.Helper()
	// receivers[p][o]: the members that polled partition p's offset o.
	var receivers [seedPartitions][][]*groupmember.Member
	for p := range receivers {
		receivers[p] = make([][]*groupmember.Member, len(log[p]))
	}
	for _, m := range g.all() {
		for _, f := range m.Failures() {
			t.Errorf("group %s member %s reported: %s", g.name, m.Name, f)
		}
		last := map[int32]int64{}
		for _, r := range m.Records() {
			p := r.Partition
			if p < 0 || p >= seedPartitions || r.Offset < 0 || r.Offset >= int64(len(log[p])) {
				t.Errorf("group %s member %s polled %d/%d, outside the log", g.name, m.Name, p, r.Offset)
				continue
			}
			if prev, ok := last[p]; ok && r.Offset <= prev {
				t.Errorf("group %s member %s: partition %d offset %d after %d (order broken)", g.name, m.Name, p, r.Offset, prev)
			}
			last[p] = r.Offset
			if r.Value != log[p][r.Offset] {
				t.Errorf("group %s member %s: %d/%d is %q, the log has %q", g.name, m.Name, p, r.Offset, r.Value, log[p][r.Offset])
			}
			receivers[p][r.Offset] = append(receivers[p][r.Offset], m)
		}
	}
	dups := 0
	for p := range receivers {
		for o, rs := range receivers[p] {
			switch {
			case len(rs) == 0:
				t.Errorf("group %s: no member received %d/%d (a gap)", g.name, p, o)
			case len(rs) == 2 && redelivered(rs, int32(p), int64(o)):
				dups++
			case len(rs) > 1:
				var names []string
				for _, m := range rs {
					names = append(names, m.Name)
				}
				t.Errorf("group %s: %d/%d reached %v", g.name, p, o, names)
			}
		}
	}
	t.Logf("group %s: records per partition %v, %d delivered twice after the kill", g.name, lens(log), dups)
}

// redelivered reports whether rs (two members) is a killed member that
// polled p/o without its commit being acknowledged and the survivor that
// took p over from the killed member's last commit.
func redelivered(rs []*groupmember.Member, p int32, o int64) bool {
	for i, m := range rs {
		if m.Killed() && !rs[1-i].Killed() {
			return o >= m.Committed()[p]
		}
	}
	return false
}

func lens(log [seedPartitions][]string) [seedPartitions]int {
	var out [seedPartitions]int
	for p := range log {
		out[p] = len(log[p])
	}
	return out
}

func newAdmin(t *testing.T, addr string) *kadm.Client {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return kadm.NewClient(cl)
}
