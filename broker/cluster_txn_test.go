package broker_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/runnel-io/runnel/broker/brokertest"
)

// txnClusterSettings replicate the internal topics on all three nodes.
var txnClusterSettings = map[string]string{
	"offsets.topic.replication.factor":         "3",
	"offsets.topic.num.partitions":             "3",
	"transaction.state.log.replication.factor": "3",
	"transaction.state.log.num.partitions":     "3",
	"transaction.state.log.min.isr":            "2",
}

// txnCoordinatorOf returns the node that coordinates transactional id.
func txnCoordinatorOf(t testing.TB, ctx context.Context, cl *kgo.Client, id string) int32 {
	t.Helper()
	var node int32 = -1
	waitState(t, ctx, "the transaction coordinator of "+id, func() (bool, string) {
		req := kmsg.NewPtrFindCoordinatorRequest()
		req.CoordinatorType, req.CoordinatorKey = 1, id
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			return false, err.Error()
		}
		if resp.ErrorCode != 0 {
			return false, errName(resp.ErrorCode)
		}
		node = resp.NodeID
		return true, ""
	})
	return node
}

// readCommitted reads n records of topic from the start with read_committed.
func readCommitted(t testing.TB, ctx context.Context, c *brokertest.Cluster, topic string, n int) []string {
	t.Helper()
	cl := clusterClient(t, c, kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()))
	var out []string
	for len(out) < n {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("read_committed: %d of %d records of %s: %q", len(out), n, topic, out)
		}
		fs.EachRecord(func(r *kgo.Record) { out = append(out, string(r.Value)) })
	}
	return out
}

// TestClusterTxnCoordinatorMoves: a transaction open on three nodes whose
// coordinator stops (its __transaction_state partition's leadership moves
// to another node, which loads the transaction) commits through the new
// coordinator, which writes the markers to every partition's leader; the
// node comes back and the next transaction, aborted, stays invisible.
func TestClusterTxnCoordinatorMoves(t *testing.T) {
	c := brokertest.StartCluster(t, 3, txnClusterSettings)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	adm := kadm.NewClient(clusterClient(t, c))
	const topic = "txn-moves"
	if _, err := adm.CreateTopic(ctx, 3, 3, map[string]*string{"min.insync.replicas": kmsg.StringPtr("2")}, topic); err != nil {
		t.Fatal(err)
	}
	fullISR(t, ctx, adm, topic)
	prod := clusterClient(t, c, kgo.TransactionalID("mover"), kgo.TransactionTimeout(30*time.Second), kgo.DefaultProduceTopic(topic))
	txn := func(commit bool, prefix string) {
		t.Helper()
		if err := prod.BeginTransaction(); err != nil {
			t.Fatal(err)
		}
		for p := range int32(3) {
			if err := prod.ProduceSync(ctx, &kgo.Record{Partition: p, Value: fmt.Appendf(nil, "%s-%d", prefix, p)}).FirstErr(); err != nil {
				t.Fatalf("produce %s to %d: %v", prefix, p, err)
			}
		}
		if err := prod.EndTransaction(ctx, kgo.TransactionEndTry(commit)); err != nil {
			t.Fatalf("end %s (commit=%v): %v", prefix, commit, err)
		}
	}
	txn(true, "first")

	// The second transaction is open when its coordinator stops.
	if err := prod.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	for p := range int32(3) {
		if err := prod.ProduceSync(ctx, &kgo.Record{Partition: p, Value: fmt.Appendf(nil, "second-%d", p)}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	fullISR(t, ctx, adm, "__transaction_state")
	coord := txnCoordinatorOf(t, ctx, clusterClient(t, c), "mover")
	c.Node(coord).Stop(t)
	if err := prod.EndTransaction(ctx, kgo.TryCommit); err != nil {
		t.Fatalf("commit after coordinator %d stopped: %v", coord, err)
	}
	if moved := txnCoordinatorOf(t, ctx, clusterClient(t, c), "mover"); moved == coord {
		t.Fatalf("the coordinator is still node %d after it stopped", coord)
	}
	want := []string{"first-0", "first-1", "first-2", "second-0", "second-1", "second-2"}
	got := readCommitted(t, ctx, c, topic, len(want))
	slices.Sort(got)
	if !slices.Equal(got, want) {
		t.Fatalf("read_committed after the move: %q, want %q", got, want)
	}

	// The node comes back; an aborted transaction stays invisible and a
	// later commit is seen.
	c.Restart(coord)
	fullISR(t, ctx, adm, topic)
	txn(false, "aborted")
	txn(true, "third")
	want = append(want, "third-0", "third-1", "third-2")
	got = readCommitted(t, ctx, c, topic, len(want))
	slices.Sort(got)
	if !slices.Equal(got, want) {
		t.Fatalf("read_committed after the restart: %q, want %q", got, want)
	}
}
