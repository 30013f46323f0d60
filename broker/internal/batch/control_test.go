package batch_test

import (
	"errors"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/runnel-io/runnel/broker/internal/batch"
)

// A marker built here is a valid stored control batch that kmsg reads as
// Kafka's EndTxnMarker, and that ParseEndTxnMarker reads back.
func TestEndTxnMarkerRoundTrip(t *testing.T) {
	for _, m := range []batch.EndTxnMarker{{Commit: true, CoordinatorEpoch: 7}, {Commit: false, CoordinatorEpoch: 0}, {Commit: true, CoordinatorEpoch: -1}} {
		b := batch.AppendEndTxnMarker(nil, 42, 3, m, 1234)
		h, err := batch.Validate(b, batch.ValidateOptions{AllowControl: true, Stored: true})
		if err != nil {
			t.Fatalf("Validate: %v", err)
		}
		if !h.IsControl() || !h.IsTransactional() || h.ProducerID != 42 || h.ProducerEpoch != 3 ||
			h.BaseSequence != -1 || h.NumRecords != 1 || h.LastOffsetDelta != 0 || h.MaxTimestamp != 1234 {
			t.Fatalf("header %+v", h)
		}
		got, err := batch.ParseEndTxnMarker(b)
		if err != nil || got != m {
			t.Fatalf("ParseEndTxnMarker = %+v, %v; want %+v", got, err, m)
		}
		// kmsg agrees on the record's key and value.
		var rb kmsg.RecordBatch
		if err := rb.ReadFrom(b); err != nil {
			t.Fatal(err)
		}
		err = batch.ForEachRecord(b, 1<<10, func(r *batch.Record) error {
			var k kmsg.ControlRecordKey
			var v kmsg.EndTxnMarker
			if err := k.ReadFrom(r.Key); err != nil {
				return err
			}
			if err := v.ReadFrom(r.Value); err != nil {
				return err
			}
			if (k.Type == kmsg.ControlRecordKeyTypeCommit) != m.Commit || v.CoordinatorEpoch != m.CoordinatorEpoch {
				t.Fatalf("kmsg reads %+v %+v", k, v)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
}

// Control records that are not markers, and data batches, are refused
// with ErrNotMarker.
func TestParseEndTxnMarkerRefuses(t *testing.T) {
	if _, err := batch.ParseEndTxnMarker(build(t, batch.CodecNone, false, sampleRecords()[:1], nil)); !errors.Is(err, batch.ErrNotMarker) {
		t.Fatalf("data batch: %v", err)
	}
	control := func(key, value []byte) []byte {
		rec := batch.AppendRecord(nil, &batch.Record{Key: key, Value: value})
		h := batch.Header{Attributes: batch.AttrControl | batch.AttrTransactional, ProducerID: 1, BaseSequence: -1, NumRecords: 1}
		return batch.AppendBatch(nil, &h, rec)
	}
	for name, b := range map[string][]byte{
		"short key":     control([]byte{0, 0, 0}, []byte{0, 0, 0, 0, 0, 1}),
		"unknown type":  control([]byte{0, 0, 0, 5}, []byte{0, 0, 0, 0, 0, 1}),
		"negative key":  control([]byte{0xff, 0xff, 0, 1}, []byte{0, 0, 0, 0, 0, 1}),
		"short value":   control([]byte{0, 0, 0, 1}, []byte{0, 0, 0}),
		"null value":    control([]byte{0, 0, 0, 1}, nil),
		"negative vers": control([]byte{0, 0, 0, 1}, []byte{0x80, 0, 0, 0, 0, 1}),
	} {
		if _, err := batch.ParseEndTxnMarker(b); !errors.Is(err, batch.ErrNotMarker) {
			t.Errorf("%s: %v", name, err)
		}
	}
	// A newer version's known prefix is read, as Kafka does.
	m, err := batch.ParseEndTxnMarker(control([]byte{0, 1, 0, 1, 9}, []byte{0, 1, 0, 0, 0, 4, 9, 9}))
	if err != nil || !m.Commit || m.CoordinatorEpoch != 4 {
		t.Fatalf("newer version: %+v, %v", m, err)
	}
}

// FuzzParseEndTxnMarker: arbitrary bytes never panic; whatever parses as a
// marker rebuilds to a batch that parses the same.
func FuzzParseEndTxnMarker(f *testing.F) {
	f.Add(batch.AppendEndTxnMarker(nil, 1, 0, batch.EndTxnMarker{Commit: true, CoordinatorEpoch: 3}, 5))
	f.Add(batch.AppendEndTxnMarker(nil, 9, 2, batch.EndTxnMarker{}, -1))
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := batch.ParseEndTxnMarker(b)
		if err != nil {
			return
		}
		again, err := batch.ParseEndTxnMarker(batch.AppendEndTxnMarker(nil, 1, 1, m, 0))
		if err != nil || again != m {
			t.Fatalf("rebuilt %+v: %+v, %v", m, again, err)
		}
	})
}

// A transactional batch needs a producer id; a coordinator's batch may
// have one without a base sequence.
func TestValidateTransactional(t *testing.T) {
	noPID := build(t, batch.CodecNone, false, sampleRecords()[:2], func(rb *kmsg.RecordBatch) {
		rb.Attributes |= batch.AttrTransactional
	})
	if _, err := batch.Validate(noPID, batch.ValidateOptions{}); !errors.Is(err, batch.ErrNoProducerID) {
		t.Fatalf("transactional without producer id: %v", err)
	}
	noSeq := build(t, batch.CodecNone, false, sampleRecords()[:2], func(rb *kmsg.RecordBatch) {
		rb.Attributes |= batch.AttrTransactional
		rb.ProducerID, rb.ProducerEpoch, rb.FirstSequence = 5, 0, -1
	})
	if _, err := batch.Validate(noSeq, batch.ValidateOptions{}); !errors.Is(err, batch.ErrSequence) {
		t.Fatalf("client batch without a sequence: %v", err)
	}
	if _, err := batch.Validate(noSeq, batch.ValidateOptions{Coordinator: true}); err != nil {
		t.Fatalf("coordinator batch without a sequence: %v", err)
	}
}
