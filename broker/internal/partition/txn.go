package partition

import (
	"errors"
	"fmt"
	"maps"
	"slices"

	"github.com/runnel-io/runnel/broker/internal/batch"
	plog "github.com/runnel-io/runnel/broker/internal/log"
)

// Transactions on the log side, as Kafka's ProducerStateManager and
// UnifiedLog keep them: a producer's transactional batch opens a
// transaction at its offset; a marker (a control batch the transaction
// coordinator has written, AppendMarker) ends it, committed or aborted. An
// aborted transaction goes into the aborted-transaction index of the
// segment holding its marker (log.AddAbortedTxn), which read_committed
// fetches return with their records so that clients drop its data.
//
// The last stable offset (LSO) is the least of the first offsets of the
// open transactions, the first offsets of the decided transactions whose
// markers are not yet below the high watermark, and the high watermark;
// never below the log start. read_committed reads stop there, and so do
// log compaction and ListOffsets for read_committed.
//
// The producer table (under appendMu) holds each producer's open
// transaction; txnState (under mu, for Offsets) mirrors the open ones and
// holds the decided, unreplicated ones. Both are derived from the log: Open
// rebuilds them from the producer snapshot and the log after it (from the
// log start after a crash or when the index was damaged), TruncateTo
// rescans the log, and followers (AppendReplica) track the same batches as
// the leader, so a follower that becomes leader knows them.

// Marker ends producer ProducerID's transaction on this partition
// (WriteTxnMarkers).
type Marker struct {
	ProducerID       int64
	ProducerEpoch    int16
	CoordinatorEpoch int32
	Commit           bool
}

// AbortedTxn is an aborted transaction a read_committed fetch returns:
// the producer's records from FirstOffset up to its abort marker are to be
// dropped.
type AbortedTxn struct {
	ProducerID  int64
	FirstOffset int64
}

// ProducerState is one active producer as DescribeProducers reports it.
type ProducerState struct {
	ProducerID       int64
	ProducerEpoch    int16
	LastSequence     int32 // -1 when none
	LastTimestamp    int64 // -1 when none
	CoordinatorEpoch int32 // -1 when no marker
	// CurrentTxnStartOffset is the first offset of its open transaction,
	// -1 when none.
	CurrentTxnStartOffset int64
}

// txnState is what the last stable offset depends on besides the high
// watermark. Guarded by Partition.mu.
type txnState struct {
	open map[int64]int64 // producer id -> first offset of its open transaction
	// unreplicated are decided transactions whose markers are at or above
	// the high watermark, in marker order.
	unreplicated []completedTxn
}

// AppendMarker appends m as a control batch (Kafka's EndTransactionMarker,
// version 0, with coordinator epoch) stamped with the leader epoch, and
// returns its offset. The caller then calls Commit and
// WaitReplicated(ctx, offset+1), as for acks=-1.
//
// It fails before writing with ErrNotLeader on a follower, ErrNotEnoughReplicas
// as an acks=-1 append would (Kafka writes markers with acks=-1),
// ErrInvalidEpoch for a producer epoch below the producer's here, and
// ErrCoordinatorFenced for a coordinator epoch below that of the producer's
// last marker here. A newer producer epoch (a timeout abort bumps it to
// fence the producer) becomes the producer's: its older-epoch data is
// refused from then on, and its next batch starts at sequence 0. A marker
// for a producer with no open transaction here is written all the same, as
// Kafka does.
func (p *Partition) AppendMarker(m Marker) (offset int64, err error) {
	p.appendMu.Lock()
	defer p.appendMu.Unlock()
	p.mu.Lock()
	cfg := p.mu.config
	epoch, err := p.leaderCheckLocked(-1)
	p.mu.Unlock()
	if err != nil {
		return -1, err
	}
	if err := p.producers.checkMarker(m.ProducerID, m.ProducerEpoch, m.CoordinatorEpoch); err != nil {
		return -1, err
	}
	b := batch.AppendEndTxnMarker(nil, m.ProducerID, m.ProducerEpoch,
		batch.EndTxnMarker{Commit: m.Commit, CoordinatorEpoch: m.CoordinatorEpoch}, p.now().UnixMilli())
	res, err := p.log.Append(b, epoch)
	if err != nil {
		return -1, err
	}
	h, err := batch.ParseHeader(b)
	if err != nil {
		return -1, err
	}
	if err := p.appendedLocked(&h, b, cfg); err != nil {
		return -1, err
	}
	p.endVerificationLocked(m.ProducerID)
	return res.BaseOffset, nil
}

// track brings ps and the transaction state up to date with one batch the
// log holds (h with its offset; control is the whole batch when it is a
// control batch) and returns the index entry of a transaction it aborted,
// or nil. appendMu held. Control batches that are not markers are ignored,
// as Kafka ignores control records of unknown types.
func (p *Partition) track(ps producers, h *batch.Header, control []byte) (*plog.AbortedTxn, error) {
	if !h.IsControl() {
		if ps.record(h) {
			p.mu.Lock()
			p.mu.txn.open[h.ProducerID] = h.BaseOffset
			p.mu.Unlock()
		}
		return nil, nil
	}
	if !h.HasProducerID() {
		return nil, nil
	}
	m, err := batch.ParseEndTxnMarker(control)
	if errors.Is(err, batch.ErrNotMarker) {
		p.logger.Warn("ignoring a control batch that is not a transaction marker", "offset", h.BaseOffset, "err", err)
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("partition: marker at offset %d: %w", h.BaseOffset, err)
	}
	c := ps.endTxn(h, m)
	p.mu.Lock()
	defer p.mu.Unlock()
	t := &p.mu.txn
	delete(t.open, c.ProducerID)
	if c.LastOffset >= p.mu.hw {
		t.unreplicated = append(t.unreplicated, c)
	}
	if !c.Aborted {
		return nil, nil
	}
	// Kafka's lastStableOffset(completedTxn): the first offset of another
	// open transaction, or the offset after the marker.
	lso := c.LastOffset + 1
	for _, first := range t.open {
		lso = min(lso, first)
	}
	return &plog.AbortedTxn{ProducerID: c.ProducerID, FirstOffset: c.FirstOffset, LastOffset: c.LastOffset, LastStableOffset: lso}, nil
}

