package log

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/runnel-io/runnel/broker/internal/batch"
)

// fourSegments builds a log of four segments of three batches (two records
// each); the batches of segment i carry timestamps base+i*hour.
func fourSegments(t *testing.T, h *harness) (*Log, [][]byte) {
	t.Helper()
	one := len(makeBatch(t, 2, 0, 60))
	h.cfg.SegmentBytes = int64(3 * one)
	l := h.open()
	var want [][]byte
	base := h.clock.Now().UnixMilli()
	for i := range 4 {
		want = append(want, appendN(t, l, 3, 2, base+int64(i)*time.Hour.Milliseconds(), 60, 1)...)
	}
	if l.NumSegments() != 4 {
		t.Fatalf("setup: %d segments", l.NumSegments())
	}
	return l, want
}

func TestRetentionByTime(t *testing.T) {
	eachFS(t, func(t *testing.T, h *harness) {
		l, want := fourSegments(t, h)
		defer func() { mustClose(t, l) }()
		cfg := h.cfg
		cfg.RetentionMs = (90 * time.Minute).Milliseconds()
		l.SetConfig(cfg)
		// Segment i's largest timestamp is base + i hours + 2 ms.
		if n, err := l.EnforceRetention(); err != nil || n != 0 {
			t.Fatalf("nothing expired yet: %d, %v", n, err)
		}
		h.clock.Advance(3*time.Hour + time.Minute) // now - 90m is past segments 0 and 1
		n, err := l.EnforceRetention()
		if err != nil || n != 2 {
			t.Fatalf("EnforceRetention = %d, %v; want 2", n, err)
		}
		if l.LogStartOffset() != 12 || l.NumSegments() != 2 {
			t.Fatalf("LSO %d, %d segments", l.LogStartOffset(), l.NumSegments())
		}
		if _, err := l.Read(nil, 11, 100, 1<<20, true); !errors.Is(err, ErrOffsetOutOfRange) {
			t.Fatalf("read below LSO: %v", err)
		}
		equalBatches(t, readAll(t, l), want[6:])
		if got := segmentFiles(t, h.fs, h.dir, logSuffix); fmt.Sprint(got) != "[00000000000000000012.log 00000000000000000018.log]" {
			t.Fatalf("files %v", got)
		}
		if got := segmentFiles(t, h.fs, h.dir, indexSuffix); len(got) != 1 {
			t.Fatalf("index files of deleted segments remain: %v", got)
		}
		// Everything expired: the active segment stays.
		h.clock.Advance(24 * time.Hour)
		if n, err := l.EnforceRetention(); err != nil || n != 1 || l.NumSegments() != 1 || l.LogStartOffset() != 18 {
			t.Fatalf("EnforceRetention = %d, %v; %d segments, LSO %d", n, err, l.NumSegments(), l.LogStartOffset())
		}
		if n, _ := l.EnforceRetention(); n != 0 {
			t.Fatal("deleted the active segment")
		}
		mustClose(t, l)
		l = h.open()
		if l.LogStartOffset() != 18 || l.LogEndOffset() != 24 {
			t.Fatalf("after reopen [%d, %d)", l.LogStartOffset(), l.LogEndOffset())
		}
	})
}

func TestRetentionByBytes(t *testing.T) {
	eachFS(t, func(t *testing.T, h *harness) {
		l, want := fourSegments(t, h)
		defer mustClose(t, l)
		seg := int64(3 * len(want[0]))
		cfg := h.cfg
		for _, tc := range []struct {
			limit   int64
			deleted int
		}{
			{4 * seg, 0},
			{3*seg + 1, 0},
			{3 * seg, 1}, // dropping segment 0 leaves exactly the limit
			{seg + 1, 1}, // segment 1 can go only if two remain >= limit: 2*seg >= seg+1
			{0, 1},       // all but the active
			{0, 0},
		} {
			cfg.RetentionBytes = tc.limit
			l.SetConfig(cfg)
			n, err := l.EnforceRetention()
			if err != nil || n != tc.deleted {
				t.Fatalf("limit %d: deleted %d, %v; want %d", tc.limit, n, err, tc.deleted)
			}
		}
		if l.NumSegments() != 1 || l.LogStartOffset() != 18 || l.Size() != seg {
			t.Fatalf("%d segments, LSO %d, size %d", l.NumSegments(), l.LogStartOffset(), l.Size())
		}
	})
}

