package partition

import (
	"errors"
	"testing"

	"github.com/runnel-io/runnel/broker/internal/batch"
)

func hdr(pid int64, epoch int16, seq int32, n int32, base int64) *batch.Header {
	return &batch.Header{ProducerID: pid, ProducerEpoch: epoch, BaseSequence: seq, LastOffsetDelta: n - 1, NumRecords: n, BaseOffset: base}
}

func TestProducersCheck(t *testing.T) {
	type step struct {
		name    string
		h       *batch.Header
		wantErr error
		wantDup int64 // base offset of the duplicate, or -1
	}
	steps := []step{
		{"first batch of a new producer must start at 0", hdr(7, 0, 3, 1, 0), ErrOutOfOrderSequence, -1},
		{"first batch", hdr(7, 0, 0, 3, 0), nil, -1},
		{"next batch", hdr(7, 0, 3, 2, 3), nil, -1},
		{"duplicate of the first", hdr(7, 0, 0, 3, 99), nil, 0},
		{"duplicate of the last", hdr(7, 0, 3, 2, 99), nil, 3},
		{"gap", hdr(7, 0, 6, 1, 5), ErrOutOfOrderSequence, -1},
		{"old epoch", hdr(7, -1, 5, 1, 5), ErrInvalidEpoch, -1},
		{"new epoch must restart at 0", hdr(7, 1, 5, 1, 5), ErrOutOfOrderSequence, -1},
		{"new epoch", hdr(7, 1, 0, 1, 5), nil, -1},
		{"no producer id is never checked", hdr(-1, -1, -1, 1, 6), nil, -1},
		{"another producer is independent", hdr(8, 0, 0, 1, 7), nil, -1},
	}
	ps := producers{}
	for _, s := range steps {
		dup, err := ps.check(s.h)
		if !errors.Is(err, s.wantErr) || (s.wantErr == nil && err != nil) {
			t.Fatalf("%s: err %v, want %v", s.name, err, s.wantErr)
		}
		switch {
		case s.wantDup >= 0 && (dup == nil || dup.BaseOffset != s.wantDup):
			t.Fatalf("%s: dup %+v, want base offset %d", s.name, dup, s.wantDup)
		case s.wantDup < 0 && dup != nil:
			t.Fatalf("%s: unexpected dup %+v", s.name, dup)
		}
		if err == nil && dup == nil {
			ps.record(s.h)
		}
	}
}

func TestProducersKeepFiveAndWrap(t *testing.T) {
	ps := producers{}
	var base int64
	seq := int32(0)
	for i := 0; i < 7; i++ {
		h := hdr(1, 0, seq, 2, base)
		if _, err := ps.check(h); err != nil {
			t.Fatal(err)
		}
		ps.record(h)
		seq += 2
		base += 2
	}
	if n := len(ps[1].Batches); n != keptBatches {
		t.Fatalf("kept %d batches, want %d", n, keptBatches)
	}
	// The oldest two are forgotten: a retry of the first is now out of order.
	if _, err := ps.check(hdr(1, 0, 0, 2, 0)); !errors.Is(err, ErrOutOfOrderSequence) {
		t.Fatalf("forgotten batch: %v", err)
	}
	// Sequence wraps at MaxInt32 to 0.
	ps = producers{1: {Epoch: 0, Batches: []batchMeta{{FirstSeq: 0x7ffffffe, LastSeq: 0x7fffffff}}, TxnFirst: -1}}
	if _, err := ps.check(hdr(1, 0, 0, 1, 10)); err != nil {
		t.Fatalf("wrapped sequence rejected: %v", err)
	}
	ps.truncate(0)
	if len(ps) != 0 {
		t.Fatal("truncate kept batches at or after the cut")
	}
}