// lastStableLocked computes the last stable offset. mu held.
func (p *Partition) lastStableLocked(logStart int64) int64 {
	lso := p.mu.hw
	for _, first := range p.mu.txn.open {
		lso = min(lso, first)
	}
	for _, c := range p.mu.txn.unreplicated {
		lso = min(lso, c.FirstOffset)
	}
	return max(lso, logStart)
}

// pruneTxnsLocked forgets the decided transactions whose markers are below
// the high watermark (Kafka's onHighWatermarkUpdated). mu held.
func (p *Partition) pruneTxnsLocked() {
	t := &p.mu.txn
	t.unreplicated = slices.DeleteFunc(t.unreplicated, func(c completedTxn) bool { return c.LastOffset < p.mu.hw })
}

// resetTxnsLocked rebuilds the transaction state from the producer table
// (after a snapshot was loaded); no decided transaction is unreplicated.
// mu held.
func (p *Partition) resetTxnsLocked() {
	p.mu.txn = txnState{open: map[int64]int64{}}
	for id, e := range p.producers {
		if e.TxnFirst >= 0 {
			p.mu.txn.open[id] = e.TxnFirst
		}
	}
}

// scanLog tracks every batch of the log from offset from into ps and then
// adds the aborted transactions it found to the index, if missing.
// appendMu held, or during Open.
func (p *Partition) scanLog(ps producers, from int64) error {
	var aborted []plog.AbortedTxn
	err := p.log.ScanControl(from, func(h batch.Header, control []byte) error {
		e, err := p.track(ps, &h, control)
		if e != nil {
			aborted = append(aborted, *e)
		}
		return err
	})
	if err != nil {
		return err
	}
	for _, e := range aborted {
		if err := p.log.AddAbortedTxn(e); err != nil {
			return err
		}
	}
	return nil
}

// rescanLocked rebuilds the producer table and transaction state from the
// whole log (after a truncation), keeping of the old table what lies below
// the log start, where the scan cannot see. appendMu held.
func (p *Partition) rescanLocked() error {
	old := p.producers
	old.truncate(p.log.LogEndOffset())
	p.mu.Lock()
	p.mu.txn = txnState{open: map[int64]int64{}}
	p.mu.Unlock()
	fresh := producers{}
	if err := p.scanLog(fresh, p.log.LogStartOffset()); err != nil {
		return err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	for id, e := range old {
		if _, ok := fresh[id]; !ok {
			fresh[id] = e
			if e.TxnFirst >= 0 {
				p.mu.txn.open[id] = e.TxnFirst
			}
		}
	}
	p.producers = fresh
	return nil
}

// ReadCommitted is Read for isolation_level=1 (read_committed): whole
// batches from offset up to the last stable offset, and the aborted
// transactions that overlap what was read (Kafka's
// collectAbortedTransactions: those whose abort marker is at or after
// offset and whose first offset is before the end of the last batch read).
// The list is empty, not nil, when there are none.
func (p *Partition) ReadCommitted(dst []byte, offset int64, maxBytes int, minOne bool) ([]byte, Offsets, []AbortedTxn, error) {
	p.mu.Lock()
	closed := p.mu.closed
	p.mu.Unlock()
	o := p.Offsets()
	if closed {
		return dst, o, nil, ErrClosed
	}
	start := len(dst)
	dst, o, err := p.readTo(dst, offset, o.LastStable, maxBytes, minOne, o)
	if err != nil {
		return dst, o, nil, err
	}
	aborted := []AbortedTxn{}
	if next, ok := nextOffset(dst[start:]); ok {
		for _, e := range p.log.AbortedTxns(offset, next) {
			aborted = append(aborted, AbortedTxn{ProducerID: e.ProducerID, FirstOffset: e.FirstOffset})
		}
	}
	return dst, o, aborted, nil
}

// Producers returns the producers this partition knows (DescribeProducers),
// by producer id.
func (p *Partition) Producers() []ProducerState {
	p.appendMu.Lock()
	defer p.appendMu.Unlock()
	out := make([]ProducerState, 0, len(p.producers))
	for _, id := range slices.Sorted(maps.Keys(p.producers)) {
		e := p.producers[id]
		st := ProducerState{
			ProducerID: id, ProducerEpoch: e.Epoch, LastSequence: -1, LastTimestamp: e.LastTimestamp,
			CoordinatorEpoch: e.CoordinatorEpoch, CurrentTxnStartOffset: e.TxnFirst,
		}
		if n := len(e.Batches); n > 0 {
			st.LastSequence = e.Batches[n-1].LastSeq
		}
		out = append(out, st)
	}
	return out
}
