package broker_test

// Transactions end to end over TCP with franz-go's transactional producer:
// what read_committed and read_uncommitted consumers see of committed and
// aborted transactions, zombie fencing, and the abort of a transaction
// whose producer died.

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/runnel-io/runnel/broker/brokertest"
)

// txnProducer returns a transactional franz-go client for id.
func txnProducer(t testing.TB, b *brokertest.Broker, id string, opts ...kgo.Opt) *kgo.Client {
	return newClient(t, b, append([]kgo.Opt{kgo.TransactionalID(id), kgo.TransactionTimeout(10 * time.Second)}, opts...)...)
}

// produceTxn writes values to topic in one transaction, committed or not.
func produceTxn(t testing.TB, cl *kgo.Client, topic string, commit bool, values ...string) {
	t.Helper()
	ctx := testCtx(t)
	if err := cl.BeginTransaction(); err != nil {
		t.Fatalf("begin: %v", err)
	}
	for _, v := range values {
		if err := cl.ProduceSync(ctx, &kgo.Record{Topic: topic, Value: []byte(v)}).FirstErr(); err != nil {
			t.Fatalf("produce %s: %v", v, err)
		}
	}
	if err := cl.EndTransaction(ctx, kgo.TransactionEndTry(commit)); err != nil {
		t.Fatalf("end transaction (commit=%v): %v", commit, err)
	}
}

// readTo reads partition 0 of topic from the start with the given
// isolation and returns the values read. It first appends a sentinel
// record (not transactional) and reads until it: everything before it is
// then either read or skipped for good. Sentinels are left out.
func readTo(t testing.TB, b *brokertest.Broker, topic string, committed bool) []string {
	t.Helper()
	ctx := testCtx(t)
	sentinel := fmt.Sprintf("%s%d", sentinelPrefix, time.Now().UnixNano())
	if err := newClient(t, b).ProduceSync(ctx, &kgo.Record{Topic: topic, Value: []byte(sentinel)}).FirstErr(); err != nil {
		t.Fatalf("produce the sentinel: %v", err)
	}
	iso := kgo.ReadUncommitted()
	if committed {
		iso = kgo.ReadCommitted()
	}
	cl := newClient(t, b, kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchIsolationLevel(iso))
	var out []string
	for {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("read %s (committed=%v): no sentinel before the deadline; read %q", topic, committed, out)
		}
		for _, e := range fs.Errors() {
			t.Fatalf("read %s: %v", topic, e.Err)
		}
		for _, r := range fs.Records() {
			v := string(r.Value)
			if v == sentinel {
				return out
			}
			if !strings.HasPrefix(v, sentinelPrefix) {
				out = append(out, v)
			}
		}
	}
}

const sentinelPrefix = "sentinel-"

// listEnds returns each partition's latest offset for isolation level iso
// (1: the last stable offset).
func listEnds(t testing.TB, b *brokertest.Broker, topic string, iso int8) map[int32]int64 {
	t.Helper()
	cl := newClient(t, b)
	md := kmsg.NewPtrMetadataRequest()
	mt := kmsg.NewMetadataRequestTopic()
	mt.Topic = kmsg.StringPtr(topic)
	md.Topics = append(md.Topics, mt)
	mresp, err := md.RequestWith(testCtx(t), cl)
	if err != nil || len(mresp.Topics) != 1 {
		t.Fatalf("metadata %s: %v", topic, err)
	}
	req := kmsg.NewPtrListOffsetsRequest()
	req.IsolationLevel = iso
	rt := kmsg.NewListOffsetsRequestTopic()
	rt.Topic = topic
	for _, p := range mresp.Topics[0].Partitions {
		rp := kmsg.NewListOffsetsRequestTopicPartition()
		rp.Partition, rp.Timestamp = p.Partition, -1
		rt.Partitions = append(rt.Partitions, rp)
	}
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(testCtx(t), cl)
	if err != nil {
		t.Fatalf("list offsets: %v", err)
	}
	ends := map[int32]int64{}
	for _, p := range resp.Topics[0].Partitions {
		if p.ErrorCode != 0 {
			t.Fatalf("list offsets %s-%d: %s", topic, p.Partition, errName(p.ErrorCode))
		}
		ends[p.Partition] = p.Offset
	}
	return ends
}

