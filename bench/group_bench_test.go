package bench_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/runnel-io/runnel/bench/internal/harness"
	"github.com/runnel-io/runnel/broker/brokertest"
	"github.com/runnel-io/runnel/internal/groupmember"
)

// Consumer-group benchmarks (issue 3): how long a group takes to hand a
// departed member's partitions to the others, and how many offset commits
// per second the coordinator takes. Both run against in-process Runnel and
// kfake only; the process pair (see targets) is not run for them yet.
const (
	// rebalancePartitions is the size of the topic the groups consume,
	// enough for every member of the largest group to own two.
	rebalancePartitions = 64
	// groupSession is the members' session timeout: Kafka's smallest
	// (group.min.session.timeout.ms), so a killed member is noticed
	// after 6 s.
	groupSession = 6 * time.Second
	// groupHeartbeat is the members' heartbeat interval. A member learns
	// of a rebalance from a heartbeat, so after a LeaveGroup the others
	// take up to one interval to rejoin; Kafka advises at most a third of
	// the session timeout.
	groupHeartbeat = time.Second
	// commitPartitions is the size of the topic of the commit benchmark.
	commitPartitions = 8
)

var (
	groupSizes = []int{2, 8, 32}
	// commitClients: one client committing in a loop, and several at once.
	commitClients = []int{1, 8}
)

// groupTargets are the targets the group benchmarks run against: Runnel
// in-process, with no group.initial.rebalance.delay.ms so that setting up
// each new group (untimed) does not wait 3 s (no timed op starts from an
// empty group, where the delay applies), and kfake, which has no such
// delay.
func groupTargets() []struct {
	name  string
	start func(tb testing.TB) server
} {
	var out []struct {
		name  string
		start func(tb testing.TB) server
	}
	for _, tg := range targets {
		switch tg.name {
		case "runnel":
			tg.start = func(tb testing.TB) server {
				return server{addr: brokertest.Start(tb, map[string]string{"group.initial.rebalance.delay.ms": "0"}).Addr()}
			}
		case "kfake":
		default:
			continue
		}
		out = append(out, tg)
	}
	return out
}

// BenchmarkRebalance measures, for groups of 2, 8 and 32 members (kgo,
// cooperative-sticky, one client each) on a 64-partition topic, the time
// from one member leaving until the remaining members own every partition
// again, by their own OnPartitionsAssigned callbacks: leave = the member's
// client closes and sends LeaveGroup; kill = the member runs in a child
// process that is SIGKILLed, so the coordinator notices only when its
// 6 s session times out. One op is one departure; between ops (untimed) a
// new member joins and the group settles with all members again.
func BenchmarkRebalance(b *testing.B) {
	for _, tg := range groupTargets() {
		b.Run(tg.name, func(b *testing.B) {
			srv := tg.start(b)
			for _, how := range []string{"leave", "kill"} {
				for _, n := range groupSizes {
					var g *benchGroup
					b.Run(fmt.Sprintf("%s/%dmembers", how, n), func(b *testing.B) {
						b.StopTimer()
						if g == nil {
							g = newBenchGroup(b, srv, n)
						}
						benchRebalance(b, g, how == "kill")
					})
					if g != nil {
						g.close(b)
					}
				}
			}
		})
	}
}

// benchGroup is a consumer group kept across the runs of one benchmark.
type benchGroup struct {
	srv     server
	adm     *kadm.Client
	admCl   *kgo.Client
	topic   string
	name    string
	size    int
	board   *groupmember.Board
	members []*groupmember.Member
	seq     int
}

func newBenchGroup(b testing.TB, srv server, size int) *benchGroup {
	b.Helper()
	admCl, err := harness.NewClient([]string{srv.addr}, nil)
	if err != nil {
		b.Fatal(err)
	}
	g := &benchGroup{srv: srv, admCl: admCl, adm: kadm.NewClient(admCl), size: size,
		topic: harness.TopicName("rebalance"), board: groupmember.NewBoard()}
	g.name = g.topic + "-group"
	if err := harness.CreateTopic(b.Context(), g.adm, g.topic, rebalancePartitions, nil); err != nil {
		b.Fatal(err)
	}
	for range size - 1 {
		g.add(b, false)
	}
	return g
}

func (g *benchGroup) config() groupmember.Config {
	g.seq++
	return groupmember.Config{
		Name: fmt.Sprintf("m%d", g.seq), Seeds: []string{g.srv.addr}, Group: g.name, Topic: g.topic,
		Balancer: "cooperative-sticky", SessionTimeout: groupSession, HeartbeatInterval: groupHeartbeat,
	}
}

// add starts a member, in a child process when child is set.
func (g *benchGroup) add(b testing.TB, child bool) *groupmember.Member {
	b.Helper()
	cfg := g.config()
	if !child {
		m := groupmember.Start(cfg, g.board)
		g.members = append(g.members, m)
		return m
	}
	m, err := groupmember.StartProcess(cfg, g.board)
	if err != nil {
		b.Fatal(err)
	}
	g.members = append(g.members, m)
	return m
}

