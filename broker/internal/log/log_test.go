package log

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/runnel-io/runnel/broker/internal/batch"
)

func TestAppendReadRoundTrip(t *testing.T) {
	eachFS(t, func(t *testing.T, h *harness) {
		l := h.open()
		defer mustClose(t, l)
		if l.LogStartOffset() != 0 || l.LogEndOffset() != 0 {
			t.Fatalf("new log: [%d, %d)", l.LogStartOffset(), l.LogEndOffset())
		}
		var want [][]byte
		for i := range 50 {
			want = append(want, appendN(t, l, 1, 1+i%5, int64(1000+i), 100, 3)...)
		}
		equalBatches(t, readAll(t, l), want)
		if l.LogEndOffset() != 150 {
			t.Fatalf("LEO = %d, want 150", l.LogEndOffset())
		}

		// An offset inside a batch returns that whole batch.
		hdr, _ := batch.ParseHeader(want[7])
		got, err := l.Read(nil, hdr.BaseOffset+1, 1000, 1, true)
		if err != nil {
			t.Fatal(err)
		}
		if hdr.LastOffsetDelta == 0 {
			hdr, _ = batch.ParseHeader(want[8])
			got, _ = l.Read(nil, hdr.BaseOffset, 1000, 1, true)
		}
		if bs := splitBatches(t, got); len(bs) != 1 {
			t.Fatalf("minOne read returned %d batches", len(bs))
		}

		// dst is appended to.
		prefix := []byte("prefix")
		got, err = l.Read(prefix, 0, 1000, 1, true)
		if err != nil || string(got[:6]) != "prefix" || len(got) != 6+len(want[0]) {
			t.Fatalf("Read into dst: %q..., %v", got[:6], err)
		}

		// LEO returns nothing; beyond LEO and below LSO are out of range.
		if got, err := l.Read(nil, 150, 1000, 1<<20, true); err != nil || len(got) != 0 {
			t.Fatalf("Read(LEO) = %d bytes, %v", len(got), err)
		}
		if _, err := l.Read(nil, 151, 1000, 1<<20, true); !errors.Is(err, ErrOffsetOutOfRange) {
			t.Fatalf("Read(LEO+1) err = %v", err)
		}
		if _, err := l.Read(nil, -1, 1000, 1<<20, true); !errors.Is(err, ErrOffsetOutOfRange) {
			t.Fatalf("Read(-1) err = %v", err)
		}
	})
}

func TestReadLimits(t *testing.T) {
	eachFS(t, func(t *testing.T, h *harness) {
		l := h.open()
		defer mustClose(t, l)
		// Ten batches of 3 records each, offsets 0-2, 3-5, ... 27-29.
		want := appendN(t, l, 10, 3, 5000, 50, 0)
		size := len(want[0])
		tests := []struct {
			name              string
			offset, maxOffset int64
			maxBytes          int
			minOne            bool
			wantFirst, wantN  int // index of first batch, number of batches
		}{
			{"all", 0, 30, 1 << 20, false, 0, 10},
			{"maxOffset at batch end", 0, 6, 1 << 20, false, 0, 2},
			{"maxOffset inside batch excludes it", 0, 7, 1 << 20, false, 0, 2},
			{"maxOffset below offset's batch end", 3, 5, 1 << 20, true, 0, 0},
			{"offset at maxOffset", 6, 6, 1 << 20, true, 0, 0},
			{"maxBytes exact", 0, 30, 3 * size, false, 0, 3},
			{"maxBytes one short", 0, 30, 3*size - 1, false, 0, 2},
			{"maxBytes below one batch, minOne", 4, 30, 10, true, 1, 1},
			{"maxBytes below one batch, no minOne", 4, 30, 10, false, 0, 0},
			{"maxBytes zero, minOne", 9, 30, 0, true, 3, 1},
			{"middle of log", 13, 30, 2 * size, false, 4, 2},
			{"last batch", 29, 30, 1 << 20, false, 9, 1},
		}
		for _, tc := range tests {
			t.Run(tc.name, func(t *testing.T) {
				got, err := l.Read(nil, tc.offset, tc.maxOffset, tc.maxBytes, tc.minOne)
				if err != nil {
					t.Fatal(err)
				}
				var wantB [][]byte
				if tc.wantN > 0 {
					wantB = want[tc.wantFirst : tc.wantFirst+tc.wantN]
				}
				equalBatches(t, splitBatches(t, got), wantB)
			})
		}
	})
}

