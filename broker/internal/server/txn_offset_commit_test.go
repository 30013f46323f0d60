package server

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/runnel-io/runnel/broker/internal/batch"
	"github.com/runnel-io/runnel/broker/internal/configs"
	"github.com/runnel-io/runnel/broker/internal/partition"
)

// testServer is a single-node server on loopback over a data directory.
type testServer struct {
	*Server
	done chan error
	cl   *kgo.Client
}

// startServer starts a node on dir with one __consumer_offsets partition,
// and a client for it; both stop when the test ends (or on stop).
func startServer(t *testing.T, dir string) *testServer {
	t.Helper()
	cfg, err := configs.ParseBroker(map[string]string{
		"log.dirs": dir, "listeners": "PLAINTEXT://127.0.0.1:0",
		"offsets.topic.num.partitions": "1",
	})
	if err != nil {
		t.Fatal(err)
	}
	s, err := New(Options{Config: cfg})
	if err != nil {
		t.Fatal(err)
	}
	ts := &testServer{Server: s, done: make(chan error, 1)}
	go func() { ts.done <- s.Serve(context.Background()) }()
	ts.cl, err = kgo.NewClient(kgo.SeedBrokers(s.Addr().String()), kgo.RequestTimeoutOverhead(10*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ts.stop(t) })
	return ts
}

func (ts *testServer) stop(t *testing.T) {
	if ts.done == nil {
		return
	}
	ts.cl.Close()
	if err := ts.Close(); err != nil {
		t.Errorf("close: %v", err)
	}
	if err := <-ts.done; err != nil {
		t.Errorf("serve: %v", err)
	}
	ts.done = nil
}

func (ts *testServer) request(t *testing.T, req kmsg.Request) kmsg.Response {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	resp, err := ts.cl.Request(ctx, req)
	if err != nil {
		t.Fatalf("%s: %v", kmsg.NameForKey(req.Key()), err)
	}
	return resp
}

// producerID starts transactional id's producer and adds group g to its
// transaction, so that the coordinator verifies its TxnOffsetCommits. The
// transaction stays open at the coordinator for the whole test: the test
// writes the markers to __consumer_offsets itself (writeMarker, endTxn), to
// drive the group coordinator alone.
func (ts *testServer) producerID(t *testing.T, id string) (int64, int16) {
	t.Helper()
	init := kmsg.NewPtrInitProducerIDRequest()
	init.TransactionalID, init.TransactionTimeoutMillis = kmsg.StringPtr(id), 900000
	resp := ts.request(t, init).(*kmsg.InitProducerIDResponse)
	if resp.ErrorCode != 0 {
		t.Fatalf("InitProducerId: %s", kerr.ErrorForCode(resp.ErrorCode))
	}
	add := kmsg.NewPtrAddOffsetsToTxnRequest()
	add.TransactionalID, add.ProducerID, add.ProducerEpoch, add.Group = id, resp.ProducerID, resp.ProducerEpoch, "g"
	if code := ts.request(t, add).(*kmsg.AddOffsetsToTxnResponse).ErrorCode; code != 0 {
		t.Fatalf("AddOffsetsToTxn: %s", kerr.ErrorForCode(code))
	}
	return resp.ProducerID, resp.ProducerEpoch
}

// txnCommit commits offset for t/part in the transaction of id's producer.
func (ts *testServer) txnCommit(t *testing.T, id string, pid int64, epoch int16, part int32, offset int64) {
	t.Helper()
	req := kmsg.NewPtrTxnOffsetCommitRequest()
	req.Version = 3
	req.TransactionalID, req.Group, req.ProducerID, req.ProducerEpoch = id, "g", pid, epoch
	rt := kmsg.NewTxnOffsetCommitRequestTopic()
	rt.Topic = "t"
	rp := kmsg.NewTxnOffsetCommitRequestTopicPartition()
	rp.Partition, rp.Offset = part, offset
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp := ts.request(t, req).(*kmsg.TxnOffsetCommitResponse)
	if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 || resp.Topics[0].Partitions[0].ErrorCode != 0 {
		t.Fatalf("TxnOffsetCommit: %+v", resp.Topics)
	}
}