func TestDeleteRecords(t *testing.T) {
	eachFS(t, func(t *testing.T, h *harness) {
		l, want := fourSegments(t, h)
		appendN(t, l, 1, 2, 0, 60, 2) // epoch 2 starts at 24
		if err := l.DeleteRecords(l.LogEndOffset() + 1); !errors.Is(err, ErrOffsetOutOfRange) {
			t.Fatalf("DeleteRecords beyond LEO: %v", err)
		}
		if err := l.DeleteRecords(9); err != nil { // inside segment 1's last batch (8-9)
			t.Fatal(err)
		}
		if l.LogStartOffset() != 9 || l.NumSegments() != 4 {
			t.Fatalf("LSO %d, %d segments", l.LogStartOffset(), l.NumSegments())
		}
		if err := l.DeleteRecords(13); err != nil {
			t.Fatal(err)
		}
		if l.LogStartOffset() != 13 || l.NumSegments() != 3 {
			t.Fatalf("LSO %d, %d segments", l.LogStartOffset(), l.NumSegments())
		}
		if err := l.DeleteRecords(5); err != nil || l.LogStartOffset() != 13 {
			t.Fatalf("DeleteRecords below LSO moved it: %v, %d", err, l.LogStartOffset())
		}
		// Reading at the LSO returns the batch containing it.
		got, err := l.Read(nil, 13, 100, 1, true)
		if err != nil || string(got) != string(want[6]) {
			t.Fatalf("Read(LSO): %v", err)
		}
		if got := fmt.Sprint(l.Epochs().entries()); got != "[{1 13} {2 24}]" {
			t.Fatalf("epochs %s", got)
		}
		mustClose(t, l)
		l = h.open()
		if l.LogStartOffset() != 13 || fmt.Sprint(l.Epochs().entries()) != "[{1 13} {2 24}]" {
			t.Fatalf("after reopen LSO %d, epochs %v", l.LogStartOffset(), l.Epochs().entries())
		}
		// Up to the LEO: every non-active segment goes.
		if err := l.DeleteRecords(l.LogEndOffset()); err != nil {
			t.Fatal(err)
		}
		if l.NumSegments() != 1 || l.LogStartOffset() != 26 {
			t.Fatalf("%d segments, LSO %d", l.NumSegments(), l.LogStartOffset())
		}
		if b, err := l.Read(nil, 26, 100, 100, true); err != nil || len(b) != 0 {
			t.Fatalf("read at LSO=LEO: %d bytes, %v", len(b), err)
		}
		mustClose(t, l)
	})
}

