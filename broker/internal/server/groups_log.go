package server

// The group shard's log: replaying a __consumer_offsets partition into its
// core (transactional batches and their markers included), and the record
// batches the core's Outputs are written as.

import (
	"encoding/binary"
	"errors"
	"fmt"
	"time"

	"github.com/runnel-io/runnel/broker/internal/batch"
	"github.com/runnel-io/runnel/broker/internal/group"
	"github.com/runnel-io/runnel/broker/internal/partition"
)

// errBadMarker is a control batch whose record is not a control record.
var errBadMarker = errors.New("server: malformed control record")

// load replays the partition into the core: records of plain batches with
// Load, of transactional batches with LoadTxn (open under their producer),
// and transaction markers (control batches) with LoadMarker.
func (sh *groupShard) load(now time.Time) error {
	core := sh.mu.core
	return readAll(sh.part, func(h *batch.Header, b []byte) error { return sh.loadBatch(now, core, h, b) })
}

// loadBatch replays one batch. A record or marker that does not parse is
// skipped with a warning: one must not keep every other group of the
// partition from loading.
func (sh *groupShard) loadBatch(now time.Time, core *group.Coordinator, h *batch.Header, b []byte) error {
	skip := func(what string, offset int64, err error) {
		sh.gc.s.logger.Warn("skipping a "+what, "partition", sh.part.Index, "offset", offset, "err", err)
	}
	if h.IsControl() {
		var seen bool
		return batch.ForEachRecord(b, 1<<20, func(r *batch.Record) error {
			if seen {
				return nil // a marker batch has one record
			}
			seen = true
			commit, ok, err := parseMarker(r.Key)
			switch {
			case err != nil:
				skip("control record", h.BaseOffset+int64(r.OffsetDelta), err)
			case ok:
				core.LoadMarker(now, h.ProducerID, commit)
			}
			return nil
		})
	}
	producer := int64(-1)
	if h.IsTransactional() {
		producer = h.ProducerID
	}
	return batch.ForEachRecord(b, 64<<20, func(r *batch.Record) error {
		if err := core.LoadTxn(now, producer, r.Key, r.Value); err != nil {
			skip("group record", h.BaseOffset+int64(r.OffsetDelta), err)
		}
		return nil
	})
}

// parseMarker reads a control record's key, Kafka's ControlRecordType:
// version int16, type int16 (0 abort, 1 commit; later versions may append
// fields, which are ignored). ok is false for other control types (they
// are no transaction markers); bad bytes give errBadMarker.
func parseMarker(key []byte) (commit, ok bool, err error) {
	if len(key) < 4 {
		return false, false, fmt.Errorf("%w: key of %d bytes", errBadMarker, len(key))
	}
	if v := int16(binary.BigEndian.Uint16(key)); v < 0 {
		return false, false, fmt.Errorf("%w: version %d", errBadMarker, v)
	}
	switch t := int16(binary.BigEndian.Uint16(key[2:])); t {
	case 0, 1:
		return t == 1, true, nil
	}
	return false, false, nil
}

// appendLocked writes an Output's records to the shard's partition as one
// record batch, so that a crash keeps all or none of them (Kafka writes
// the records of one coordinator operation as one batch): a transactional
// batch of Output.Producer when it is set (a TxnOffsetCommit). A batch over
// the offsets topic's max.message.bytes fails with
// partition.ErrRecordTooLarge for an Atomic Output (an OffsetCommit or
// TxnOffsetCommit); any other (tombstones of expiry or deletions) is then
// split in halves until the parts fit. Batches go through
// Partition.AppendCoordinator, as Kafka's coordinators write: no sequence
// numbers (base sequence -1), and a producer epoch older than the
// partition has seen (the producer was fenced) fails with
// partition.ErrInvalidEpoch.
func (sh *groupShard) appendLocked(out group.Output) error {
	return sh.appendRecordsLocked(out.Records, out.Atomic, out.Producer, sh.gc.s.now().UnixMilli())
}

func (sh *groupShard) appendRecordsLocked(recs []group.Record, atomic bool, prod *group.Producer, nowMs int64) error {
	_, err := sh.part.AppendCoordinator(encodeBatch(recs, prod, nowMs))
	if errors.Is(err, partition.ErrRecordTooLarge) && !atomic && len(recs) > 1 {
		half := len(recs) / 2
		if err := sh.appendRecordsLocked(recs[:half], false, prod, nowMs); err != nil {
			return err
		}
		return sh.appendRecordsLocked(recs[half:], false, prod, nowMs)
	}
	return err
}

// encodeBatch builds an uncompressed v2 record batch of recs: a plain one
// (no producer), or with prod a transactional batch of that producer id
// and epoch (without sequence numbers, as coordinators write).
func encodeBatch(recs []group.Record, prod *group.Producer, nowMs int64) []byte {
	var records []byte
	for i, r := range recs {
		records = batch.AppendRecord(records, &batch.Record{OffsetDelta: int32(i), Key: r.Key, Value: r.Value})
	}
	h := batch.Header{
		PartitionLeaderEpoch: -1, LastOffsetDelta: int32(len(recs) - 1),
		FirstTimestamp: nowMs, MaxTimestamp: nowMs,
		ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1, NumRecords: int32(len(recs)),
	}
	if prod != nil {
		h.Attributes |= batch.AttrTransactional
		h.ProducerID, h.ProducerEpoch = prod.ID, prod.Epoch
	}
	return batch.AppendBatch(make([]byte, 0, batch.HeaderSize+len(records)), &h, records)
}
