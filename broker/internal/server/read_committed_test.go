package server

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/runnel-io/runnel/broker/internal/batch"
	"github.com/runnel-io/runnel/broker/internal/configs"
	"github.com/runnel-io/runnel/broker/internal/partition"
)

// startTestServer starts a one-node server on loopback with a temp data
// directory, closed when the test ends.
func startTestServer(t *testing.T) *Server {
	t.Helper()
	settings := map[string]string{"log.dirs": t.TempDir(), "listeners": "PLAINTEXT://127.0.0.1:0"}
	cfg, err := configs.ParseBroker(settings)
	if err != nil {
		t.Fatal(err)
	}
	s, err := New(Options{Config: cfg, Static: settings})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- s.Serve(context.Background()) }()
	t.Cleanup(func() {
		s.Close()
		<-done
	})
	return s
}

// txnClient is a franz-go client of s and a topic of one partition.
func txnClient(t *testing.T, s *Server, topic string, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(s.Addr().String())}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	if topic != "" {
		if _, err := kadm.NewClient(cl).CreateTopic(testContext(t), 1, 1, nil, topic); err != nil {
			t.Fatal(err)
		}
	}
	return cl
}

func testContext(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// recordBatch builds a batch of values from producer pid (-1: none),
// transactional if txn.
func recordBatch(pid int64, epoch int16, seq int32, txn bool, values ...string) []byte {
	var recs []byte
	for i, v := range values {
		recs = batch.AppendRecord(recs, &batch.Record{OffsetDelta: int32(i), Key: []byte("k"), Value: []byte(v)})
	}
	h := batch.Header{
		PartitionLeaderEpoch: -1, LastOffsetDelta: int32(len(values) - 1), FirstTimestamp: 1000, MaxTimestamp: 1000,
		ProducerID: pid, ProducerEpoch: epoch, BaseSequence: seq, NumRecords: int32(len(values)),
	}
	if pid < 0 {
		h.ProducerEpoch, h.BaseSequence = -1, -1
	}
	if txn {
		h.Attributes |= batch.AttrTransactional
	}
	return batch.AppendBatch(nil, &h, recs)
}

// produceRaw sends one batch and returns the partition's answer.
func produceRaw(t *testing.T, cl *kgo.Client, topic string, txnID *string, b []byte) kmsg.ProduceResponseTopicPartition {
	t.Helper()
	req := kmsg.NewPtrProduceRequest()
	req.Version, req.Acks, req.TimeoutMillis, req.TransactionID = 9, -1, 10_000, txnID
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Records = b
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(testContext(t), cl)
	if err != nil {
		t.Fatal(err)
	}
	return resp.Topics[0].Partitions[0]
}

// initProducer starts transactional id's producer and adds topic-0 to its
// transaction, so that the coordinator verifies its batches there. The
// transaction stays open at the coordinator: the tests write the markers
// to the partition themselves (writeMarker).
func initProducer(t *testing.T, cl *kgo.Client, id, topic string) (int64, int16) {
	t.Helper()
	req := kmsg.NewPtrInitProducerIDRequest()
	req.TransactionalID, req.TransactionTimeoutMillis = kmsg.StringPtr(id), 60_000
	resp, err := req.RequestWith(testContext(t), cl)
	if err != nil || resp.ErrorCode != 0 {
		t.Fatalf("InitProducerID: %v %v", err, kerr.ErrorForCode(resp.ErrorCode))
	}
	add := kmsg.NewPtrAddPartitionsToTxnRequest()
	add.TransactionalID, add.ProducerID, add.ProducerEpoch = id, resp.ProducerID, resp.ProducerEpoch
	add.Topics = []kmsg.AddPartitionsToTxnRequestTopic{{Topic: topic, Partitions: []int32{0}}}
	aresp, err := add.RequestWith(testContext(t), cl)
	if err != nil || aresp.Topics[0].Partitions[0].ErrorCode != 0 {
		t.Fatalf("AddPartitionsToTxn: %v %+v", err, aresp)
	}
	return resp.ProducerID, resp.ProducerEpoch
}

// fetchRaw fetches topic-0 from offset at the isolation level, waiting up
// to maxWait for a byte.
func fetchRaw(t *testing.T, s *Server, cl *kgo.Client, topic string, offset int64, isolation int8, maxWait time.Duration) kmsg.FetchResponseTopicPartition {
	t.Helper()
	sp, err := fetchOnce(testContext(t), s, cl, topic, offset, isolation, maxWait)
	if err != nil {
		t.Fatal(err)
	}
	return sp
}

// fetchOnce is fetchRaw for any goroutine.
func fetchOnce(ctx context.Context, s *Server, cl *kgo.Client, topic string, offset int64, isolation int8, maxWait time.Duration) (kmsg.FetchResponseTopicPartition, error) {
	req := kmsg.NewPtrFetchRequest()
	req.Version, req.ReplicaID, req.IsolationLevel = 12, -1, isolation
	req.MaxWaitMillis, req.MinBytes, req.MaxBytes = int32(maxWait.Milliseconds()), 1, 1<<20
	rt := kmsg.NewFetchRequestTopic()
	rt.Topic, rt.TopicID = topic, s.meta.Image().Topic(topic).ID // the client may send v13+
	rp := kmsg.NewFetchRequestTopicPartition()
	rp.FetchOffset, rp.LogStartOffset, rp.PartitionMaxBytes, rp.CurrentLeaderEpoch = offset, -1, 1<<20, -1
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return kmsg.FetchResponseTopicPartition{}, err
	}
	sp := resp.Topics[0].Partitions[0]
	return sp, kerr.ErrorForCode(sp.ErrorCode)
}