func TestAppendAssignsOffsetsEpochsAndTime(t *testing.T) {
	eachFS(t, func(t *testing.T, h *harness) {
		l := h.open()
		defer mustClose(t, l)
		b := makeBatch(t, 4, 100, 10)
		res, err := l.Append(b, 7)
		if err != nil {
			t.Fatal(err)
		}
		if res.BaseOffset != 0 || res.LastOffset != 3 || res.LogAppendTime != h.clock.Now().UnixMilli() {
			t.Fatalf("result %+v", res)
		}
		hdr, _ := batch.ParseHeader(b)
		if hdr.BaseOffset != 0 || hdr.PartitionLeaderEpoch != 7 {
			t.Fatalf("batch not patched: %+v", hdr)
		}
		if batch.ComputeCRC(b) != hdr.CRC {
			t.Fatal("CRC broken by patching")
		}
		res, _ = l.Append(makeBatch(t, 1, 100, 10), 7)
		if res.BaseOffset != 4 {
			t.Fatalf("second base %d", res.BaseOffset)
		}
		l.Append(makeBatch(t, 2, 100, 10), 9)
		if e, off := l.Epochs().Latest(); e != 9 || off != 5 {
			t.Fatalf("latest epoch (%d, %d), want (9, 5)", e, off)
		}
		if got := l.Epochs().entries(); fmt.Sprint(got) != "[{7 0} {9 5}]" {
			t.Fatalf("epochs %v", got)
		}

		// Bad input is rejected without writing.
		for _, bad := range [][]byte{nil, b[:30], append(makeBatch(t, 1, 1, 1), 0)} {
			if _, err := l.Append(bad, 9); !errors.Is(err, ErrInvalidBatch) {
				t.Fatalf("Append(bad) err = %v", err)
			}
		}
		if l.LogEndOffset() != 7 {
			t.Fatalf("LEO = %d", l.LogEndOffset())
		}
	})
}

func TestRollBySize(t *testing.T) {
	eachFS(t, func(t *testing.T, h *harness) {
		one := len(makeBatch(t, 2, 0, 100))
		h.cfg.SegmentBytes = int64(3*one + one/2) // three batches per segment
		h.cfg.IndexIntervalBytes = int32(one)
		l := h.open()
		want := appendN(t, l, 10, 2, 1000, 100, 1)
		if n := l.NumSegments(); n != 4 {
			t.Fatalf("NumSegments = %d, want 4", n)
		}
		if got := segmentFiles(t, h.fs, h.dir, logSuffix); fmt.Sprint(got) !=
			"[00000000000000000000.log 00000000000000000006.log 00000000000000000012.log 00000000000000000018.log]" {
			t.Fatalf("segments %v", got)
		}
		// Rolled segments have their index files; the active one gets them at Close.
		if got := segmentFiles(t, h.fs, h.dir, indexSuffix); len(got) != 3 {
			t.Fatalf("index files %v", got)
		}
		if l.Size() != int64(10*one) {
			t.Fatalf("Size = %d, want %d", l.Size(), 10*one)
		}
		equalBatches(t, readAll(t, l), want)
		// A batch larger than a segment goes alone into a fresh segment.
		big := appendN(t, l, 1, 1, 2000, 4*one, 1)
		want = append(want, big...)
		appendN(t, l, 1, 1, 2000, 1, 1)
		if n := l.NumSegments(); n != 6 {
			t.Fatalf("NumSegments = %d, want 6", n)
		}
		mustClose(t, l)
		l = h.open()
		defer mustClose(t, l)
		equalBatches(t, readAll(t, l)[:len(want)], want)
	})
}

