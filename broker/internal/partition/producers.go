package partition

import (
	"errors"
	"fmt"

	"github.com/runnel-io/runnel/broker/internal/batch"
)

// Errors of the idempotent-producer checks, mapped to Kafka codes by the server.
var (
	ErrOutOfOrderSequence = errors.New("partition: out of order sequence number")
	ErrInvalidEpoch       = errors.New("partition: producer epoch is older than the partition has seen")
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

// record notes an appended batch (h carries its assigned base offset). It
// also runs while rebuilding state from the log, so it accepts what check
// accepted without judging it again.
func (ps producers) record(h *batch.Header) {
	if !h.HasProducerID() || h.BaseSequence < 0 || h.IsControl() {
		return
	}
	e := ps[h.ProducerID]
	if e == nil || h.ProducerEpoch > e.Epoch {
		e = &producerEntry{Epoch: h.ProducerEpoch}
		ps[h.ProducerID] = e
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
}

// truncate forgets batches at or after offset (the log lost them). It
// returns the producers left with no batch, which it removed: their state
// must be rebuilt from the log before the cut.
func (ps producers) truncate(offset int64) (lost map[int64]bool) {
	for id, e := range ps {
		n := 0
		for _, b := range e.Batches {
			if b.LastOffset < offset {
				e.Batches[n] = b
				n++
			}
		}
		e.Batches = e.Batches[:n]
		if n == 0 {
			delete(ps, id)
			if lost == nil {
				lost = map[int64]bool{}
			}
			lost[id] = true
		}
	}
	return lost
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
