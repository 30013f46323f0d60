package txn

import (
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// ErrBadRecord is returned by Load for a record that is not one of Kafka's
// __transaction_state records.
var ErrBadRecord = errors.New("txn: malformed __transaction_state record")

// Record versions, as Kafka writes them without transaction version 2
// (KIP-890 part 2): TransactionLogKey v0, TransactionLogValue v0. Load
// reads v1 values too (flexible, with tagged fields).
const (
	keyVersion   = 0
	valueVersion = 0
)

func key(id string) []byte {
	k := kmsg.NewTxnMetadataKey()
	k.Version = keyVersion
	k.TransactionalID = id
	return k.AppendTo(nil)
}

// record is the record of id moving to m: a tombstone for Dead.
func record(id string, m meta) Record {
	r := Record{Key: key(id)}
	if m.state == Dead {
		return r
	}
	v := kmsg.NewTxnMetadataValue()
	v.Version = valueVersion
	v.ProducerID, v.ProducerEpoch = m.producerID, m.epoch
	v.TimeoutMillis = int32(m.timeout.Milliseconds())
	v.State = kmsg.TransactionState(m.state)
	for _, tp := range m.partitions {
		if n := len(v.Topics); n == 0 || v.Topics[n-1].Topic != tp.Topic {
			v.Topics = append(v.Topics, kmsg.TxnMetadataValueTopic{Topic: tp.Topic})
		}
		last := &v.Topics[len(v.Topics)-1]
		last.Partitions = append(last.Partitions, tp.Partition)
	}
	if m.state != Empty && v.Topics == nil {
		// As Kafka: null partitions for Empty only, else an array.
		v.Topics = []kmsg.TxnMetadataValueTopic{}
	}
	v.LastUpdateTimestamp, v.StartTimestamp = m.updated, m.start
	r.Value = v.AppendTo(nil)
	return r
}

// Load replays one record of the partition, in log order, into a
// coordinator that has served no request yet; call Loaded after the last.
// An id comes back as its last record left it (a tombstone removes it),
// as Kafka's TransactionStateManager loads it; the previous epoch and a
// failed fence are not recorded, so they start afresh.
func (c *Coordinator) Load(k, value []byte) error {
	if len(k) < 2 {
		return fmt.Errorf("%w: key of %d bytes", ErrBadRecord, len(k))
	}
	if v := int16(binary.BigEndian.Uint16(k)); v != keyVersion {
		return fmt.Errorf("%w: key version %d", ErrBadRecord, v)
	}
	var tk kmsg.TxnMetadataKey
	if err := tk.ReadFrom(k); err != nil {
		return fmt.Errorf("%w: key: %v", ErrBadRecord, err)
	}
	if value == nil {
		delete(c.txns, tk.TransactionalID)
		return nil
	}
	if len(value) < 2 {
		return fmt.Errorf("%w: value of %d bytes", ErrBadRecord, len(value))
	}
	if v := int16(binary.BigEndian.Uint16(value)); v < 0 || v > 1 {
		return fmt.Errorf("%w: value version %d", ErrBadRecord, v)
	}
	var v kmsg.TxnMetadataValue
	if err := v.ReadFrom(value); err != nil {
		return fmt.Errorf("%w: value: %v", ErrBadRecord, err)
	}
	if v.State < 0 || v.State > kmsg.TransactionState(CompleteAbort) {
		return fmt.Errorf("%w: state %d", ErrBadRecord, v.State)
	}
	m := meta{producerID: v.ProducerID, lastProducerID: -1, epoch: v.ProducerEpoch, lastEpoch: -1,
		timeout: time.Duration(v.TimeoutMillis) * time.Millisecond, state: State(v.State),
		start: v.StartTimestamp, updated: v.LastUpdateTimestamp}
	if v.Version >= 1 {
		m.lastProducerID = v.PreviousProducerID
	}
	for _, t := range v.Topics {
		for _, p := range t.Partitions {
			m.partitions = append(m.partitions, TopicPartition{t.Topic, p})
		}
	}
	slices.SortFunc(m.partitions, compareTP)
	m.partitions = slices.Compact(m.partitions)
	if m.epoch < 0 {
		return fmt.Errorf("%w: producer epoch %d", ErrBadRecord, m.epoch)
	}
	c.txns[tk.TransactionalID] = &txn{id: tk.TransactionalID, meta: m}
	return nil
}

// Loaded ends the load at now. Its Output holds the Markers of every
// transaction left PrepareCommit or PrepareAbort (the previous coordinator
// may not have written them all; markers are idempotent), as Kafka resends
// them on load, and completes at once a prepared transaction without
// partitions.
func (c *Coordinator) Loaded(now time.Time) Output {
	var out Output
	for _, t := range c.sortedTxns() {
		if t.state == PrepareCommit || t.state == PrepareAbort {
			c.sendMarkers(now, t, &out)
		}
	}
	return c.seal(now, &out)
}