func TestRollByTime(t *testing.T) {
	eachFS(t, func(t *testing.T, h *harness) {
		h.cfg.SegmentMs = 60_000
		l := h.open()
		defer mustClose(t, l)
		if err := l.MaybeRoll(); err != nil || l.NumSegments() != 1 {
			t.Fatalf("empty log rolled: %v, %d segments", err, l.NumSegments())
		}
		h.clock.Advance(time.Hour)
		if err := l.MaybeRoll(); err != nil || l.NumSegments() != 1 {
			t.Fatalf("empty segment rolled by time: %v, %d segments", err, l.NumSegments())
		}
		now := h.clock.Now().UnixMilli()
		appendN(t, l, 2, 1, now, 10, 0)
		h.clock.Advance(60 * time.Second)
		if err := l.MaybeRoll(); err != nil || l.NumSegments() != 1 {
			t.Fatalf("rolled at exactly segment.ms: %v, %d", err, l.NumSegments())
		}
		h.clock.Advance(time.Millisecond)
		if err := l.MaybeRoll(); err != nil || l.NumSegments() != 2 {
			t.Fatalf("MaybeRoll after segment.ms: %v, %d segments", err, l.NumSegments())
		}
		// Append also rolls an old segment.
		appendN(t, l, 1, 1, now, 10, 0)
		h.clock.Advance(61 * time.Second)
		appendN(t, l, 1, 1, now, 10, 0)
		if l.NumSegments() != 3 {
			t.Fatalf("Append did not roll an old segment: %d segments", l.NumSegments())
		}
		// SetConfig turns it off.
		cfg := h.cfg
		cfg.SegmentMs = 0
		l.SetConfig(cfg)
		h.clock.Advance(24 * time.Hour)
		if err := l.MaybeRoll(); err != nil || l.NumSegments() != 3 {
			t.Fatalf("rolled with segment.ms=0: %v, %d", err, l.NumSegments())
		}
	})
}

func TestReopenAfterCleanCloseLoadsIndexes(t *testing.T) {
	eachFS(t, func(t *testing.T, h *harness) {
		h.cfg.SegmentBytes = 4 << 10
		h.cfg.IndexIntervalBytes = 512
		l := h.open()
		want := appendN(t, l, 40, 3, 10_000, 90, 2)
		segs := l.NumSegments()
		mustClose(t, l)
		if !fileExists(h.fs, h.fs.PathJoin(h.dir, cleanShutdownFile)) {
			t.Fatal("no clean-shutdown marker after Close")
		}
		active := segmentFiles(t, h.fs, h.dir, logSuffix)[segs-1]
		idx := readFile(t, h.fs, h.fs.PathJoin(h.dir, active[:20]+indexSuffix))

		// Corrupt a record (not the header) of the first batch of the active
		// segment. A scan would see the CRC mismatch and truncate; loading the
		// indexes of a cleanly closed segment must not scan.
		path := h.fs.PathJoin(h.dir, active)
		data := readFile(t, h.fs, path)
		data[batch.HeaderSize+5] ^= 0xff
		rewriteFile(t, h.fs, path, data)
		hdr, _ := batch.ParseHeader(data)
		for i, b := range want {
			if bh, _ := batch.ParseHeader(b); bh.BaseOffset == hdr.BaseOffset {
				want[i][batch.HeaderSize+5] ^= 0xff
			}
		}

		l = h.open()
		if fileExists(h.fs, h.fs.PathJoin(h.dir, cleanShutdownFile)) {
			t.Fatal("Open left the clean-shutdown marker")
		}
		if l.LogEndOffset() != 120 || l.NumSegments() != segs {
			t.Fatalf("after clean reopen: LEO %d, %d segments; want 120, %d (did it scan?)", l.LogEndOffset(), l.NumSegments(), segs)
		}
		equalBatches(t, readAllCRC(t, l, false), want)
		// Appends continue and the active segment's index is extended.
		appendN(t, l, 10, 1, 20_000, 100, 2)
		mustClose(t, l)
		idx2 := readFile(t, h.fs, h.fs.PathJoin(h.dir, active[:20]+indexSuffix))
		if len(idx2) < len(idx) || string(idx2[:len(idx)]) != string(idx) {
			t.Fatalf("active index not preserved: %d bytes, was %d", len(idx2), len(idx))
		}
	})
}

func TestCloseIsIdempotentAndFinal(t *testing.T) {
	eachFS(t, func(t *testing.T, h *harness) {
		l := h.open()
		appendN(t, l, 3, 1, 0, 10, 0)
		mustClose(t, l)
		mustClose(t, l)
		if _, err := l.Append(makeBatch(t, 1, 0, 1), 0); !errors.Is(err, ErrClosed) {
			t.Fatalf("Append after Close: %v", err)
		}
		if _, err := l.Read(nil, 0, 10, 100, true); !errors.Is(err, ErrClosed) {
			t.Fatalf("Read after Close: %v", err)
		}
		if err := l.Sync(); err != nil {
			t.Fatalf("Sync after Close with nothing unsynced: %v", err)
		}
		for name, err := range map[string]error{
			"Truncate":       l.Truncate(0),
			"DeleteRecords":  l.DeleteRecords(1),
			"MaybeRoll":      l.MaybeRoll(),
			"AppendFollower": l.AppendFollower(nil),
			"Scan":           l.Scan(0, func(batch.Header) error { return nil }),
		} {
			if !errors.Is(err, ErrClosed) {
				t.Errorf("%s after Close: %v", name, err)
			}
		}
	})
}