func TestTruncate(t *testing.T) {
	// Four segments of three 2-record batches: segment i holds offsets
	// 6i..6i+5, batches start at even offsets.
	tests := []struct {
		name     string
		to       int64
		leo      int64
		segments int
	}{
		{"inside the active segment at a batch boundary", 20, 20, 4},
		{"inside a batch drops the whole batch", 21, 20, 4},
		{"at a segment boundary keeps an empty segment", 12, 12, 3},
		{"inside an older segment", 9, 8, 2},
		{"to zero", 0, 0, 1},
		{"at the log end", 24, 24, 4},
		{"beyond the log end", 30, 24, 4},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			eachFS(t, func(t *testing.T, h *harness) {
				l, want := fourSegments(t, h)
				// Epoch 2 starts at 14, epoch 3 at 20.
				l.Epochs().Assign(2, 14)
				l.Epochs().Assign(3, 20)
				if err := l.Truncate(tc.to); err != nil {
					t.Fatal(err)
				}
				if l.LogEndOffset() != tc.leo || l.NumSegments() != tc.segments {
					t.Fatalf("LEO %d, %d segments; want %d, %d", l.LogEndOffset(), l.NumSegments(), tc.leo, tc.segments)
				}
				kept := want[:tc.leo/2]
				equalBatches(t, readAll(t, l), kept)
				for _, e := range l.Epochs().entries() {
					if e.StartOffset >= tc.leo && tc.leo < 24 {
						t.Fatalf("epoch entry %v not truncated at %d", e, tc.leo)
					}
				}
				if got := segmentFiles(t, h.fs, h.dir, logSuffix); len(got) != tc.segments {
					t.Fatalf("segment files %v", got)
				}
				// Appends continue at the new end, with a new epoch.
				more := appendN(t, l, 2, 2, 0, 60, 4)
				if hd, _ := batch.ParseHeader(more[0]); hd.BaseOffset != tc.leo {
					t.Fatalf("append at %d after truncation to %d", hd.BaseOffset, tc.leo)
				}
				if e, start := l.Epochs().Latest(); e != 4 || start != tc.leo {
					t.Fatalf("latest epoch (%d, %d)", e, start)
				}
				all := append(append([][]byte(nil), kept...), more...)
				equalBatches(t, readAll(t, l), all)
				// Both a clean reopen and a crash see the same log.
				mustClose(t, l)
				l = h.open()
				equalBatches(t, readAll(t, l), all)
				mustClose(t, l)
				h.crash()
				l = h.open()
				equalBatches(t, readAll(t, l), all)
				mustClose(t, l)
			})
		})
	}
}

func TestTruncateBelowLogStart(t *testing.T) {
	eachFS(t, func(t *testing.T, h *harness) {
		l, _ := fourSegments(t, h)
		if err := l.DeleteRecords(14); err != nil {
			t.Fatal(err)
		}
		if l.NumSegments() != 2 {
			t.Fatalf("setup: %d segments", l.NumSegments())
		}
		// Below the first segment (12): the log restarts empty at 10.
		if err := l.Truncate(10); err != nil {
			t.Fatal(err)
		}
		if l.LogStartOffset() != 10 || l.LogEndOffset() != 10 || l.NumSegments() != 1 {
			t.Fatalf("[%d, %d) in %d segments", l.LogStartOffset(), l.LogEndOffset(), l.NumSegments())
		}
		if len(l.Epochs().entries()) != 0 {
			t.Fatalf("epochs %v", l.Epochs().entries())
		}
		appendN(t, l, 1, 1, 0, 1, 5)
		mustClose(t, l)
		l = h.open()
		defer mustClose(t, l)
		if l.LogStartOffset() != 10 || l.LogEndOffset() != 11 {
			t.Fatalf("after reopen [%d, %d)", l.LogStartOffset(), l.LogEndOffset())
		}
	})
}

func TestTruncateInsideBatchBelowLogStart(t *testing.T) {
	eachFS(t, func(t *testing.T, h *harness) {
		l, _ := fourSegments(t, h)
		if err := l.DeleteRecords(15); err != nil { // inside batch 14-15
			t.Fatal(err)
		}
		if err := l.Truncate(15); err != nil { // drops batch 14-15: LEO 14 < LSO 15
			t.Fatal(err)
		}
		if l.LogStartOffset() != 14 || l.LogEndOffset() != 14 {
			t.Fatalf("[%d, %d)", l.LogStartOffset(), l.LogEndOffset())
		}
		mustClose(t, l)
		l = h.open()
		defer mustClose(t, l)
		if l.LogStartOffset() != 14 || l.LogEndOffset() != 14 {
			t.Fatalf("after reopen [%d, %d)", l.LogStartOffset(), l.LogEndOffset())
		}
	})
}