// batchBases lists the base offsets of the batches in b.
func batchBases(t *testing.T, b []byte) []int64 {
	t.Helper()
	var out []int64
	for len(b) > 0 {
		h, err := batch.ParseHeader(b)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, h.BaseOffset)
		b = b[h.Size():]
	}
	return out
}

func writeMarker(t *testing.T, p *partition.Partition, m partition.Marker) int64 {
	t.Helper()
	off, err := p.AppendMarker(m)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Commit(); err != nil {
		t.Fatal(err)
	}
	if err := p.WaitReplicated(testContext(t), off+1); err != nil {
		t.Fatal(err)
	}
	return off
}

func listOffset(t *testing.T, cl *kgo.Client, topic string, ts int64, isolation int8) int64 {
	t.Helper()
	req := kmsg.NewPtrListOffsetsRequest()
	req.Version, req.ReplicaID, req.IsolationLevel = 7, -1, isolation
	rt := kmsg.NewListOffsetsRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewListOffsetsRequestTopicPartition()
	rp.Timestamp, rp.CurrentLeaderEpoch = ts, -1
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(testContext(t), cl)
	if err != nil || resp.Topics[0].Partitions[0].ErrorCode != 0 {
		t.Fatalf("ListOffsets: %v %+v", err, resp)
	}
	return resp.Topics[0].Partitions[0].Offset
}

