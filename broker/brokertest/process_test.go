package brokertest

import (
	"context"
	"fmt"
	"net"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

func TestMain(m *testing.M) { Main(m) }

// The harness on its own: three processes start on distinct ports, stop
// cleanly on SIGTERM, die on SIGKILL and come back on the same ports, also
// when a port is taken for a while.
func TestProcessesStopKillRestart(t *testing.T) {
	c := StartProcesses(t, ProcessOptions{Binary: BuildRunnel(t), Nodes: 3, Settings: QuickFailover()})
	var ports []string
	for _, nd := range c.Nodes {
		ports = append(ports, nd.Addr, nd.ControllerAddr, nd.HTTPAddr)
	}
	if slices.Sort(ports); len(slices.Compact(ports)) != 9 {
		t.Fatalf("ports not distinct: %v", ports)
	}
	if !strings.Contains(strings.Join(c.Args(2), " "), "--controller.quorum.voters=1@"+c.Node(1).ControllerAddr+",2@") {
		t.Fatalf("node 2's command line lacks the voters: %v", c.Args(2))
	}

	c.Stop(2)
	c.Kill(3)
	if got := c.Seeds(); !slices.Equal(got, []string{c.Node(1).Addr}) {
		t.Fatalf("seeds with nodes 2 and 3 down: %v", got)
	}
	if !slices.Equal(c.Addrs(), []string{c.Node(1).Addr, c.Node(2).Addr, c.Node(3).Addr}) {
		t.Fatalf("addrs: %v", c.Addrs())
	}
	c.Restart(2)

	// Someone else holds node 3's Kafka port: Restart retries until it is free.
	ln, err := net.Listen("tcp", c.Node(3).Addr)
	if err != nil {
		t.Fatal(err)
	}
	restarted := make(chan error, 1)
	go func() { restarted <- c.restart(c.Node(3)) }()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	err = poll(ctx, "node 3 to fail on its taken port", func() bool {
		return strings.Contains(lastLines(c.Node(3).LogPath, 50), "address already in use")
	})
	ln.Close()
	if err != nil {
		t.Fatal(err)
	}
	if err := <-restarted; err != nil {
		t.Fatal(err)
	}
	if !c.Running(3) || len(c.Seeds()) != 3 {
		t.Fatalf("after the restarts: node 3 running %v, seeds %v", c.Running(3), c.Seeds())
	}
}

// Records acknowledged by all in-sync replicas of an RF=3 topic survive
// a SIGKILL of the partition's leader: the cluster goes on taking writes
// without it, the node rejoins the ISR after its restart, and every
// record reads back in order.
func TestProcessesKillLeaderKeepsAcknowledged(t *testing.T) {
	const topic, perPhase = "kill", 300
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c := StartProcesses(t, ProcessOptions{Binary: BuildRunnel(t), Nodes: 3, Settings: QuickFailover()})

	cl, err := kgo.NewClient(kgo.SeedBrokers(c.Addrs()...), kgo.DefaultProduceTopic(topic),
		kgo.RequiredAcks(kgo.AllISRAcks()), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	if _, err := adm.CreateTopic(ctx, 1, 3, map[string]*string{"min.insync.replicas": new("2")}, topic); err != nil {
		t.Fatal(err)
	}
	leader := waitISR(ctx, t, adm, topic, 3)

	produce := func(from, to int) {
		t.Helper()
		for i := from; i < to; i++ {
			r := &kgo.Record{Value: fmt.Appendf(nil, "%06d", i)}
			if err := cl.ProduceSync(ctx, r).FirstErr(); err != nil {
				t.Fatalf("produce record %d: %v", i, err)
			}
		}
	}
	produce(0, perPhase)
	c.Kill(leader)
	produce(perPhase, 2*perPhase) // a new leader, and the ISR shrinks to two
	c.Restart(leader)
	waitISR(ctx, t, adm, topic, 3)
	produce(2*perPhase, 3*perPhase)

	rd, err := kgo.NewClient(kgo.SeedBrokers(c.Seeds()...),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {0: kgo.NewOffset().AtStart()}}))
	if err != nil {
		t.Fatal(err)
	}
	defer rd.Close()
	for next := 0; next < 3*perPhase; {
		fs := rd.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			t.Fatalf("read %d of %d records: %v", next, 3*perPhase, err)
		}
		fs.EachRecord(func(r *kgo.Record) {
			if want := fmt.Sprintf("%06d", next); string(r.Value) != want || r.Offset != int64(next) {
				t.Fatalf("offset %d holds %q, want %q at offset %d", r.Offset, r.Value, want, next)
			}
			next++
		})
	}
}

// waitISR waits until partition 0 of topic has isr in-sync replicas and
// returns its leader.
func waitISR(ctx context.Context, t *testing.T, adm *kadm.Client, topic string, isr int) int32 {
	t.Helper()
	var leader int32
	err := poll(ctx, fmt.Sprintf("%d in-sync replicas of %s", isr, topic), func() bool {
		m, err := adm.Metadata(ctx, topic)
		if err != nil {
			return false
		}
		p, ok := m.Topics[topic].Partitions[0]
		leader = p.Leader
		return ok && p.Err == nil && p.Leader > 0 && len(p.ISR) == isr
	})
	if err != nil {
		t.Fatal(err)
	}
	return leader
}

// poll checks cond every 20 ms until it holds or ctx ends.
func poll(ctx context.Context, what string, cond func() bool) error {
	for !cond() {
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for %s: %w", what, ctx.Err())
		case <-time.After(20 * time.Millisecond):
		}
	}
	return nil
}