func TestAppendFollower(t *testing.T) {
	eachFS(t, func(t *testing.T, h *harness) {
		one := len(makeBatch(t, 2, 0, 60))
		h.cfg.SegmentBytes = int64(3 * one)
		l := h.open()
		defer mustClose(t, l)
		// A leader's batches: epochs 1 then 2, offsets from 0.
		var wire []byte
		var want [][]byte
		for i := range 8 {
			b := withOffsets(makeBatch(t, 2, int64(i), 60), int64(2*i), int32(1+i/5))
			want = append(want, b)
			wire = append(wire, b...)
		}
		bad := withOffsets(makeBatch(t, 2, 0, 60), 2, 1)
		if err := l.AppendFollower(bad); !errors.Is(err, ErrNonContiguous) {
			t.Fatalf("non-contiguous: %v", err)
		}
		corrupt := append([]byte(nil), wire...)
		corrupt[len(corrupt)-1] ^= 1
		if err := l.AppendFollower(corrupt); !errors.Is(err, ErrInvalidBatch) || l.LogEndOffset() != 0 {
			t.Fatalf("bad CRC: %v, LEO %d", err, l.LogEndOffset())
		}
		if err := l.AppendFollower(wire[:len(wire)-5]); !errors.Is(err, ErrInvalidBatch) || l.LogEndOffset() != 0 {
			t.Fatalf("partial batch: %v, LEO %d", err, l.LogEndOffset())
		}
		if err := l.AppendFollower(wire[:3*one]); err != nil {
			t.Fatal(err)
		}
		if err := l.AppendFollower(wire[3*one:]); err != nil {
			t.Fatal(err)
		}
		if l.LogEndOffset() != 16 || l.NumSegments() != 3 {
			t.Fatalf("LEO %d, %d segments", l.LogEndOffset(), l.NumSegments())
		}
		equalBatches(t, readAll(t, l), want)
		if got := fmt.Sprint(l.Epochs().entries()); got != "[{1 0} {2 10}]" {
			t.Fatalf("epochs %s", got)
		}
		// One call spanning several segments.
		var more []byte
		for i := range 7 {
			more = append(more, withOffsets(makeBatch(t, 2, 0, 60), int64(16+2*i), 3)...)
		}
		if err := l.AppendFollower(more); err != nil {
			t.Fatal(err)
		}
		if l.LogEndOffset() != 30 || l.NumSegments() != 5 {
			t.Fatalf("LEO %d, %d segments", l.LogEndOffset(), l.NumSegments())
		}
		if len(readAll(t, l)) != 15 {
			t.Fatal("batches lost")
		}
	})
}

// TestTruncateFullyAndStartAt: a follower behind the leader's log start
// restarts its log there, past its old end; the restart survives a reopen
// and appends continue from it.
func TestTruncateFullyAndStartAt(t *testing.T) {
	eachFS(t, func(t *testing.T, h *harness) {
		l, _ := fourSegments(t, h)
		end := l.LogEndOffset()
		if err := l.TruncateFullyAndStartAt(end + 100); err != nil {
			t.Fatal(err)
		}
		if l.LogStartOffset() != end+100 || l.LogEndOffset() != end+100 || l.NumSegments() != 1 {
			t.Fatalf("[%d, %d) in %d segments, want both at %d in 1", l.LogStartOffset(), l.LogEndOffset(), l.NumSegments(), end+100)
		}
		if len(l.Epochs().entries()) != 0 {
			t.Fatalf("epochs %v", l.Epochs().entries())
		}
		mustClose(t, l)
		l = h.open()
		defer mustClose(t, l)
		if l.LogStartOffset() != end+100 || l.LogEndOffset() != end+100 {
			t.Fatalf("after reopen [%d, %d)", l.LogStartOffset(), l.LogEndOffset())
		}
		if err := l.TruncateFullyAndStartAt(-1); err == nil {
			t.Fatal("a negative start was accepted")
		}
	})
}