// Over TCP: transactional produce, read_committed fetches stopping at the
// LSO with the aborted transactions, a long poll woken by a marker,
// ListOffsets by isolation level, and DescribeProducers.
func TestReadCommittedOverTCP(t *testing.T) {
	s := startTestServer(t)
	cl := txnClient(t, s, "tx")
	p := s.partition("tx", 0)
	txnID := "t1"
	pidA, epA := initProducer(t, cl, txnID, "tx")
	pidB, epB := initProducer(t, cl, "t1b", "tx")
	ids := map[int64]string{pidA: txnID, pidB: "t1b"}
	if sp := produceRaw(t, cl, "tx", nil, recordBatch(pidA, epA, 0, true, "a0")); sp.ErrorCode != kerr.TransactionalIDAuthorizationFailed.Code {
		t.Fatalf("transactional batch without a transactional id: %v", kerr.ErrorForCode(sp.ErrorCode))
	}
	if sp := produceRaw(t, cl, "tx", &txnID, recordBatch(-1, 0, 0, true, "x")); sp.ErrorCode != kerr.InvalidRecord.Code {
		t.Fatalf("transactional batch without a producer id: %v", kerr.ErrorForCode(sp.ErrorCode))
	}
	produce := func(b []byte) int64 {
		t.Helper()
		id := txnID
		if h, err := batch.ParseHeader(b); err == nil && ids[h.ProducerID] != "" {
			id = ids[h.ProducerID]
		}
		sp := produceRaw(t, cl, "tx", &id, b)
		if sp.ErrorCode != 0 {
			t.Fatalf("produce: %v %s", kerr.ErrorForCode(sp.ErrorCode), deref(sp.ErrorMessage))
		}
		return sp.BaseOffset
	}
	produce(recordBatch(-1, 0, 0, false, "plain0"))      // 0
	produce(recordBatch(pidA, epA, 0, true, "a0", "a1")) // 1-2: A opens
	produce(recordBatch(pidB, epB, 0, true, "b0"))       // 3: B opens
	produce(recordBatch(-1, 0, 0, false, "plain1"))      // 4
	if sp := produceRaw(t, cl, "tx", &txnID, recordBatch(pidA, epA, 2, false, "x")); sp.ErrorCode != kerr.InvalidTxnState.Code {
		t.Fatalf("plain batch inside a transaction: %v", kerr.ErrorForCode(sp.ErrorCode))
	}

	sp := fetchRaw(t, s, cl, "tx", 0, 1, 0)
	if sp.LastStableOffset != 1 || sp.HighWatermark != 5 || !slices.Equal(batchBases(t, sp.RecordBatches), []int64{0}) ||
		sp.AbortedTransactions == nil || len(sp.AbortedTransactions) != 0 {
		t.Fatalf("read_committed with open transactions: lso %d hw %d batches %v aborted %v",
			sp.LastStableOffset, sp.HighWatermark, batchBases(t, sp.RecordBatches), sp.AbortedTransactions)
	}
	sp = fetchRaw(t, s, cl, "tx", 0, 0, 0)
	if sp.LastStableOffset != 1 || len(batchBases(t, sp.RecordBatches)) != 4 || sp.AbortedTransactions != nil {
		t.Fatalf("read_uncommitted: lso %d batches %v aborted %v", sp.LastStableOffset, batchBases(t, sp.RecordBatches), sp.AbortedTransactions)
	}
	if got := listOffset(t, cl, "tx", -1, 1); got != 1 {
		t.Fatalf("ListOffsets latest read_committed = %d, want 1", got)
	}
	if got := listOffset(t, cl, "tx", -1, 0); got != 5 {
		t.Fatalf("ListOffsets latest read_uncommitted = %d, want 5", got)
	}
	if got := listOffset(t, cl, "tx", 1000, 1); got != 0 {
		t.Fatalf("ListOffsets by time read_committed = %d, want 0", got)
	}

	// A long poll at the LSO returns once A's commit marker moves it (to
	// B's first offset).
	polled := make(chan kmsg.FetchResponseTopicPartition, 1)
	pollErr := make(chan error, 1)
	go func() {
		sp, err := fetchOnce(testContext(t), s, cl, "tx", 1, 1, 30*time.Second)
		polled <- sp
		pollErr <- err
	}()
	writeMarker(t, p, partition.Marker{ProducerID: pidA, ProducerEpoch: epA, CoordinatorEpoch: 0, Commit: true}) // 5
	sp = <-polled
	if err := <-pollErr; err != nil {
		t.Fatal(err)
	}
	if sp.LastStableOffset != 3 || !slices.Equal(batchBases(t, sp.RecordBatches), []int64{1}) {
		t.Fatalf("long poll: lso %d batches %v", sp.LastStableOffset, batchBases(t, sp.RecordBatches))
	}

	writeMarker(t, p, partition.Marker{ProducerID: pidB, ProducerEpoch: epB, CoordinatorEpoch: 0}) // 6: abort
	produce(recordBatch(-1, 0, 0, false, "plain2"))                                                // 7
	sp = fetchRaw(t, s, cl, "tx", 0, 1, 0)
	if sp.LastStableOffset != 8 || len(sp.AbortedTransactions) != 1 ||
		sp.AbortedTransactions[0].ProducerID != pidB || sp.AbortedTransactions[0].FirstOffset != 3 {
		t.Fatalf("after the abort: lso %d aborted %+v", sp.LastStableOffset, sp.AbortedTransactions)
	}

	req := kmsg.NewPtrDescribeProducersRequest()
	rt := kmsg.NewDescribeProducersRequestTopic()
	rt.Topic, rt.Partitions = "tx", []int32{0, 1}
	req.Topics = append(req.Topics, rt)
	// To the broker itself: the client would split the request by leader
	// and fail the unknown partition on its own.
	raw, err := cl.Broker(int(s.cfg.NodeID)).Request(testContext(t), req)
	if err != nil {
		t.Fatal(err)
	}
	dresp := raw.(*kmsg.DescribeProducersResponse)
	parts := dresp.Topics[0].Partitions
	if len(parts) != 2 || parts[0].ErrorCode != 0 || parts[1].ErrorCode != kerr.UnknownTopicOrPartition.Code || len(parts[0].ActiveProducers) != 2 {
		t.Fatalf("DescribeProducers: %+v", dresp.Topics)
	}
	for _, ap := range parts[0].ActiveProducers {
		if ap.CurrentTxnStartOffset != -1 || ap.CoordinatorEpoch != 0 || ap.LastTimestamp <= 0 ||
			(ap.ProducerID == pidA && ap.LastSequence != 1) || (ap.ProducerID == pidB && ap.LastSequence != 0) {
			t.Fatalf("active producer %+v", ap)
		}
	}
}