// fetch returns group g's offset of t/part, or its error code.
func (ts *testServer) fetch(t *testing.T, part int32, stable bool) (int64, int16) {
	t.Helper()
	req := kmsg.NewPtrOffsetFetchRequest()
	req.Version = 7
	req.Group, req.RequireStable = "g", stable
	rt := kmsg.NewOffsetFetchRequestTopic()
	rt.Topic, rt.Partitions = "t", []int32{part}
	req.Topics = append(req.Topics, rt)
	resp := ts.request(t, req).(*kmsg.OffsetFetchResponse)
	if resp.ErrorCode != 0 || len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
		t.Fatalf("OffsetFetch: %s %+v", kerr.ErrorForCode(resp.ErrorCode), resp.Topics)
	}
	p := resp.Topics[0].Partitions[0]
	return p.Offset, p.ErrorCode
}

func (ts *testServer) wantOffset(t *testing.T, part int32, want int64) {
	t.Helper()
	for _, stable := range []bool{false, true} {
		if off, code := ts.fetch(t, part, stable); off != want || code != 0 {
			t.Fatalf("t/%d (require_stable %v): offset %d, error %s; want %d", part, stable, off, kerr.ErrorForCode(code), want)
		}
	}
}

func (ts *testServer) wantUnstable(t *testing.T, part int32, committed int64) {
	t.Helper()
	if off, code := ts.fetch(t, part, false); off != committed || code != 0 {
		t.Fatalf("t/%d: offset %d, error %s; want %d", part, off, kerr.ErrorForCode(code), committed)
	}
	if off, code := ts.fetch(t, part, true); off != -1 || code != kerr.UnstableOffsetCommit.Code {
		t.Fatalf("t/%d with require_stable: offset %d, error %s; want UNSTABLE_OFFSET_COMMIT", part, off, kerr.ErrorForCode(code))
	}
}

// writeMarker appends a transaction marker of pid to __consumer_offsets-0
// and syncs it, as WriteTxnMarkers does, without telling the group
// coordinator.
func (ts *testServer) writeMarker(t *testing.T, pid int64, epoch int16, commit bool) {
	t.Helper()
	p := ts.partition(offsetsTopic, 0)
	if _, err := p.AppendMarker(partition.Marker{ProducerID: pid, ProducerEpoch: epoch, Commit: commit}); err != nil {
		t.Fatal(err)
	}
	if err := p.Commit(); err != nil {
		t.Fatal(err)
	}
}

// endTxn does what WriteTxnMarkers will: the marker, then completeTxn.
func (ts *testServer) endTxn(t *testing.T, pid int64, epoch int16, commit bool) {
	t.Helper()
	ts.writeMarker(t, pid, epoch, commit)
	if err := ts.groups.completeTxn(0, pid, commit); err != nil {
		t.Fatal(err)
	}
}

