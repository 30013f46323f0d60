package partition

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/runnel-io/runnel/broker/internal/batch"
)

// Errors of the idempotent-producer checks, mapped to Kafka codes by the server.
var (
	ErrOutOfOrderSequence = errors.New("partition: out of order sequence number")
	ErrInvalidEpoch       = errors.New("partition: producer epoch is older than the partition has seen")
	// ErrCoordinatorFenced: a marker from a transaction coordinator older
	// than the one that wrote the producer's last marker here.
	ErrCoordinatorFenced = errors.New("partition: transaction coordinator epoch is older than the partition has seen")
	// ErrInvalidTxnState: a non-transactional batch from a producer whose
	// transaction is open here.
	ErrInvalidTxnState = errors.New("partition: non-transactional write from a producer with an open transaction")
)

// keptBatches is how many recent batches per producer are remembered for
// duplicate detection; Kafka keeps 5, matching max.in.flight.requests.
const keptBatches = 5

// batchMeta identifies one appended batch of a producer.
type batchMeta struct {
	FirstSeq   int32 `json:"first_seq"`
	LastSeq    int32 `json:"last_seq"`
	BaseOffset int64 `json:"base_offset"`
	LastOffset int64 `json:"last_offset"`
	// Timestamp is the batch's max timestamp as appended.
	Timestamp int64 `json:"timestamp"`
}

// producerEntry is what a partition knows of one producer id.
type producerEntry struct {
	Epoch int16 `json:"epoch"`
	// Batches holds the most recent batches, oldest first.
	Batches []batchMeta `json:"batches"`
	// TxnFirst is the first offset of the producer's open transaction
	// here; -1 when none.
	TxnFirst int64 `json:"txn_first"`
	// CoordinatorEpoch is the coordinator epoch of the producer's last
	// marker here; -1 when none.
	CoordinatorEpoch int32 `json:"coordinator_epoch"`
	// LastTimestamp is the max timestamp of its last batch or marker.
	LastTimestamp int64 `json:"last_timestamp"`
}

// UnmarshalJSON reads an entry, with no transaction and no marker when a
// snapshot from before transactions leaves those fields out.
func (e *producerEntry) UnmarshalJSON(b []byte) error {
	type plain producerEntry
	v := plain{TxnFirst: -1, CoordinatorEpoch: -1, LastTimestamp: -1}
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	*e = producerEntry(v)
	return nil
}

// completedTxn is a transaction a marker ended (Kafka's CompletedTxn).
type completedTxn struct {
	ProducerID  int64
	FirstOffset int64
	LastOffset  int64 // the marker's offset
	Aborted     bool
}

// producers is the idempotent-producer state of one partition: a plain,
// deterministic table driven by batch headers, owned by the partition under
// its append lock.
type producers map[int64]*producerEntry

// check decides what to do with a batch from an idempotent producer before
// it is appended. It returns the earlier batch when h duplicates one of the
// producer's recent batches (the caller answers with its offsets and does
// not append), or an error when the batch must be rejected. It changes
// nothing; record does, after the append.
func (ps producers) check(h *batch.Header) (dup *batchMeta, err error) {
	if !h.HasProducerID() || h.BaseSequence < 0 {
		return nil, nil
	}
	dup, err = ps.checkSequence(h)
	if dup != nil || err != nil {
		return dup, err
	}
	if e := ps[h.ProducerID]; e != nil && e.TxnFirst >= 0 && !h.IsTransactional() {
		return nil, fmt.Errorf("%w: producer %d, transaction open since offset %d", ErrInvalidTxnState, h.ProducerID, e.TxnFirst)
	}
	return nil, nil
}

// checkEpoch refuses a batch (of the broker's coordinators, which has no
// sequence) whose producer epoch is older than the producer's here.
func (ps producers) checkEpoch(h *batch.Header) error {
	if e := ps[h.ProducerID]; h.HasProducerID() && e != nil && h.ProducerEpoch < e.Epoch {
		return fmt.Errorf("%w: producer %d epoch %d < %d", ErrInvalidEpoch, h.ProducerID, h.ProducerEpoch, e.Epoch)
	}
	return nil
}

// checkMarker decides whether a marker may end producer id's transaction:
// not with an older producer epoch (ErrInvalidEpoch), nor from an older
// coordinator (ErrCoordinatorFenced), as Kafka's appendEndTxnMarker.
func (ps producers) checkMarker(id int64, epoch int16, coordinatorEpoch int32) error {
	e := ps[id]
	switch {
	case e == nil:
		return nil
	case epoch < e.Epoch:
		return fmt.Errorf("%w: marker for producer %d at epoch %d < %d", ErrInvalidEpoch, id, epoch, e.Epoch)
	case coordinatorEpoch < e.CoordinatorEpoch:
		return fmt.Errorf("%w: marker for producer %d from coordinator epoch %d < %d", ErrCoordinatorFenced, id, coordinatorEpoch, e.CoordinatorEpoch)
	}
	return nil
}