func TestTxnCommitAndAbortVisibility(t *testing.T) {
	b := brokertest.Start(t)
	const topic = "txn-visibility"
	newAdminT(t, b).create(topic, 1)
	cl := txnProducer(t, b, "visibility")
	produceTxn(t, cl, topic, true, "c1", "c2")
	produceTxn(t, cl, topic, false, "a1", "a2", "a3")
	produceTxn(t, cl, topic, true, "c3")
	// Six records and three markers: the log counts them all. The last
	// marker may still be on its way (EndTxn is answered once the
	// decision is durable; the markers follow).
	waitFor(t, ioTimeout, "the high watermark to pass 6 records and 3 markers", func() bool {
		return listEnds(t, b, topic, 0)[0] == 9
	})

	// The metrics count two commits and one abort, each with its
	// duration, and the markers this node wrote.
	waitFor(t, ioTimeout, "the transaction metrics to count 2 commits and 1 abort", func() bool {
		page := scrape(t, b)
		return sumSamples(t, page, "runnel_broker_transactions_completed_total", `result="commit"`) == 2 &&
			sumSamples(t, page, "runnel_broker_transactions_completed_total", `result="abort"`) == 1
	})
	page := scrape(t, b)
	if n := sumSamples(t, page, "runnel_broker_transaction_duration_seconds_count"); n != 3 {
		t.Errorf("transaction durations observed: %v, want 3", n)
	}
	if n := sumSamples(t, page, "runnel_broker_txn_markers_written_total"); n != 3 {
		t.Errorf("markers written: %v, want 3", n)
	}
	if n := sumSamples(t, page, "runnel_broker_transactions", `state="CompleteCommit"`); n != 1 {
		t.Errorf("transactional ids in CompleteCommit: %v, want 1", n)
	}

	if got, want := readTo(t, b, topic, true), []string{"c1", "c2", "c3"}; !slices.Equal(got, want) {
		t.Errorf("read_committed read %q, want %q", got, want)
	}
	// read_uncommitted shows the aborted records too, never the markers.
	if got, want := readTo(t, b, topic, false), []string{"c1", "c2", "a1", "a2", "a3", "c3"}; !slices.Equal(got, want) {
		t.Errorf("read_uncommitted read %q, want %q", got, want)
	}
}