// balanced reports whether the running members own every partition once,
// each as many as an even split gives it.
func (g *benchGroup) balanced(members []*groupmember.Member) bool {
	owned := map[int32]int{}
	lo, hi := rebalancePartitions/len(members), (rebalancePartitions+len(members)-1)/len(members)
	for _, m := range members {
		ps := m.Owned()
		if len(ps) < lo || len(ps) > hi {
			return false
		}
		for _, p := range ps {
			owned[p]++
		}
	}
	if len(owned) != rebalancePartitions {
		return false
	}
	for _, n := range owned {
		if n != 1 {
			return false
		}
	}
	return true
}

// covered reports whether members own every partition between them.
func covered(members []*groupmember.Member) bool {
	owned := map[int32]bool{}
	for _, m := range members {
		for _, p := range m.Owned() {
			owned[p] = true
		}
	}
	return len(owned) == rebalancePartitions
}

func (g *benchGroup) running() []*groupmember.Member {
	var out []*groupmember.Member
	for _, m := range g.members {
		if m.Running() {
			out = append(out, m)
		}
	}
	return out
}

// settle waits until the running members are balanced and the broker
// describes the group as Stable with as many members.
func (g *benchGroup) settle(b testing.TB, ctx context.Context) {
	b.Helper()
	ms := g.running()
	var describedAs string
	err := g.board.Wait(ctx, fmt.Sprintf("%d members to settle", len(ms)), func() bool {
		if !g.balanced(ms) {
			return false
		}
		dgs, err := g.adm.DescribeGroups(ctx, g.name)
		if err != nil {
			describedAs = err.Error()
			return false
		}
		dg := dgs[g.name]
		describedAs = fmt.Sprintf("%s with %d members", dg.State, len(dg.Members))
		return dg.State == "Stable" && len(dg.Members) == len(ms)
	})
	if err != nil {
		b.Fatalf("%v (described as %s)", err, describedAs)
	}
}

func benchRebalance(b *testing.B, g *benchGroup, kill bool) {
	b.StopTimer()
	ctx, cancel := context.WithTimeout(b.Context(), 5*time.Minute)
	defer cancel()
	var total time.Duration
	for range b.N {
		total += g.depart(b, ctx, kill, b.StartTimer, b.StopTimer)
	}
	b.ReportMetric(total.Seconds()*1000/float64(b.N), "ms/reassign")
	for _, m := range g.members {
		for _, f := range m.Failures() {
			b.Logf("member %s reported: %s", m.Name, f)
		}
	}
}

// depart adds a member (in a child process for kill), waits until the
// group settles, then makes the new member leave (or kills it) and waits
// until the others own every partition. It returns that time; start and
// stop bracket it (the benchmark's timer).
func (g *benchGroup) depart(tb testing.TB, ctx context.Context, kill bool, start, stop func()) time.Duration {
	tb.Helper()
	leaver := g.add(tb, kill)
	g.settle(tb, ctx)
	var rest []*groupmember.Member
	for _, m := range g.running() {
		if m != leaver {
			rest = append(rest, m)
		}
	}
	t0 := time.Now()
	start()
	if kill {
		leaver.Kill()
	} else if err := leaver.Stop(ctx); err != nil {
		tb.Fatalf("member %s leaving: %v", leaver.Name, err)
	}
	if err := g.board.Wait(ctx, "the rest to own every partition", func() bool { return covered(rest) }); err != nil {
		tb.Fatal(err)
	}
	stop()
	return time.Since(t0)
}

func (g *benchGroup) close(b testing.TB) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var errs []error
	for _, m := range g.running() {
		errs = append(errs, m.Stop(ctx))
	}
	g.admCl.Close()
	if err := errors.Join(errs...); err != nil {
		b.Error(err)
	}
}

// BenchmarkCommit measures offset commits per second by members of a
// consumer group: one client committing in a loop, and eight committing at
// once (each its own partition). One op is one OffsetCommit request for one
// partition, sent with the member's generation, answered without error.
func BenchmarkCommit(b *testing.B) {
	for _, tg := range groupTargets() {
		b.Run(tg.name, func(b *testing.B) {
			srv := tg.start(b)
			for _, n := range commitClients {
				b.Run(fmt.Sprintf("%dclients", n), func(b *testing.B) {
					benchCommit(b, srv, n)
				})
			}
		})
	}
}

// committer is one member of the commit benchmark's group.
type committer struct {
	cl *kgo.Client
	mu struct {
		sync.Mutex
		owned []int32
	}
}

func benchCommit(b *testing.B, srv server, clients int) {
	b.StopTimer()
	ctx, cancel := context.WithTimeout(b.Context(), 5*time.Minute)
	defer cancel()
	cg := newCommitGroup(b, ctx, srv, clients)
	defer cg.close()
	start := time.Now()
	b.ResetTimer()
	b.StartTimer()
	err := cg.commit(ctx, b.N)
	b.StopTimer()
	el := time.Since(start)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(b.N)/el.Seconds(), "commits/s")
}