func TestDelete(t *testing.T) {
	eachFS(t, func(t *testing.T, h *harness) {
		l := h.open()
		appendN(t, l, 3, 1, 0, 10, 0)
		if err := l.Delete(); err != nil {
			t.Fatal(err)
		}
		if fileExists(h.fs, h.dir) {
			t.Fatal("directory still exists")
		}
	})
}

func TestScan(t *testing.T) {
	eachFS(t, func(t *testing.T, h *harness) {
		h.cfg.SegmentBytes = 2 << 10
		l := h.open()
		defer mustClose(t, l)
		want := appendN(t, l, 30, 2, 0, 100, 0)
		var got []int64
		if err := l.Scan(5, func(hd batch.Header) error { got = append(got, hd.BaseOffset); return nil }); err != nil {
			t.Fatal(err)
		}
		if len(got) != len(want)-2 || got[0] != 4 || got[len(got)-1] != 58 {
			t.Fatalf("Scan(5) bases %v", got)
		}
		stop := errors.New("stop")
		n := 0
		if err := l.Scan(0, func(batch.Header) error { n++; return stop }); !errors.Is(err, stop) || n != 1 {
			t.Fatalf("Scan did not stop: %v after %d", err, n)
		}
		if err := l.Scan(61, func(batch.Header) error { return nil }); !errors.Is(err, ErrOffsetOutOfRange) {
			t.Fatalf("Scan beyond LEO: %v", err)
		}
	})
}

func TestTimestampLookups(t *testing.T) {
	eachFS(t, func(t *testing.T, h *harness) {
		h.cfg.SegmentBytes = 1500
		h.cfg.IndexIntervalBytes = 300
		l := h.open()
		// Timestamps wander: up, down, repeated, and a peak in the middle.
		tss := []int64{100, 105, 103, 110, 110, 90, 120, 118, 500, 130, 140, 140, 135, 150, 160, 155, 170, 171, 172, 180}
		var all [][]byte
		for _, ts := range tss {
			b := makeBatch(t, 2, ts-1, 80) // MaxTimestamp = ts
			res, err := l.Append(b, 0)
			if err != nil {
				t.Fatal(err)
			}
			all = append(all, withOffsets(b, res.BaseOffset, 0))
		}
		if l.NumSegments() < 3 {
			t.Fatalf("want several segments, have %d", l.NumSegments())
		}
		check := func(l *Log) {
			t.Helper()
			for _, target := range []int64{0, 90, 100, 104, 106, 110, 111, 119, 121, 300, 500, 501, 172, 181} {
				want := -1
				for i, ts := range tss {
					if ts >= target {
						want = i
						break
					}
				}
				got, ok, err := l.FirstBatchAtOrAfterTime(nil, target)
				if err != nil {
					t.Fatal(err)
				}
				if ok != (want >= 0) || (ok && string(got) != string(all[want])) {
					t.Fatalf("FirstBatchAtOrAfterTime(%d): ok=%v, want batch %d", target, ok, want)
				}
			}
			got, ok, err := l.MaxTimestampBatch(nil)
			if err != nil || !ok || string(got) != string(all[8]) {
				t.Fatalf("MaxTimestampBatch: ok=%v err=%v", ok, err)
			}
		}
		check(l)
		mustClose(t, l)
		l = h.open()
		check(l)
		mustClose(t, l)
		h.crash()
		l = h.open()
		defer mustClose(t, l)
		check(l)

		// After DeleteRecords the search starts at the log start offset.
		if err := l.DeleteRecords(20); err != nil {
			t.Fatal(err)
		}
		got, ok, _ := l.FirstBatchAtOrAfterTime(nil, 0)
		if !ok || string(got) != string(all[10]) {
			t.Fatal("FirstBatchAtOrAfterTime ignores the log start offset")
		}
	})
}