func TestTxnOpenTransactionHoldsLastStableOffset(t *testing.T) {
	b := brokertest.Start(t)
	const topic = "txn-lso"
	newAdminT(t, b).create(topic, 1)
	plain := newClient(t, b)
	ctx := testCtx(t)
	produce := func(v string) {
		if err := plain.ProduceSync(ctx, &kgo.Record{Topic: topic, Value: []byte(v)}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	produce("before")
	cl := txnProducer(t, b, "lso")
	if err := cl.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	if err := cl.ProduceSync(ctx, &kgo.Record{Topic: topic, Value: []byte("open")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	produce("after")
	if lso, hw := listEnds(t, b, topic, 1)[0], listEnds(t, b, topic, 0)[0]; lso != 1 || hw != 3 {
		t.Fatalf("with a transaction open at offset 1: last stable offset %d, high watermark %d; want 1 and 3", lso, hw)
	}
	if err := cl.EndTransaction(ctx, kgo.TryCommit); err != nil {
		t.Fatal(err)
	}
	if got, want := readTo(t, b, topic, true), []string{"before", "open", "after"}; !slices.Equal(got, want) {
		t.Fatalf("read_committed read %q after the commit, want %q", got, want)
	}
}

func TestTxnZombieFenced(t *testing.T) {
	b := brokertest.Start(t)
	const topic = "txn-zombie"
	newAdminT(t, b).create(topic, 1)
	ctx := testCtx(t)

	zombie := txnProducer(t, b, "fenced-id")
	if err := zombie.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	if err := zombie.ProduceSync(ctx, &kgo.Record{Topic: topic, Value: []byte("zombie-1")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	// The same transactional id starts again elsewhere: its
	// InitProducerId aborts the zombie's transaction and bumps the epoch.
	fresh := txnProducer(t, b, "fenced-id")
	produceTxn(t, fresh, topic, true, "fresh-1")

	err := zombie.ProduceSync(ctx, &kgo.Record{Topic: topic, Value: []byte("zombie-2")}).FirstErr()
	if err == nil {
		err = zombie.EndTransaction(ctx, kgo.TryCommit)
	}
	if !errors.Is(err, kerr.ProducerFenced) && !errors.Is(err, kerr.InvalidProducerEpoch) && !errors.Is(err, kerr.InvalidProducerIDMapping) {
		t.Fatalf("the zombie's next write or commit: %v, want PRODUCER_FENCED or INVALID_PRODUCER_EPOCH", err)
	}
	produceTxn(t, fresh, topic, true, "fresh-2")
	if got, want := readTo(t, b, topic, true), []string{"fresh-1", "fresh-2"}; !slices.Equal(got, want) {
		t.Fatalf("read_committed read %q, want %q (nothing of the zombie)", got, want)
	}
}

func TestTxnTimedOutTransactionIsAborted(t *testing.T) {
	b := brokertest.Start(t, map[string]string{"transaction.abort.timed.out.transaction.cleanup.interval.ms": "50"})
	const topic = "txn-timeout"
	newAdminT(t, b).create(topic, 1)
	rc := dialRaw(t, b.Addr())
	// A producer that dies mid-transaction, by hand: InitProducerId with a
	// 300 ms timeout, AddPartitionsToTxn, one transactional batch, and
	// nothing more.
	pid, epoch := initTxn(t, rc, "dies", 300)
	addPartition(t, rc, "dies", pid, epoch, topic, 0)
	if p := rc.produceTxn("dies", topic, 0, txnBatch(pid, epoch, 0, "orphan")); p.ErrorCode != 0 {
		t.Fatalf("transactional produce: %s", errName(p.ErrorCode))
	}
	plain := newClient(t, b)
	if err := plain.ProduceSync(testCtx(t), &kgo.Record{Topic: topic, Value: []byte("later")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	// The coordinator aborts it once its timeout passes, and
	// read_committed readers move on: the LSO passes the marker.
	waitFor(t, ioTimeout, "the timed-out transaction's abort to move the last stable offset past it", func() bool {
		return listEnds(t, b, topic, 1)[0] >= 3
	})
	if got := readTo(t, b, topic, true); !slices.Equal(got, []string{"later"}) {
		t.Fatalf("read_committed read %q, want [later]", got)
	}
	st := describeTxn(t, rc, "dies")
	if st.State != "CompleteAbort" || st.ProducerEpoch != epoch+1 {
		t.Fatalf("after the timeout the id is %s at epoch %d, want CompleteAbort at epoch %d (fenced)", st.State, st.ProducerEpoch, epoch+1)
	}
	// The dead producer, were it to come back, is fenced.
	if p := rc.produceTxn("dies", topic, 0, txnBatch(pid, epoch, 1, "zombie")); p.ErrorCode != kerr.InvalidProducerEpoch.Code && p.ErrorCode != kerr.ProducerFenced.Code {
		t.Fatalf("produce at the old epoch after the abort: %s, want INVALID_PRODUCER_EPOCH", errName(p.ErrorCode))
	}
}

// txnState is what DescribeTransactions says of an id.
type txnState struct {
	State         string
	ProducerID    int64
	ProducerEpoch int16
	Partitions    []string
}

func describeTxn(t testing.TB, rc *rawConn, id string) txnState {
	t.Helper()
	req := kmsg.NewPtrDescribeTransactionsRequest()
	req.TransactionalIDs = []string{id}
	resp := rc.roundTrip(req).(*kmsg.DescribeTransactionsResponse)
	if len(resp.TransactionStates) != 1 || resp.TransactionStates[0].ErrorCode != 0 {
		t.Fatalf("describe %s: %+v", id, resp.TransactionStates)
	}
	s := resp.TransactionStates[0]
	out := txnState{State: s.State, ProducerID: s.ProducerID, ProducerEpoch: s.ProducerEpoch}
	for _, tt := range s.Topics {
		for _, p := range tt.Partitions {
			out.Partitions = append(out.Partitions, tt.Topic+"-"+strconv.Itoa(int(p)))
		}
	}
	return out
}

// initTxn sends InitProducerId for transactional id with timeoutMs and
// returns the producer id and epoch.
func initTxn(t testing.TB, rc *rawConn, id string, timeoutMs int32) (int64, int16) {
	t.Helper()
	for {
		req := kmsg.NewPtrInitProducerIDRequest()
		req.Version = 4
		req.TransactionalID = kmsg.StringPtr(id)
		req.TransactionTimeoutMillis = timeoutMs
		resp := rc.roundTrip(req).(*kmsg.InitProducerIDResponse)
		switch resp.ErrorCode {
		case 0:
			return resp.ProducerID, resp.ProducerEpoch
		case kerr.ConcurrentTransactions.Code, kerr.CoordinatorLoadInProgress.Code:
			continue // an abort completing: retry, as clients do
		}
		t.Fatalf("InitProducerId %s: %s", id, errName(resp.ErrorCode))
	}
}

func addPartition(t testing.TB, rc *rawConn, id string, pid int64, epoch int16, topic string, part int32) {
	t.Helper()
	if code := addPartitionCode(rc, id, pid, epoch, topic, part); code != 0 {
		t.Fatalf("AddPartitionsToTxn %s %s-%d: %s", id, topic, part, errName(code))
	}
}

func addPartitionCode(rc *rawConn, id string, pid int64, epoch int16, topic string, part int32) int16 {
	req := kmsg.NewPtrAddPartitionsToTxnRequest()
	req.Version = 3
	req.TransactionalID, req.ProducerID, req.ProducerEpoch = id, pid, epoch
	rt := kmsg.NewAddPartitionsToTxnRequestTopic()
	rt.Topic, rt.Partitions = topic, []int32{part}
	req.Topics = append(req.Topics, rt)
	resp := rc.roundTrip(req).(*kmsg.AddPartitionsToTxnResponse)
	return resp.Topics[0].Partitions[0].ErrorCode
}

// txnBatch is a transactional batch of values from producer pid at epoch,
// starting at sequence seq.
func txnBatch(pid int64, epoch int16, seq int32, values ...string) []byte {
	kb := newBatch(time.Now().UnixMilli(), recs(values...))
	kb.ProducerID, kb.ProducerEpoch, kb.FirstSequence = pid, epoch, seq
	kb.Attributes |= 0x10
	return encodeBatch(kb)
}

// produceTxn produces a transactional batch for transactional id.
func (rc *rawConn) produceTxn(id, topic string, part int32, records []byte) kmsg.ProduceResponseTopicPartition {
	rc.t.Helper()
	req := produceReq(topic, part, -1, records)
	req.TransactionID = kmsg.StringPtr(id)
	return producePartition(rc.t, rc.roundTrip(req).(*kmsg.ProduceResponse))
}

// adminT creates topics for a test.
type adminT struct {
	t  testing.TB
	cl *kgo.Client
}

func newAdminT(t testing.TB, b *brokertest.Broker) adminT { return adminT{t, newClient(t, b)} }

func (a adminT) create(topic string, partitions int32) {
	a.t.Helper()
	req := kmsg.NewPtrCreateTopicsRequest()
	req.Topics = append(req.Topics, topicReq(topic, partitions, 1, nil))
	resp, err := req.RequestWith(context.Background(), a.cl)
	if err != nil {
		a.t.Fatal(err)
	}
	if c := resp.Topics[0].ErrorCode; c != 0 {
		a.t.Fatal(fmt.Errorf("create %s: %s", topic, errName(c)))
	}
}