// TestTxnOffsetCommit commits offsets in transactions over TCP: they are
// written as a transactional batch of the producer, invisible to
// OffsetFetch (UNSTABLE_OFFSET_COMMIT with require_stable) until the
// marker's completeTxn commits them; an abort drops them; and a restart
// replays them, committed by a marker in the log or still pending without
// one.
func TestTxnOffsetCommit(t *testing.T) {
	dir := t.TempDir()
	ts := startServer(t, dir)
	ct := kmsg.NewPtrCreateTopicsRequest()
	ct.Topics = []kmsg.CreateTopicsRequestTopic{{Topic: "t", NumPartitions: 3, ReplicationFactor: 1}}
	if resp := ts.request(t, ct).(*kmsg.CreateTopicsResponse); resp.Topics[0].ErrorCode != 0 {
		t.Fatalf("CreateTopics: %s", kerr.ErrorForCode(resp.Topics[0].ErrorCode))
	}
	fc := kmsg.NewPtrFindCoordinatorRequest()
	fc.CoordinatorKey = "g"
	if resp := ts.request(t, fc).(*kmsg.FindCoordinatorResponse); resp.ErrorCode != 0 {
		t.Fatalf("FindCoordinator: %s", kerr.ErrorForCode(resp.ErrorCode))
	}

	pid, epoch := ts.producerID(t, "tx")
	ts.txnCommit(t, "tx", pid, epoch, 0, 42)
	ts.wantUnstable(t, 0, -1)
	checkLastBatch(t, ts, pid, epoch)
	ts.endTxn(t, pid, epoch, true)
	ts.wantOffset(t, 0, 42)

	ts.txnCommit(t, "tx", pid, epoch, 0, 50)
	ts.wantUnstable(t, 0, 42)
	ts.endTxn(t, pid, epoch, false)
	ts.wantOffset(t, 0, 42)
	// Another epoch than the coordinator's is refused before anything is
	// written.
	req := kmsg.NewPtrTxnOffsetCommitRequest()
	req.Version = 3
	req.TransactionalID, req.Group, req.ProducerID, req.ProducerEpoch = "tx", "g", pid, epoch+1
	req.Topics = []kmsg.TxnOffsetCommitRequestTopic{{Topic: "t", Partitions: []kmsg.TxnOffsetCommitRequestTopicPartition{{Partition: 0, Offset: 56}}}}
	if resp := ts.request(t, req).(*kmsg.TxnOffsetCommitResponse); resp.Topics[0].Partitions[0].ErrorCode != kerr.ProducerFenced.Code {
		t.Fatalf("TxnOffsetCommit with another epoch: %s", kerr.ErrorForCode(resp.Topics[0].Partitions[0].ErrorCode))
	}
	ts.wantOffset(t, 0, 42)

	if err := ts.groups.completeTxn(7, pid, true); errCode(err) != kerr.UnknownTopicOrPartition.Code {
		t.Fatalf("completeTxn of a partition that does not exist: %v", err)
	}

	// Restart: t/1's transaction has its commit marker in the log, t/2's
	// none, t/0's an abort marker.
	pid2, epoch2 := ts.producerID(t, "tx2")
	pid3, epoch3 := ts.producerID(t, "tx3")
	ts.txnCommit(t, "tx", pid, epoch, 0, 60)
	ts.txnCommit(t, "tx2", pid2, epoch2, 1, 7)
	ts.txnCommit(t, "tx3", pid3, epoch3, 2, 9)
	ts.writeMarker(t, pid2, epoch2, true)
	ts.writeMarker(t, pid, epoch, false)
	ts.stop(t)

	ts = startServer(t, dir)
	ts.wantOffset(t, 0, 42)
	ts.wantOffset(t, 1, 7)
	ts.wantUnstable(t, 2, -1)
	ts.endTxn(t, pid3, epoch3, true)
	ts.wantOffset(t, 2, 9)

	// The producer's next transaction after its markers: its batch
	// follows them.
	ts.txnCommit(t, "tx", pid, epoch, 0, 70)
	ts.endTxn(t, pid, epoch, true)
	ts.wantOffset(t, 0, 70)
}

// checkLastBatch checks that the last batch of __consumer_offsets-0 is a
// transactional batch of pid and epoch.
func checkLastBatch(t *testing.T, ts *testServer, pid int64, epoch int16) {
	t.Helper()
	p := ts.partition(offsetsTopic, 0)
	buf, _, err := p.ReadReplica(nil, 0, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	var last batch.Header
	for len(buf) >= batch.HeaderSize {
		h, err := batch.ParseHeader(buf)
		if err != nil {
			t.Fatal(err)
		}
		last, buf = h, buf[h.Size():]
	}
	if !last.IsTransactional() || last.IsControl() || last.ProducerID != pid || last.ProducerEpoch != epoch {
		t.Fatalf("last batch: %+v, want a transactional batch of producer %d epoch %d", last, pid, epoch)
	}
}
