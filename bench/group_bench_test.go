package bench_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/runnel-io/runnel/bench/internal/harness"
	"github.com/runnel-io/runnel/internal/groupmember"
)

// Consumer-group benchmarks (issue 3): how long a group takes to hand a
// departed member's partitions to the others, and how many offset commits
// per second the coordinator takes. Both run against in-process Runnel and
// kfake, the fair pair (see targets).
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

// groupTargets are the targets the group benchmarks run against.
func groupTargets() []struct {
	name  string
	start func(tb testing.TB) server
} {
	var out []struct {
		name  string
		start func(tb testing.TB) server
	}
	for _, tg := range targets {
		if tg.name == "runnel" || tg.name == "kfake" {
			out = append(out, tg)
		}
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

func newBenchGroup(b *testing.B, srv server, size int) *benchGroup {
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
func (g *benchGroup) add(b *testing.B, child bool) *groupmember.Member {
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
func (g *benchGroup) settle(b *testing.B, ctx context.Context) {
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
		leaver := g.add(b, kill)
		g.settle(b, ctx)
		rest := g.running()
		for i, m := range rest {
			if m == leaver {
				rest = append(rest[:i:i], rest[i+1:]...)
				break
			}
		}
		start := time.Now()
		b.StartTimer()
		if kill {
			leaver.Kill()
		} else if err := leaver.Stop(ctx); err != nil {
			b.Fatalf("member %s leaving: %v", leaver.Name, err)
		}
		if err := g.board.Wait(ctx, "the rest to own every partition", func() bool { return covered(rest) }); err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		total += time.Since(start)
	}
	b.ReportMetric(total.Seconds()*1000/float64(b.N), "ms/reassign")
	for _, m := range g.members {
		for _, f := range m.Failures() {
			b.Logf("member %s reported: %s", m.Name, f)
		}
	}
}

func (g *benchGroup) close(b *testing.B) {
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
	admCl, err := harness.NewClient([]string{srv.addr}, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer admCl.Close()
	adm := kadm.NewClient(admCl)
	topic := harness.TopicName("commit")
	group := topic + "-group"
	if err := harness.CreateTopic(ctx, adm, topic, commitPartitions, nil); err != nil {
		b.Fatal(err)
	}
	board := groupmember.NewBoard()
	cs := make([]*committer, clients)
	for i := range cs {
		c := &committer{}
		cl, err := harness.NewClient([]string{srv.addr}, nil,
			kgo.ConsumerGroup(group), kgo.ConsumeTopics(topic), kgo.DisableAutoCommit(),
			kgo.SessionTimeout(groupSession), kgo.HeartbeatInterval(groupHeartbeat),
			kgo.OnPartitionsAssigned(func(_ context.Context, _ *kgo.Client, m map[string][]int32) {
				c.mu.Lock()
				c.mu.owned = append(c.mu.owned, m[topic]...)
				c.mu.Unlock()
			}),
		)
		if err != nil {
			b.Fatal(err)
		}
		defer cl.Close()
		c.cl = cl
		cs[i] = c
		// A consumer joins its group when it first polls.
		go cl.PollFetches(ctx)
	}
	// Commits carry the generation, so wait until the group is Stable and
	// every member holds a partition.
	var state string
	err = board.Wait(ctx, "the commit group to settle", func() bool {
		for _, c := range cs {
			c.mu.Lock()
			n := len(c.mu.owned)
			c.mu.Unlock()
			if n == 0 {
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
		b.Fatalf("%v (state %s)", err, state)
	}

	var wg sync.WaitGroup
	errc := make(chan error, clients)
	start := time.Now()
	b.ResetTimer()
	b.StartTimer()
	for i, c := range cs {
		n := b.N / clients
		if i < b.N%clients {
			n++
		}
		c.mu.Lock()
		p := c.mu.owned[0]
		c.mu.Unlock()
		wg.Add(1)
		go func() {
			defer wg.Done()
			for o := range int64(n) {
				var cerr error
				c.cl.CommitOffsetsSync(ctx, map[string]map[int32]kgo.EpochOffset{topic: {p: {Epoch: -1, Offset: o + 1}}},
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
		}()
	}
	wg.Wait()
	b.StopTimer()
	el := time.Since(start)
	close(errc)
	for err := range errc {
		b.Fatal(err)
	}
	b.ReportMetric(float64(b.N)/el.Seconds(), "commits/s")
}