// commitGroup is a consumer group whose members commit offsets.
type commitGroup struct {
	topic string
	cs    []*committer
	close func()
}

// newCommitGroup creates a topic and a group of clients members on it,
// and waits until the group is Stable and every member owns a partition.
func newCommitGroup(tb testing.TB, ctx context.Context, srv server, clients int) *commitGroup {
	tb.Helper()
	admCl, err := harness.NewClient([]string{srv.addr}, nil)
	if err != nil {
		tb.Fatal(err)
	}
	cg := &commitGroup{topic: harness.TopicName("commit")}
	closers := []func(){admCl.Close}
	cg.close = func() {
		for _, c := range slices.Backward(closers) {
			c()
		}
	}
	adm := kadm.NewClient(admCl)
	group := cg.topic + "-group"
	if err := harness.CreateTopic(ctx, adm, cg.topic, commitPartitions, nil); err != nil {
		cg.close()
		tb.Fatal(err)
	}
	for range clients {
		c := &committer{}
		cl, err := harness.NewClient([]string{srv.addr}, nil,
			kgo.ConsumerGroup(group), kgo.ConsumeTopics(cg.topic), kgo.DisableAutoCommit(),
			kgo.SessionTimeout(groupSession), kgo.HeartbeatInterval(groupHeartbeat),
			kgo.OnPartitionsAssigned(func(_ context.Context, _ *kgo.Client, m map[string][]int32) {
				c.mu.Lock()
				c.mu.owned = append(c.mu.owned, m[cg.topic]...)
				c.mu.Unlock()
			}),
		)
		if err != nil {
			cg.close()
			tb.Fatal(err)
		}
		closers = append(closers, cl.Close)
		c.cl = cl
		cg.cs = append(cg.cs, c)
		// The client joins its group when it first polls; Close ends
		// the poll.
		go cl.PollFetches(ctx)
	}
	// Commits carry the generation, so wait until the group is Stable and
	// every member holds a partition (checked every 100ms: the members
	// report to no board).
	var state string
	err = groupmember.NewBoard().Wait(ctx, "the commit group to settle", func() bool {
		for _, c := range cg.cs {
			if len(c.owned()) == 0 {
				return false
			}
		}
		dgs, err := adm.DescribeGroups(ctx, group)
		if err != nil {
			return false
		}
		state = dgs[group].State
		return state == "Stable" && len(dgs[group].Members) == clients
	})
	if err != nil {
		cg.close()
		tb.Fatalf("%v (state %s)", err, state)
	}
	return cg
}

func (c *committer) owned() []int32 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.mu.owned)
}

// commit sends n commits, spread over the members, each member committing
// its first partition with offsets 1, 2, ... in a loop; every commit must
// be answered without error.
func (cg *commitGroup) commit(ctx context.Context, n int) error {
	var wg sync.WaitGroup
	errc := make(chan error, len(cg.cs))
	for i, c := range cg.cs {
		k := n / len(cg.cs)
		if i < n%len(cg.cs) {
			k++
		}
		p := c.owned()[0]
		wg.Go(func() {
			for o := range int64(k) {
				var cerr error
				c.cl.CommitOffsetsSync(ctx, map[string]map[int32]kgo.EpochOffset{cg.topic: {p: {Epoch: -1, Offset: o + 1}}},
					func(_ *kgo.Client, _ *kmsg.OffsetCommitRequest, resp *kmsg.OffsetCommitResponse, err error) {
						cerr = err
						if err == nil {
							for _, t := range resp.Topics {
								for _, pr := range t.Partitions {
									cerr = errors.Join(cerr, kerr.ErrorForCode(pr.ErrorCode))
								}
							}
						}
					})
				if cerr != nil {
					errc <- fmt.Errorf("commit %d of partition %d: %w", o+1, p, cerr)
					return
				}
			}
		})
	}
	wg.Wait()
	close(errc)
	var errs []error
	for err := range errc {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// TestGroupBenchmarks runs each consumer-group benchmark once, small,
// against every group target, so a broken driver or target shows up in
// `go test` and not only in `make bench`: a member of a group of two
// leaves and one is killed (both only without -short: the kill waits out a
// session timeout), and two members commit 100 times.
func TestGroupBenchmarks(t *testing.T) {
	for _, tg := range groupTargets() {
		t.Run(tg.name, func(t *testing.T) {
			srv := tg.start(t)
			ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
			defer cancel()
			cg := newCommitGroup(t, ctx, srv, 2)
			defer cg.close()
			if err := cg.commit(ctx, 100); err != nil {
				t.Fatal(err)
			}
			if testing.Short() {
				return
			}
			g := newBenchGroup(t, srv, 2)
			defer g.close(t)
			for _, kill := range []bool{false, true} {
				d := g.depart(t, ctx, kill, func() {}, func() {})
				t.Logf("kill=%v: the other member owned every partition after %v", kill, d)
			}
		})
	}
}
