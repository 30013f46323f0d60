package txn

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/runnel-io/runnel/broker/brokertest"
)

// nodes is the size of the cluster; any one of them may be down.
const nodes = 3

// settings of every node: brokertest's quick failover, replication
// factor 3 and min.insync.replicas 2 for every topic, __consumer_offsets
// and __transaction_state included (few partitions each, so a restarted
// node catches up fast), and a transaction left open aborted within a
// second of its timeout.
func settings() map[string]string {
	s := brokertest.QuickFailover()
	maps.Copy(s, map[string]string{
		"default.replication.factor":                                  "3",
		"min.insync.replicas":                                         "2",
		"offsets.topic.replication.factor":                            "3",
		"offsets.topic.num.partitions":                                "5",
		"transaction.state.log.replication.factor":                    "3",
		"transaction.state.log.min.isr":                               "2",
		"transaction.state.log.num.partitions":                        "5",
		"transaction.abort.timed.out.transaction.cleanup.interval.ms": "1000",
		"group.initial.rebalance.delay.ms":                            "0",
	})
	return s
}

// cluster is three `runnel broker` processes and an admin client that
// knows every node's address, running or not.
type cluster struct {
	*brokertest.Processes
	t   *testing.T
	adm *kadm.Client
}

func startCluster(t *testing.T) *cluster {
	t.Helper()
	ps := brokertest.StartProcesses(t, brokertest.ProcessOptions{
		Binary: brokertest.BuildRunnel(t), Nodes: nodes, Settings: settings(),
	})
	cl, err := kgo.NewClient(kgo.SeedBrokers(ps.Addrs()...), kgo.ClientID("eos-admin"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return &cluster{Processes: ps, t: t, adm: kadm.NewClient(cl)}
}

// createTopic creates topic with RF 3 and min.insync.replicas 2, and
// waits until the cluster is healthy.
func (c *cluster) createTopic(ctx context.Context, topic string, partitions int32) {
	c.t.Helper()
	resp, err := c.adm.CreateTopic(ctx, partitions, nodes, map[string]*string{"min.insync.replicas": new("2")}, topic)
	if err == nil {
		err = resp.Err
	}
	if err != nil {
		c.t.Fatalf("create topic %s: %v", topic, err)
	}
	c.waitHealthy(ctx, "topic "+topic+" with a full ISR")
}

// healthTimeout bounds waitHealthy; requestTimeout one request of the
// admin client, which may first try a node that is down.
const (
	healthTimeout  = time.Minute
	requestTimeout = 5 * time.Second
)

// waitHealthy waits until every partition of every topic, the internal
// ones included, has a running leader and all its replicas in sync; it
// fails the test with the last state seen after healthTimeout.
func (c *cluster) waitHealthy(ctx context.Context, what string) {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(ctx, healthTimeout)
	defer cancel()
	if err := waitFor(ctx, what, c.unhealthy); err != nil {
		c.t.Fatal(err)
	}
}

// unhealthy describes the partitions that lack a running leader or a
// replica in sync, as Metadata answers now; "" when there are none.
func (c *cluster) unhealthy(ctx context.Context) string {
	ctx, cancel := context.WithTimeout(ctx, requestTimeout)
	defer cancel()
	md, err := c.adm.Metadata(ctx)
	if err != nil {
		return fmt.Sprintf("metadata: %v", err)
	}
	var bad []string
	for _, topic := range slices.Sorted(maps.Keys(md.Topics)) {
		td := md.Topics[topic]
		if td.Err != nil {
			bad = append(bad, fmt.Sprintf("%s: %v", topic, td.Err))
			continue
		}
		for _, p := range slices.Sorted(maps.Keys(td.Partitions)) {
			pd := td.Partitions[p]
			isr, replicas := slices.Sorted(slices.Values(pd.ISR)), slices.Sorted(slices.Values(pd.Replicas))
			if pd.Err != nil || pd.Leader <= 0 || !c.Running(pd.Leader) || len(replicas) != nodes || !slices.Equal(isr, replicas) {
				bad = append(bad, fmt.Sprintf("%s/%d leader %d isr %v replicas %v err %v", topic, p, pd.Leader, isr, replicas, pd.Err))
			}
		}
	}
	return strings.Join(bad, "; ")
}

// offsets maps partitions to offsets.
type offsets map[int32]int64

// sum is the sum of the offsets.
func (o offsets) sum() int64 {
	var n int64
	for _, v := range o {
		n += v
	}
	return n
}

// endOffsets returns topic's high watermarks, or with readCommitted its
// last stable offsets.
func (c *cluster) endOffsets(ctx context.Context, topic string, readCommitted bool) (offsets, error) {
	ctx, cancel := context.WithTimeout(ctx, requestTimeout)
	defer cancel()
	list := c.adm.ListEndOffsets
	if readCommitted {
		list = c.adm.ListCommittedOffsets
	}
	listed, err := list(ctx, topic)
	if err == nil {
		err = listed.Error()
	}
	if err != nil {
		return nil, fmt.Errorf("end offsets of %s: %w", topic, err)
	}
	out := offsets{}
	listed.Each(func(o kadm.ListedOffset) { out[o.Partition] = o.Offset })
	return out, nil
}

// awaitStable waits, up to healthTimeout, until every transaction on
// topic has ended (its last stable offsets are its high watermarks), and
// returns its high watermarks.
func (c *cluster) awaitStable(ctx context.Context, topic string) offsets {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(ctx, healthTimeout)
	defer cancel()
	var hwm offsets
	err := waitFor(ctx, "every transaction on "+topic+" to end", func(ctx context.Context) string {
		lso, err := c.endOffsets(ctx, topic, true)
		if err != nil {
			return err.Error()
		}
		if hwm, err = c.endOffsets(ctx, topic, false); err != nil {
			return err.Error()
		}
		if !maps.Equal(lso, hwm) {
			return fmt.Sprintf("last stable offsets %v, high watermarks %v", lso, hwm)
		}
		return ""
	})
	if err != nil {
		c.t.Fatal(err)
	}
	return hwm
}

// committed returns group's committed offsets of topic's partitions (a
// partition without a commit is left out).
func (c *cluster) committed(ctx context.Context, group, topic string) (offsets, error) {
	ctx, cancel := context.WithTimeout(ctx, requestTimeout)
	defer cancel()
	resp, err := c.adm.FetchOffsets(ctx, group)
	if err == nil {
		err = resp.Error()
	}
	if err != nil {
		return nil, fmt.Errorf("committed offsets of group %s: %w", group, err)
	}
	out := offsets{}
	for p, o := range resp[topic] {
		out[p] = o.At
	}
	return out, nil
}

// pollStep is how often waitFor checks its condition.
const pollStep = 100 * time.Millisecond

// waitFor polls problem every pollStep until it returns "" or ctx ends;
// the error then names what was waited for and the last problem seen.
func waitFor(ctx context.Context, what string, problem func(context.Context) string) error {
	for {
		p := problem(ctx)
		if p == "" {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for %s: %w; last seen: %s", what, ctx.Err(), p)
		case <-time.After(pollStep):
		}
	}
}
