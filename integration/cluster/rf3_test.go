package cluster

import (
	"context"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// The RF=3 fault tests share this: three voters, short quorum, session and
// lag timeouts, min.insync.replicas=2, and helpers that read partition
// state (leaders, ISR) through Metadata.

// stepTimeout bounds one wait of an RF=3 test (a failover, a catch-up).
const stepTimeout = 30 * time.Second

// rf3Settings are the node settings of every RF=3 fault test.
func rf3Settings() map[string]string {
	return map[string]string{
		"default.replication.factor":            "3",
		"offsets.topic.replication.factor":      "3",
		"min.insync.replicas":                   "2",
		"controller.quorum.election.timeout.ms": "300",
		"controller.quorum.fetch.timeout.ms":    "300",
		"broker.session.timeout.ms":             "1500",
		"broker.heartbeat.interval.ms":          "200",
		"replica.lag.time.max.ms":               "1500",
		"replica.fetch.wait.max.ms":             "100",
		"group.initial.rebalance.delay.ms":      "0",
	}
}

// startRF3 starts a three-node cluster with rf3Settings (and opts) and
// creates topic with RF=3 and min.insync.replicas=2, waiting for a full
// ISR.
func startRF3(t *testing.T, ctx context.Context, topic string, partitions int32, opts ...clusterOption) *Cluster {
	t.Helper()
	set := rf3Settings()
	if os.Getenv("RUNNEL_DEBUG") != "" { // the brokers log at debug level
		set["log-level"] = "debug"
	}
	c := startCluster(t, 3, set, opts...)
	if dir := os.Getenv("RUNNEL_KEEP_LOGS"); dir != "" { // copy the node logs there, passed or not
		t.Cleanup(func() {
			for _, nd := range c.Nodes {
				b, _ := os.ReadFile(nd.LogPath)
				os.WriteFile(filepath.Join(dir, fmt.Sprintf("%s-node-%d.log", t.Name(), nd.ID)), b, 0o644)
			}
		})
	}
	c.createTopic(ctx, topic, partitions, 3, map[string]*string{"min.insync.replicas": new("2")})
	c.waitFullISR(ctx, topic)
	return c
}

// partState is one partition as Metadata describes it.
type partState struct {
	Leader        int32
	ISR, Replicas []int32
}

func (p partState) String() string {
	return fmt.Sprintf("leader %d isr %v replicas %v", p.Leader, p.ISR, p.Replicas)
}

// partitionStates asks the running nodes for topic's partitions.
func (c *Cluster) partitionStates(ctx context.Context, topic string) (map[int32]partState, error) {
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(c.Seeds()...), kgo.ClientID("state")}, c.clientOpts()...)...)
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	mctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	md, err := kadm.NewClient(cl).Metadata(mctx, topic)
	if err != nil {
		return nil, err
	}
	td, ok := md.Topics[topic]
	if !ok || td.Err != nil {
		return nil, fmt.Errorf("topic %s: %v", topic, td.Err)
	}
	out := map[int32]partState{}
	for p, pd := range td.Partitions {
		s := partState{Leader: -1, ISR: slices.Clone(pd.ISR), Replicas: slices.Clone(pd.Replicas)}
		if pd.Err == nil {
			s.Leader = pd.Leader
		}
		slices.Sort(s.ISR)
		slices.Sort(s.Replicas)
		out[p] = s
	}
	return out, nil
}

// waitStates polls topic's partition states until cond holds for them,
// for up to stepTimeout, and returns them.
func (c *Cluster) waitStates(ctx context.Context, topic, what string, cond func(map[int32]partState) bool) map[int32]partState {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(ctx, stepTimeout)
	defer cancel()
	var last map[int32]partState
	var lastErr error
	err := waitUntil(ctx, what, func() bool {
		last, lastErr = c.partitionStates(ctx, topic)
		return lastErr == nil && len(last) > 0 && cond(last)
	})
	if err != nil {
		c.t.Fatalf("%v: last states %v, error %v", err, last, lastErr)
	}
	return last
}

// waitFullISR waits until every partition of topic has a running leader
// and every replica in its ISR, and returns the leaders.
func (c *Cluster) waitFullISR(ctx context.Context, topic string) map[int32]int32 {
	c.t.Helper()
	st := c.waitStates(ctx, topic, "a full ISR on "+topic, func(st map[int32]partState) bool {
		for _, p := range st {
			if p.Leader <= 0 || !c.Running(p.Leader) || !slices.Equal(p.ISR, p.Replicas) || len(p.Replicas) != len(c.Nodes) {
				return false
			}
		}
		return true
	})
	return leadersOf(st)
}

