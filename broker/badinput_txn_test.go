package broker_test

// Bad input to the transaction coordinator at the wire level: raw kmsg
// requests that no well-behaved client sends. Each gets Kafka's error
// code, and afterwards a transactional producer of the same id commits and
// read_committed readers see exactly what it committed.

import (
	"slices"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/runnel-io/runnel/broker/brokertest"
)

func endTxnCode(rc *rawConn, id string, pid int64, epoch int16, commit bool) int16 {
	req := kmsg.NewPtrEndTxnRequest()
	req.Version = 3
	req.TransactionalID, req.ProducerID, req.ProducerEpoch, req.Commit = id, pid, epoch, commit
	return rc.roundTrip(req).(*kmsg.EndTxnResponse).ErrorCode
}

func addOffsetsCode(rc *rawConn, id string, pid int64, epoch int16, group string) int16 {
	req := kmsg.NewPtrAddOffsetsToTxnRequest()
	req.Version = 3
	req.TransactionalID, req.ProducerID, req.ProducerEpoch, req.Group = id, pid, epoch, group
	return rc.roundTrip(req).(*kmsg.AddOffsetsToTxnResponse).ErrorCode
}

func txnCommitCode(rc *rawConn, id string, pid int64, epoch int16, group, topic string, part int32, offset int64) int16 {
	req := kmsg.NewPtrTxnOffsetCommitRequest()
	req.Version = 3
	req.TransactionalID, req.ProducerID, req.ProducerEpoch, req.Group = id, pid, epoch, group
	req.Generation = -1
	rt := kmsg.NewTxnOffsetCommitRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewTxnOffsetCommitRequestTopicPartition()
	rp.Partition, rp.Offset, rp.LeaderEpoch = part, offset, -1
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp := rc.roundTrip(req).(*kmsg.TxnOffsetCommitResponse)
	return resp.Topics[0].Partitions[0].ErrorCode
}

