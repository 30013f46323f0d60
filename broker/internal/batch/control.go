package batch

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// Transaction markers (KIP-98): a control batch (attributes: control and
// transactional bits) from the producer that ends its transaction, with one
// record whose key is Kafka's ControlRecordKey (version int16 0, type int16:
// 0 abort, 1 commit) and whose value is Kafka's EndTxnMarker (version int16
// 0, coordinator epoch int32). The transaction coordinator has them written
// (WriteTxnMarkers); readers and the producer state learn from them where a
// transaction ended and how.

// Control record types, the key's type field.
const (
	ControlAbort  int16 = 0
	ControlCommit int16 = 1
)

// ErrNotMarker: a control batch whose record is not a transaction marker
// (too short, a negative version, or a control type other than abort and
// commit). Kafka ignores control records of types it does not know.
var ErrNotMarker = errors.New("batch: control batch is not a transaction marker")

// EndTxnMarker is what a transaction marker says.
type EndTxnMarker struct {
	Commit           bool
	CoordinatorEpoch int32
}

// AppendEndTxnMarker appends to dst a whole control batch (base offset 0,
// no leader epoch yet: the log stamps both) in which producerID at
// producerEpoch ends its transaction as m says, timestamped ts. Its base
// sequence is -1, as Kafka writes markers.
func AppendEndTxnMarker(dst []byte, producerID int64, producerEpoch int16, m EndTxnMarker, ts int64) []byte {
	typ := ControlAbort
	if m.Commit {
		typ = ControlCommit
	}
	key := kmsg.ControlRecordKey{Version: 0, Type: kmsg.ControlRecordKeyType(typ)}
	val := kmsg.EndTxnMarker{Version: 0, CoordinatorEpoch: m.CoordinatorEpoch}
	var kb, vb [8]byte
	rec := AppendRecord(nil, &Record{Key: key.AppendTo(kb[:0]), Value: val.AppendTo(vb[:0])})
	h := Header{
		PartitionLeaderEpoch: -1,
		Attributes:           AttrControl | AttrTransactional,
		FirstTimestamp:       ts,
		MaxTimestamp:         ts,
		ProducerID:           producerID,
		ProducerEpoch:        producerEpoch,
		BaseSequence:         -1,
		NumRecords:           1,
	}
	return AppendBatch(dst, &h, rec)
}

// ParseEndTxnMarker reads the marker in b, one whole control batch whose
// CRC the caller trusts (a stored batch). It fails with ErrNotMarker for a
// control record of another kind, or another error of this package for
// malformed records. Only the first record counts, as in Kafka.
func ParseEndTxnMarker(b []byte) (EndTxnMarker, error) {
	var m EndTxnMarker
	h, err := ParseHeader(b)
	if err != nil {
		return m, err
	}
	if !h.IsControl() {
		return m, fmt.Errorf("%w: not a control batch", ErrNotMarker)
	}
	found := false
	err = ForEachRecord(b, 1<<10, func(r *Record) error {
		if found {
			return nil
		}
		found = true
		var perr error
		m, perr = parseMarkerRecord(r.Key, r.Value)
		return perr
	})
	if err == nil && !found {
		err = fmt.Errorf("%w: no record", ErrNotMarker)
	}
	return m, err
}

// parseMarkerRecord parses a control record's key and value as a marker.
// Like Kafka, it reads a newer version's known prefix.
func parseMarkerRecord(key, value []byte) (EndTxnMarker, error) {
	var m EndTxnMarker
	if len(key) < 4 {
		return m, fmt.Errorf("%w: key of %d bytes", ErrNotMarker, len(key))
	}
	be := binary.BigEndian
	if v := int16(be.Uint16(key)); v < 0 {
		return m, fmt.Errorf("%w: key version %d", ErrNotMarker, v)
	}
	switch typ := int16(be.Uint16(key[2:])); typ {
	case ControlAbort:
	case ControlCommit:
		m.Commit = true
	default:
		return m, fmt.Errorf("%w: control type %d", ErrNotMarker, typ)
	}
	if len(value) < 6 {
		return m, fmt.Errorf("%w: value of %d bytes", ErrNotMarker, len(value))
	}
	if v := int16(be.Uint16(value)); v < 0 {
		return m, fmt.Errorf("%w: value version %d", ErrNotMarker, v)
	}
	m.CoordinatorEpoch = int32(be.Uint32(value[2:]))
	return m, nil
}