func leadersOf(st map[int32]partState) map[int32]int32 {
	out := map[int32]int32{}
	for p, s := range st {
		out[p] = s.Leader
	}
	return out
}

// ledBy returns the partitions id leads, sorted.
func ledBy(leaders map[int32]int32, id int32) []int32 {
	var ps []int32
	for p, l := range leaders {
		if l == id {
			ps = append(ps, p)
		}
	}
	slices.Sort(ps)
	return ps
}

// busiest returns the node leading the most partitions, not one of skip
// (ties: the lowest id).
func busiest(leaders map[int32]int32, skip []int32) int32 {
	best, most := int32(-1), -1
	for _, id := range slices.Sorted(maps.Values(leaders)) {
		if n := len(ledBy(leaders, id)); !slices.Contains(skip, id) && n > most {
			best, most = id, n
		}
	}
	return best
}

// within waits for cond while ps writes, for up to stepTimeout.
func within(t *testing.T, ctx context.Context, ps *producerSet, what string, cond func() bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(ctx, stepTimeout)
	defer cancel()
	waitLoaded(t, ctx, ps, what, cond)
}

// combine merges failovers of several events into one summary.
func combine(fs ...failover) failover {
	out := failover{Per: map[int32]time.Duration{}}
	var ds []time.Duration
	for _, f := range fs {
		for _, d := range f.Per {
			ds = append(ds, d)
		}
		out.Missing = append(out.Missing, f.Missing...)
	}
	if len(ds) == 0 {
		return out
	}
	slices.Sort(ds)
	out.Max = ds[len(ds)-1]
	out.Median = ds[len(ds)/2]
	if len(ds)%2 == 0 {
		out.Median = (ds[len(ds)/2-1] + ds[len(ds)/2]) / 2
	}
	for i, d := range ds { // Per only counts here
		out.Per[int32(i)] = d
	}
	return out
}

// finishRF3 stops the producers, waits for the consumers to read up to the
// high watermarks, reads the topic back and checks the whole history. It
// returns the final read.
func finishRF3(t *testing.T, ctx context.Context, c *Cluster, topic string, ps *producerSet, cs *consumerSet) []readRecord {
	t.Helper()
	ps.Stop()
	ends := c.endOffsets(ctx, topic)
	within(t, ctx, ps, "the consumers to read up to the high watermarks", func() bool { return cs.caughtUp(ends) })
	cs.Stop()
	rctx, cancel := context.WithTimeout(ctx, stepTimeout)
	defer cancel()
	final, finalBackwards, err := readBack(rctx, c.Seeds(), topic, c.clientOpts()...)
	if err != nil {
		t.Fatal(err)
	}
	requireCorrect(t, history{
		Acked:        ps.Acked(),
		Reads:        cs.Reads(),
		NonMonotonic: append(cs.NonMonotonic(), finalBackwards...),
		Final:        final,
	})
	sent, acked, failed, errs := ps.Counts()
	if sent != acked+failed || len(errs) > 0 {
		t.Errorf("%d records sent, but %d acknowledged and %d failed; client errors %v", sent, acked, failed, errs)
	}
	t.Logf("%d records sent, %d acknowledged, %d failed, %d in the final read (high watermarks %v); consumers read %d (%d fetch errors)",
		sent, acked, failed, len(final), ends, len(cs.Reads()), cs.FetchErrors())
	if failed > 0 {
		t.Logf("failures by error: %v", failuresByError(ps.Failed()))
	}
	return final
}

// failuresByError counts failed records by error text.
func failuresByError(fs []failedRecord) map[string]int {
	out := map[string]int{}
	for _, f := range fs {
		out[f.Err.Error()]++
	}
	return out
}

// rf3Workload starts the load every RF=3 test runs: 4 idempotent acks=all
// producers, one record each every 10 ms, and a consumer of every
// partition.
func rf3Workload(t *testing.T, ctx context.Context, c *Cluster, topic string, partitions int32) (*producerSet, *consumerSet) {
	t.Helper()
	ps := startProducers(ctx, c.Seeds(), topic, 4, produceLimits{Interval: 10 * time.Millisecond}, c.clientOpts()...)
	t.Cleanup(ps.Stop)
	cs, err := startConsumers(ctx, c.Seeds(), topic, consumeConfig{Partitions: partitions, Assigned: 1}, c.clientOpts()...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cs.Stop)
	return ps, cs
}

func allPartitions(n int32) []int32 {
	ps := make([]int32, n)
	for i := range n {
		ps[i] = i
	}
	return ps
}