func TestBadInputTransactions(t *testing.T) {
	b := brokertest.Start(t, map[string]string{"transaction.max.timeout.ms": "60000"})
	const topic = "txn-bad"
	newAdminT(t, b).create(topic, 1)
	rc := dialRaw(t, b.Addr())

	t.Run("timeout above transaction.max.timeout.ms", func(t *testing.T) {
		req := kmsg.NewPtrInitProducerIDRequest()
		req.Version = 4
		req.TransactionalID = kmsg.StringPtr("too-long")
		req.TransactionTimeoutMillis = 60001
		if code := rc.roundTrip(req).(*kmsg.InitProducerIDResponse).ErrorCode; code != kerr.InvalidTransactionTimeout.Code {
			t.Fatalf("InitProducerId with a timeout over the maximum: %s, want INVALID_TRANSACTION_TIMEOUT", errName(code))
		}
	})

	pid, epoch := initTxn(t, rc, "bad", 30000)

	t.Run("EndTxn without AddPartitionsToTxn", func(t *testing.T) {
		if code := endTxnCode(rc, "bad", pid, epoch, true); code != kerr.InvalidTxnState.Code {
			t.Fatalf("EndTxn of a transaction that added nothing: %s, want INVALID_TXN_STATE", errName(code))
		}
	})

	t.Run("another producer id or epoch", func(t *testing.T) {
		if code := addPartitionCode(rc, "bad", pid+1000, epoch, topic, 0); code != kerr.InvalidProducerIDMapping.Code {
			t.Fatalf("AddPartitionsToTxn with another producer id: %s, want INVALID_PRODUCER_ID_MAPPING", errName(code))
		}
		if code := addPartitionCode(rc, "bad", pid, epoch+1, topic, 0); code != kerr.ProducerFenced.Code {
			t.Fatalf("AddPartitionsToTxn with another epoch: %s, want PRODUCER_FENCED", errName(code))
		}
		if code := addPartitionCode(rc, "bad", pid, epoch, "no-such-topic", 0); code != kerr.UnknownTopicOrPartition.Code {
			t.Fatalf("AddPartitionsToTxn of an unknown topic: %s, want UNKNOWN_TOPIC_OR_PARTITION", errName(code))
		}
	})

	t.Run("transactional produce to a partition not added", func(t *testing.T) {
		before := listEnds(t, b, topic, 0)[0]
		p := rc.produceTxn("bad", topic, 0, txnBatch(pid, epoch, 0, "not-added"))
		if p.ErrorCode != kerr.InvalidTxnState.Code {
			t.Fatalf("transactional produce to a partition the transaction did not add: %s, want INVALID_TXN_STATE", errName(p.ErrorCode))
		}
		if hw, lso := listEnds(t, b, topic, 0)[0], listEnds(t, b, topic, 1)[0]; hw != before || lso != hw {
			t.Fatalf("after the refused batch: high watermark %d (was %d), last stable offset %d; want nothing written and nothing held open", hw, before, lso)
		}
		// Another producer's id under this transactional id is refused too.
		if p := rc.produceTxn("bad", topic, 0, txnBatch(pid+1000, 0, 0, "other-pid")); p.ErrorCode != kerr.InvalidTxnState.Code {
			t.Fatalf("transactional produce with a producer id not the transactional id's: %s, want INVALID_TXN_STATE", errName(p.ErrorCode))
		}
	})

	t.Run("TxnOffsetCommit for a group the transaction did not add", func(t *testing.T) {
		if code := addOffsetsCode(rc, "bad", pid, epoch, "added-group"); code != 0 {
			t.Fatalf("AddOffsetsToTxn: %s", errName(code))
		}
		// Another group is (almost surely) on another __consumer_offsets
		// partition, not in the transaction.
		other := "other-group"
		for groupPartitionOf(other) == groupPartitionOf("added-group") {
			other += "x"
		}
		if code := txnCommitCode(rc, "bad", pid, epoch, other, topic, 0, 1); code != kerr.InvalidTxnState.Code {
			t.Fatalf("TxnOffsetCommit for a group not added: %s, want INVALID_TXN_STATE", errName(code))
		}
		if code := txnCommitCode(rc, "bad", pid, epoch, "added-group", topic, 0, 1); code != 0 {
			t.Fatalf("TxnOffsetCommit for the added group: %s", errName(code))
		}
		if code := endTxnCode(rc, "bad", pid, epoch, false); code != 0 {
			t.Fatalf("abort: %s", errName(code))
		}
	})

	t.Run("TxnOffsetCommit from a fenced epoch", func(t *testing.T) {
		pid1, epoch1 := initTxn(t, rc, "fenced-commit", 30000)
		if code := addOffsetsCode(rc, "fenced-commit", pid1, epoch1, "fenced-group"); code != 0 {
			t.Fatalf("AddOffsetsToTxn: %s", errName(code))
		}
		// A new instance of the producer fences this one (its open
		// transaction is aborted with a bumped epoch).
		pid2, epoch2 := initTxn(t, rc, "fenced-commit", 30000)
		if pid2 != pid1 || epoch2 <= epoch1 {
			t.Fatalf("re-init gave producer %d epoch %d, want %d with an epoch above %d", pid2, epoch2, pid1, epoch1)
		}
		code := txnCommitCode(rc, "fenced-commit", pid1, epoch1, "fenced-group", topic, 0, 5)
		if code != kerr.ProducerFenced.Code && code != kerr.InvalidProducerEpoch.Code {
			t.Fatalf("TxnOffsetCommit from the fenced epoch: %s, want PRODUCER_FENCED or INVALID_PRODUCER_EPOCH", errName(code))
		}
		if got := fetchOffset(t, rc, "fenced-group", topic, 0); got != -1 {
			t.Fatalf("the fenced commit is visible: offset %d", got)
		}
	})

	t.Run("WriteTxnMarkers from a client", func(t *testing.T) {
		pid3, epoch3 := initTxn(t, rc, "victim", 30000)
		addPartition(t, rc, "victim", pid3, epoch3, topic, 0)
		if p := rc.produceTxn("victim", topic, 0, txnBatch(pid3, epoch3, 0, "victim-1")); p.ErrorCode != 0 {
			t.Fatalf("produce: %s", errName(p.ErrorCode))
		}
		req := kmsg.NewPtrWriteTxnMarkersRequest()
		req.Version = 1
		m := kmsg.NewWriteTxnMarkersRequestMarker()
		m.ProducerID, m.ProducerEpoch, m.Committed = pid3, epoch3, true
		m.Topics = []kmsg.WriteTxnMarkersRequestMarkerTopic{{Topic: topic, Partitions: []int32{0}}}
		req.Markers = append(req.Markers, m)
		resp := rc.roundTrip(req).(*kmsg.WriteTxnMarkersResponse)
		if code := resp.Markers[0].Topics[0].Partitions[0].ErrorCode; code != kerr.ClusterAuthorizationFailed.Code {
			t.Fatalf("WriteTxnMarkers from a client: %s, want CLUSTER_AUTHORIZATION_FAILED", errName(code))
		}
		// Nothing was committed: the transaction is still open.
		if st := describeTxn(t, rc, "victim"); st.State != "Ongoing" {
			t.Fatalf("after the forged marker the transaction is %s, want Ongoing", st.State)
		}
		if lso := listEnds(t, b, topic, 1)[0]; lso >= listEnds(t, b, topic, 0)[0] {
			t.Fatalf("after the forged marker the last stable offset is %d, at the high watermark: the open transaction no longer holds it", lso)
		}
		if code := endTxnCode(rc, "victim", pid3, epoch3, false); code != 0 {
			t.Fatalf("abort: %s", errName(code))
		}
	})

	// Nothing is corrupted: a well-behaved producer of the same id
	// commits, and read_committed sees exactly that.
	cl := txnProducer(t, b, "bad")
	produceTxn(t, cl, topic, true, "good-1", "good-2")
	if got, want := readTo(t, b, topic, true), []string{"good-1", "good-2"}; !slices.Equal(got, want) {
		t.Fatalf("read_committed read %q, want %q", got, want)
	}
}

// fetchOffset returns group's committed offset of topic-part (-1: none),
// with require_stable unset.
func fetchOffset(t testing.TB, rc *rawConn, group, topic string, part int32) int64 {
	t.Helper()
	req := kmsg.NewPtrOffsetFetchRequest()
	req.Version = 7
	req.Group = group
	rt := kmsg.NewOffsetFetchRequestTopic()
	rt.Topic, rt.Partitions = topic, []int32{part}
	req.Topics = append(req.Topics, rt)
	resp := rc.roundTrip(req).(*kmsg.OffsetFetchResponse)
	if resp.ErrorCode != 0 {
		t.Fatalf("OffsetFetch %s: %s", group, errName(resp.ErrorCode))
	}
	return resp.Topics[0].Partitions[0].Offset
}

// groupPartitionOf is Kafka's __consumer_offsets partition of a group with
// the default 50 partitions: abs(Java hashCode) % 50.
func groupPartitionOf(group string) int32 {
	var h int32
	for _, r := range group {
		h = 31*h + r
	}
	if h == -1<<31 {
		h = 0
	} else if h < 0 {
		h = -h
	}
	return h % 50
}