// franz-go's consumer at read_committed drops aborted records given the
// aborted transactions list, and sees the committed ones.
func TestFranzGoReadCommittedSkipsAborted(t *testing.T) {
	s := startTestServer(t)
	cl := txnClient(t, s, "txk")
	p := s.partition("txk", 0)
	txnID := "t2"
	pid, ep := initProducer(t, cl, txnID, "txk")
	produce := func(b []byte) {
		t.Helper()
		if sp := produceRaw(t, cl, "txk", &txnID, b); sp.ErrorCode != 0 {
			t.Fatalf("produce: %v", kerr.ErrorForCode(sp.ErrorCode))
		}
	}
	produce(recordBatch(-1, 0, 0, false, "before"))
	produce(recordBatch(pid, ep, 0, true, "aborted0", "aborted1"))
	writeMarker(t, p, partition.Marker{ProducerID: pid, ProducerEpoch: ep})
	produce(recordBatch(pid, ep, 2, true, "committed"))
	writeMarker(t, p, partition.Marker{ProducerID: pid, ProducerEpoch: ep, Commit: true})
	produce(recordBatch(-1, 0, 0, false, "after"))

	for _, c := range []struct {
		level kgo.IsolationLevel
		want  []string
	}{
		{kgo.ReadCommitted(), []string{"before", "committed", "after"}},
		{kgo.ReadUncommitted(), []string{"before", "aborted0", "aborted1", "committed", "after"}},
	} {
		consumer := txnClient(t, s, "", kgo.ConsumeTopics("txk"), kgo.FetchIsolationLevel(c.level),
			kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
		var got []string
		ctx := testContext(t)
		for len(got) < len(c.want) {
			fs := consumer.PollFetches(ctx)
			if err := ctx.Err(); err != nil {
				t.Fatalf("consumed %v: %v", got, err)
			}
			fs.EachError(func(_ string, _ int32, err error) { t.Fatal(err) })
			fs.EachRecord(func(r *kgo.Record) { got = append(got, string(r.Value)) })
		}
		if fmt.Sprint(got) != fmt.Sprint(c.want) {
			t.Fatalf("consumed %v, want %v", got, c.want)
		}
	}
}

// The last stable offset is exported as a gauge.
func TestLastStableOffsetGauge(t *testing.T) {
	s := startTestServer(t)
	cl := txnClient(t, s, "txm")
	txnID := "t3"
	pid, ep := initProducer(t, cl, txnID, "txm")
	for _, b := range [][]byte{recordBatch(-1, 0, 0, false, "a"), recordBatch(pid, ep, 0, true, "b")} {
		if sp := produceRaw(t, cl, "txm", &txnID, b); sp.ErrorCode != 0 {
			t.Fatal(kerr.ErrorForCode(sp.ErrorCode))
		}
	}
	// Every partition has its samples, __transaction_state's 50 too.
	ch := make(chan prometheus.Metric)
	go func() {
		newLogCollector(s).Collect(ch)
		close(ch)
	}()
	found := false
	for m := range ch {
		if !strings.Contains(m.Desc().String(), "runnel_broker_log_last_stable_offset") {
			continue
		}
		var pb dto.Metric
		if err := m.Write(&pb); err != nil {
			t.Fatal(err)
		}
		if !slices.ContainsFunc(pb.GetLabel(), func(l *dto.LabelPair) bool { return l.GetName() == "topic" && l.GetValue() == "txm" }) {
			continue
		}
		if v := pb.GetGauge().GetValue(); v != 1 {
			t.Fatalf("last stable offset gauge %v, want 1", v)
		}
		found = true
	}
	if !found {
		t.Fatal("no last stable offset gauge")
	}
}
