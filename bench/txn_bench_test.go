package bench_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/runnel-io/runnel/bench/internal/harness"
)

// Transaction benchmarks (issue 5): produce throughput of a transactional
// producer that commits every 100 ms or every 10,000 records, against the
// same producer idempotent, on the same broker, back to back.
const (
	txnPartitions = 8
	txnValueSize  = 1024
)

// txnModes are the producers of BenchmarkTxnProduce, in the order each
// target runs them: the idempotent baseline (BenchmarkProduce's 1KB/8p
// corner), then the two transactional ones. A zero commit rule is the
// baseline.
var txnModes = []struct {
	name  string
	every harness.Commit
}{
	{"idempotent", harness.Commit{}},
	{"commit-100ms", harness.Commit{Interval: 100 * time.Millisecond}},
	{"commit-10k", harness.Commit{Records: 10000}},
}

// txnSend is the producer of a transactional mode: harness.ProduceTxn
// with every as its commit rule.
func txnSend(every harness.Commit) sendFunc {
	return func(ctx context.Context, cl *kgo.Client, topic string, n int64, payload []byte, health func() error) (harness.TxnResult, error) {
		return harness.ProduceTxn(ctx, cl, topic, n, payload, every, health)
	}
}

// BenchmarkTxnProduce measures, on every target, one franz-go client
// producing b.N records of 1 KB into a fresh 8-partition topic (the
// settings of BenchmarkProduce: acks=all, idempotent, linger 10 ms):
// without transactions, then with a transactional id, committing once
// 100 ms have passed since its transaction began, and committing every
// 10,000 records. A transaction produces asynchronously, flushes, then
// commits (EndTxn), so no record is in flight while it commits. The timer
// covers every transaction, commits included; commits/s and
// records/commit say how many there were. The end offsets must then hold
// every record and one commit marker per partition per transaction, and
// no transaction may be left open.
func BenchmarkTxnProduce(b *testing.B) {
	for _, tg := range targets {
		b.Run(tg.name, func(b *testing.B) {
			srv := tg.start(b)
			for _, mode := range txnModes {
				b.Run(fmt.Sprintf("%s/1KB/%dp", mode.name, txnPartitions), func(b *testing.B) {
					benchTxnProduce(b, srv, mode.every)
				})
			}
		})
	}
}

func benchTxnProduce(b *testing.B, srv server, every harness.Commit) {
	spec := topicSpec{partitions: txnPartitions, rf: 1}
	if every == (harness.Commit{}) {
		benchProduceTo(b, srv, []string{srv.addr}, spec, txnValueSize)
		return
	}
	benchProduceWith(b, srv, []string{srv.addr}, spec, txnValueSize, txnSend(every),
		kgo.TransactionalID(harness.TopicName("bench-txn")))
}

// TestTxnProduce runs the transactional driver once, small, against every
// target, so a broken driver or target shows up in `go test` and not only
// in `make bench`: 3,000 records in transactions of 1,000 records, then
// in transactions of 1 ms, each into a new topic whose end offsets must
// hold every record and commit marker. The broker processes are skipped
// with -short.
func TestTxnProduce(t *testing.T) {
	for _, tg := range targets {
		t.Run(tg.name, func(t *testing.T) {
			skipProcessInShort(t, tg.name)
			srv := tg.start(t)
			for _, every := range []harness.Commit{{Records: 1000}, {Interval: time.Millisecond}} {
				testTxnProduce(t, srv, every)
			}
		})
	}
}

func testTxnProduce(t *testing.T, srv server, every harness.Commit) {
	t.Helper()
	ctx := t.Context()
	log := &harness.ClientLog{}
	cl, err := harness.NewClient([]string{srv.addr}, log,
		append(harness.ProducerOpts(100), kgo.TransactionalID(harness.TopicName("test-txn")))...)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	topic := harness.TopicName("txn")
	if err := harness.CreateTopic(ctx, adm, topic, 3, nil); err != nil {
		t.Fatal(err)
	}
	const n = 3000
	res, err := harness.ProduceTxn(ctx, cl, topic, n, harness.Payload(100), every, srv.health)
	if err != nil {
		t.Fatalf("%+v: %v", every, err)
	}
	if every.Records > 0 && res.Commits != n/every.Records || res.Commits < 1 || res.Markers < res.Commits || res.Markers > 3*res.Commits {
		t.Fatalf("%+v: %d commits with %d markers", every, res.Commits, res.Markers)
	}
	if _, err := harness.AwaitDataset(ctx, adm, topic, 100, n+res.Markers); err != nil {
		t.Fatalf("%+v: %v", every, err)
	}
	t.Logf("%+v: %d commits, %d markers", every, res.Commits, res.Markers)
	if err := harness.DeleteTopic(ctx, adm, topic); err != nil {
		t.Fatal(err)
	}
	if n := log.Count(); n > 0 {
		t.Errorf("%+v: %d client warnings, first: %q", every, n, log.First())
	}
}
