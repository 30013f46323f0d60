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

// TestClusterTxnVerifyDuringAdd: a transactional producer writes many
// short transactions to partitions led by all three nodes. franz-go adds
// each broker's partitions to the transaction from that broker's sink, so
// one sink's AddPartitionsToTxn is often being written by the coordinator
// while another broker verifies (KIP-890 part 1) the first batch of a
// partition added earlier. The verification must not see the other
// partition's pending add as CONCURRENT_TRANSACTIONS (Kafka checks only
// the durable state there): a produce was answered NOT_ENOUGH_REPLICAS
// with the ISR full, and the client retried it after a metadata refresh
// (every few seconds in a Streams app committing every 100 ms). A 1 ms
// CONCURRENT_TRANSACTIONS backoff keeps the sinks' adds close together,
// so the race showed in nearly every run (dozens of refusals).
func TestClusterTxnVerifyDuringAdd(t *testing.T) {
	c := brokertest.StartCluster(t, 3, txnClusterSettings)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	adm := kadm.NewClient(clusterClient(t, c))
	const topic, parts, txns = "txn-verify", 12, 60
	if _, err := adm.CreateTopic(ctx, parts, 3, map[string]*string{"min.insync.replicas": kmsg.StringPtr("2")}, topic); err != nil {
		t.Fatal(err)
	}
	leaders := fullISR(t, ctx, adm, topic)
	byNode := map[int32]int{}
	for _, l := range leaders {
		byNode[l]++
	}
	if len(byNode) != 3 {
		t.Fatalf("leaders %v: want partitions led by all three nodes", leaders)
	}
	prod := clusterClient(t, c, kgo.TransactionalID("verify-during-add"), kgo.TransactionTimeout(30*time.Second),
		kgo.DefaultProduceTopic(topic), kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.ConcurrentTransactionsBackoff(time.Millisecond))
	// The first transaction creates __transaction_state; count from the
	// second, once every internal partition has its full ISR.
	refused := func() float64 {
		return clusterMetric(t, c, "runnel_broker_errors_total", `api="Produce"`, `error="NOT_ENOUGH_REPLICAS"`)
	}
	var want []string
	txn := func(i int) {
		t.Helper()
		if err := prod.BeginTransaction(); err != nil {
			t.Fatal(err)
		}
		for p := range int32(parts) {
			v := fmt.Sprintf("%d-%d", i, p)
			want = append(want, v)
			prod.Produce(ctx, &kgo.Record{Partition: p, Value: []byte(v)}, func(r *kgo.Record, err error) {
				if err != nil {
					t.Errorf("produce %s: %v", r.Value, err)
				}
			})
		}
		if err := prod.Flush(ctx); err != nil {
			t.Fatal(err)
		}
		if err := prod.EndTransaction(ctx, kgo.TryCommit); err != nil {
			t.Fatalf("commit %d: %v", i, err)
		}
	}
	txn(0)
	fullISR(t, ctx, adm, "__transaction_state")
	before := refused()
	for i := 1; i < txns; i++ {
		txn(i)
	}
	if n := refused() - before; n != 0 {
		t.Errorf("%v produces answered NOT_ENOUGH_REPLICAS in %d transactions, with every ISR full", n, txns-1)
	}
	got := readCommitted(t, ctx, c, topic, len(want))
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Fatalf("read_committed: %d records, want %d; %s", len(got), len(want), firstDiff(got, want))
	}
}
