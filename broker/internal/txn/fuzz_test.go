package txn

import (
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// FuzzLoad feeds arbitrary records to Load, as a damaged or foreign
// __transaction_state partition would, then drives the loaded ids
// (Loaded, requests, timeouts, expiry): an error or nothing, never a
// panic.
func FuzzLoad(f *testing.F) {
	ongoing := record("a", meta{producerID: 5, epoch: 2, timeout: time.Second, state: Ongoing,
		partitions: []TopicPartition{{"t", 0}, {"t", 1}, {"u", 0}}, start: 1, updated: 1})
	prepared := record("a", meta{producerID: 5, epoch: 2, timeout: time.Second, state: PrepareCommit,
		partitions: []TopicPartition{{"t", 0}}, start: 1, updated: 1})
	empty := record("a", meta{producerID: 5, epoch: 32766, timeout: time.Second, state: Empty, start: -1, updated: 1})
	v1 := kmsg.NewTxnMetadataValue()
	v1.Version, v1.ProducerID, v1.State, v1.PreviousProducerID = 1, 7, kmsg.TransactionStateCompleteAbort, 3
	f.Add(ongoing.Key, ongoing.Value)
	f.Add(prepared.Key, prepared.Value)
	f.Add(empty.Key, empty.Value)
	f.Add(ongoing.Key, v1.AppendTo(nil))
	f.Add(ongoing.Key, []byte(nil))
	f.Add([]byte{0, 1}, []byte{0})
	f.Fuzz(func(t *testing.T, key, value []byte) {
		c := New(Config{MaxTimeout: time.Minute, IDExpiration: time.Hour})
		_ = c.Load(key, value)
		now := time.UnixMilli(2)
		_ = c.Loaded(now)
		for id := range c.txns {
			_ = c.Describe(id)
			tx := c.txns[id]
			end := kmsg.NewPtrEndTxnRequest()
			end.TransactionalID, end.ProducerID, end.ProducerEpoch, end.Commit = id, tx.producerID, tx.epoch, true
			_ = c.EndTxn(now, 1, end)
			add := kmsg.NewPtrAddPartitionsToTxnRequest()
			add.TransactionalID, add.ProducerID, add.ProducerEpoch = id, tx.producerID, tx.epoch
			add.Topics = []kmsg.AddPartitionsToTxnRequestTopic{{Topic: "t", Partitions: []int32{9}}}
			_ = c.AddPartitions(now, 2, add, nil)
			_ = c.MarkersWritten(now, id, tx.producerID, tx.epoch)
			init := kmsg.NewPtrInitProducerIDRequest()
			init.TransactionalID, init.TransactionTimeoutMillis = &id, 1000
			_ = c.InitProducerID(now, 3, init)
		}
		_ = c.List(now, kmsg.NewPtrListTransactionsRequest())
		_ = c.Tick(time.UnixMilli(1 << 40))
		for w := range c.pending {
			_ = c.Written(now, w, nil)
		}
	})
}

// TestRecordNullPartitions checks the partitions field as Kafka writes
// it: null for Empty, an array (empty when complete) otherwise.
func TestRecordNullPartitions(t *testing.T) {
	for _, tc := range []struct {
		state State
		null  bool
	}{{Empty, true}, {CompleteCommit, false}, {CompleteAbort, false}} {
		r := record("a", meta{state: tc.state, start: -1})
		// version, producer id, epoch, timeout, state: 2+8+2+4+1 bytes.
		n := int32(r.Value[17])<<24 | int32(r.Value[18])<<16 | int32(r.Value[19])<<8 | int32(r.Value[20])
		if (n == -1) != tc.null || (!tc.null && n != 0) {
			t.Errorf("%s: partitions length %d", tc.state, n)
		}
	}
}