// checkSequence is check's idempotence part.
func (ps producers) checkSequence(h *batch.Header) (dup *batchMeta, err error) {
	e := ps[h.ProducerID]
	if e == nil {
		if h.BaseSequence != 0 {
			return nil, fmt.Errorf("%w: producer %d is new here, so its first sequence must be 0, not %d",
				ErrOutOfOrderSequence, h.ProducerID, h.BaseSequence)
		}
		return nil, nil
	}
	switch {
	case h.ProducerEpoch < e.Epoch:
		return nil, fmt.Errorf("%w: producer %d epoch %d < %d", ErrInvalidEpoch, h.ProducerID, h.ProducerEpoch, e.Epoch)
	case h.ProducerEpoch > e.Epoch:
		if h.BaseSequence != 0 {
			return nil, fmt.Errorf("%w: producer %d starts epoch %d at sequence %d, not 0",
				ErrOutOfOrderSequence, h.ProducerID, h.ProducerEpoch, h.BaseSequence)
		}
		return nil, nil
	}
	last := h.LastSequence()
	for i := range e.Batches {
		b := &e.Batches[i]
		if b.FirstSeq == h.BaseSequence && b.LastSeq == last {
			return b, nil
		}
	}
	if len(e.Batches) == 0 {
		if h.BaseSequence != 0 {
			return nil, fmt.Errorf("%w: producer %d expected sequence 0, got %d", ErrOutOfOrderSequence, h.ProducerID, h.BaseSequence)
		}
		return nil, nil
	}
	want := nextSeq(e.Batches[len(e.Batches)-1].LastSeq)
	if h.BaseSequence != want {
		return nil, fmt.Errorf("%w: producer %d expected sequence %d, got %d", ErrOutOfOrderSequence, h.ProducerID, want, h.BaseSequence)
	}
	return nil, nil
}

// entry returns producer id's entry at epoch, creating it. A newer epoch
// forgets the sequence history (the next batch starts at sequence 0) but
// not the open transaction or the coordinator epoch.
func (ps producers) entry(id int64, epoch int16) *producerEntry {
	e := ps[id]
	switch {
	case e == nil:
		e = &producerEntry{Epoch: epoch, TxnFirst: -1, CoordinatorEpoch: -1, LastTimestamp: -1}
		ps[id] = e
	case epoch > e.Epoch:
		e.Epoch, e.Batches = epoch, nil
	}
	return e
}

// record notes an appended data batch (h carries its assigned base offset)
// and reports whether it opened a transaction. It also runs while rebuilding
// state from the log, so it accepts what check accepted without judging it
// again. Markers go to endTxn.
func (ps producers) record(h *batch.Header) (opened bool) {
	if !h.HasProducerID() || h.IsControl() {
		return false
	}
	e := ps.entry(h.ProducerID, h.ProducerEpoch)
	e.LastTimestamp = h.MaxTimestamp
	if h.IsTransactional() && e.TxnFirst < 0 {
		e.TxnFirst, opened = h.BaseOffset, true
	}
	if h.BaseSequence < 0 {
		return opened // a coordinator's batch: no sequence to remember
	}
	if len(e.Batches) == keptBatches {
		copy(e.Batches, e.Batches[1:])
		e.Batches = e.Batches[:keptBatches-1]
	}
	e.Batches = append(e.Batches, batchMeta{
		FirstSeq:   h.BaseSequence,
		LastSeq:    h.LastSequence(),
		BaseOffset: h.BaseOffset,
		LastOffset: h.LastOffset(),
		Timestamp:  h.MaxTimestamp,
	})
	return opened
}

// endTxn notes a marker at offset: the producer's transaction here ends
// (one that was never opened here ends at the marker itself, as in Kafka),
// its coordinator epoch is the marker's, and a newer producer epoch is
// taken (fencing the older one's data).
func (ps producers) endTxn(h *batch.Header, m batch.EndTxnMarker) completedTxn {
	e := ps.entry(h.ProducerID, h.ProducerEpoch)
	first := e.TxnFirst
	if first < 0 {
		first = h.BaseOffset
	}
	e.TxnFirst, e.CoordinatorEpoch, e.LastTimestamp = -1, m.CoordinatorEpoch, h.MaxTimestamp
	return completedTxn{ProducerID: h.ProducerID, FirstOffset: first, LastOffset: h.BaseOffset, Aborted: !m.Commit}
}

// truncate forgets batches and open transactions at or after offset (the
// log lost them), and the producers left with neither. What the log before
// the cut says is then rebuilt by a scan (see Partition.TruncateTo); this
// keeps what the scan cannot see, below the log start.
func (ps producers) truncate(offset int64) {
	for id, e := range ps {
		n := 0
		for _, b := range e.Batches {
			if b.LastOffset < offset {
				e.Batches[n] = b
				n++
			}
		}
		e.Batches = e.Batches[:n]
		if e.TxnFirst >= offset {
			e.TxnFirst = -1
		}
		if n == 0 && e.TxnFirst < 0 {
			delete(ps, id)
		}
	}
}

func nextSeq(s int32) int32 {
	if s == 0x7fffffff {
		return 0
	}
	return s + 1
}

// lastOffsets maps each producer id to the last offset of its newest batch,
// which log compaction must keep (see log.CleanOptions.ProducerLast).
func (ps producers) lastOffsets() map[int64]int64 {
	out := make(map[int64]int64, len(ps))
	for id, e := range ps {
		if n := len(e.Batches); n > 0 {
			out[id] = e.Batches[n-1].LastOffset
		}
	}
	return out
}
