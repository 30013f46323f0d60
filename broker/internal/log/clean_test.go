package log

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/runnel-io/runnel/broker/internal/batch"
)

var ctx = context.Background()

// appendVersions appends n single-record batches cycling over keys keys.
func appendVersions(t testing.TB, l *Log, n, keys int, ts int64, tag string) {
	t.Helper()
	for i := range n {
		k := fmt.Sprintf("k%02d", i%keys)
		mustAppend(t, l, kvBatch(t, batch.CodecNone, ts+int64(i), -1, 0, kv{k, val(fmt.Sprintf("%s%d", tag, i))}))
	}
}

func activeBase(l *Log) int64 {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return l.activeLocked().base
}

func activeBytes(t testing.TB, l *Log) []byte {
	t.Helper()
	l.mu.RLock()
	s := l.activeLocked()
	f, n := s.file.f, s.size
	l.mu.RUnlock()
	b := make([]byte, n)
	if err := readAt(f, b, 0); err != nil {
		t.Fatal(err)
	}
	return b
}

func TestCleanKeepsNewestPerKey(t *testing.T) {
	eachFS(t, func(t *testing.T, h *harness) {
		compactConfig(h, 2048)
		l := h.open()
		appendVersions(t, l, 400, 20, h.clock.ms.Load(), "v")
		before := readRecords(t, l)
		lso, leo, act := l.LogStartOffset(), l.LogEndOffset(), activeBase(l)
		actBytes := activeBytes(t, l)
		sizeBefore := l.Size()
		if c := l.Cleanable(math.MaxInt64); !c.Due || c.CleanBytes != 0 || c.FirstUncleanable != act {
			t.Fatalf("Cleanable before cleaning = %+v, want due, nothing clean, uncleanable at the active base %d", c, act)
		}
		st, err := l.Clean(ctx, NewOffsetMap(1<<20, 0), CleanOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if st.RecordsRemoved == 0 || st.FirstDirty != act || st.BytesWritten >= st.BytesRead {
			t.Fatalf("stats %+v: want records removed and the checkpoint at the active base %d", st, act)
		}
		got := readRecords(t, l)
		checkCompacted(t, before, got, act)
		if l.LogStartOffset() != lso || l.LogEndOffset() != leo {
			t.Fatalf("offsets moved: [%d, %d) -> [%d, %d)", lso, leo, l.LogStartOffset(), l.LogEndOffset())
		}
		if !bytes.Equal(activeBytes(t, l), actBytes) {
			t.Fatal("the active segment changed")
		}
		if l.Size() >= sizeBefore {
			t.Fatalf("size %d -> %d: nothing reclaimed", sizeBefore, l.Size())
		}
		if c := l.Cleanable(math.MaxInt64); c.Due || c.DirtyBytes != 0 {
			t.Fatalf("Cleanable after cleaning = %+v, want nothing dirty", c)
		}
		// Reading at an offset cleaning removed continues at the next kept one.
		b, err := l.Read(nil, lso, leo, 1<<20, true)
		if err != nil || len(b) == 0 {
			t.Fatalf("Read(%d) = %d bytes, %v", lso, len(b), err)
		}
		mustClose(t, l)

		// Reopen cleanly, then again with every index rebuilt by scanning.
		l = h.open()
		checkCompacted(t, before, readRecords(t, l), act)
		if l.firstDirty.Load() != act {
			t.Fatalf("checkpoint after reopen = %d, want %d", l.firstDirty.Load(), act)
		}
		mustClose(t, l)
		for _, n := range segmentFiles(t, h.fs, h.dir, indexSuffix) {
			if err := h.fs.Remove(h.fs.PathJoin(h.dir, n)); err != nil {
				t.Fatal(err)
			}
		}
		h.crash()
		l = h.open()
		checkCompacted(t, before, readRecords(t, l), act)
		if l.LogEndOffset() != leo {
			t.Fatalf("LEO after rebuild = %d, want %d", l.LogEndOffset(), leo)
		}
		mustClose(t, l)
	})
}

func TestCleanTombstonesAfterDeleteRetention(t *testing.T) {
	eachFS(t, func(t *testing.T, h *harness) {
		compactConfig(h, 1024)
		h.cfg.MinCleanableDirtyRatio = 0.01
		l := h.open()
		defer mustClose(t, l)
		ts := h.clock.ms.Load()
		mustAppend(t, l, kvBatch(t, batch.CodecNone, ts, -1, 0, kv{"gone", val("v1")}, kv{"live", val("v1")}))
		tomb := mustAppend(t, l, kvBatch(t, batch.CodecNone, ts+10, -1, 0, kv{"gone", nil}))
		appendVersions(t, l, 100, 5, ts+20, "f") // push the tombstone out of the active segment
		before := readRecords(t, l)

		if _, err := l.Clean(ctx, NewOffsetMap(1<<20, 0), CleanOptions{}); err != nil {
			t.Fatal(err)
		}
		got := readRecords(t, l)
		checkCompacted(t, before, got, activeBase(l))
		r := newest(got)["gone"]
		if r.offset != tomb.BaseOffset || r.val != nil {
			t.Fatalf("tombstone after the first clean: %+v, want kept at %d", r, tomb.BaseOffset)
		}
		// Its batch now carries the delete horizon (KIP-534).
		b, err := l.Read(nil, tomb.BaseOffset, l.LogEndOffset(), 1, true)
		if err != nil {
			t.Fatal(err)
		}
		bh, _ := batch.ParseHeader(b)
		horizon := h.clock.ms.Load() + h.cfg.DeleteRetentionMs
		if bh.Attributes&batch.AttrDeleteHorizon == 0 || bh.FirstTimestamp != horizon {
			t.Fatalf("tombstone batch attributes %#x first timestamp %d, want the horizon bit and %d", bh.Attributes, bh.FirstTimestamp, horizon)
		}

		h.clock.Advance(59 * time.Second)
		if c := l.Cleanable(math.MaxInt64); c.Due {
			t.Fatalf("due before delete.retention.ms passed: %+v", c)
		}
		if _, err := l.Clean(ctx, NewOffsetMap(1<<20, 0), CleanOptions{}); err != nil {
			t.Fatal(err)
		}
		if r := newest(readRecords(t, l))["gone"]; r.offset != tomb.BaseOffset {
			t.Fatalf("tombstone removed before delete.retention.ms: %+v", r)
		}
		h.clock.Advance(2 * time.Second)
		c := l.Cleanable(math.MaxInt64)
		if !c.Due || c.Reason != "delete.retention.ms" {
			t.Fatalf("Cleanable after the horizon = %+v, want due for delete.retention.ms", c)
		}
		if _, err := l.Clean(ctx, NewOffsetMap(1<<20, 0), CleanOptions{}); err != nil {
			t.Fatal(err)
		}
		for _, r := range readRecords(t, l) {
			if r.key == "gone" {
				t.Fatalf("key deleted by a tombstone still present after delete.retention.ms: %+v", r)
			}
		}
		if _, ok := newest(readRecords(t, l))["live"]; !ok {
			t.Fatal("live key lost")
		}
		if l.tombHorizon.Load() != 0 {
			t.Fatalf("tombstone horizon still set: %d", l.tombHorizon.Load())
		}
	})
}

func TestCleanCompressedBatches(t *testing.T) {
	for _, codec := range []batch.Codec{batch.CodecGzip, batch.CodecSnappy, batch.CodecLZ4, batch.CodecZstd} {
		t.Run(codec.String(), func(t *testing.T) {
			h := newHarness(t, vfs.NewCrashableMem(), "/data/topic-0")
			compactConfig(h, 4096)
			l := h.open()
			defer mustClose(t, l)
			ts := h.clock.ms.Load()
			for i := range 10 {
				var recs []kv
				for j := range 10 {
					recs = append(recs, kv{fmt.Sprintf("k%d", j), val(strings.Repeat(fmt.Sprint(i), 50))})
				}
				mustAppend(t, l, kvBatch(t, codec, ts+int64(i), -1, 0, recs...))
			}
			mustAppend(t, l, kvBatch(t, codec, ts+20, -1, 0, kv{"k0", val("new")}, kv{"k1", nil}, kv{"k2", val("new")}))
			appendVersions(t, l, 60, 3, ts+30, "f")
			before := readRecords(t, l)
			if _, err := l.Clean(ctx, NewOffsetMap(1<<20, 0), CleanOptions{}); err != nil {
				t.Fatal(err)
			}
			got := readRecords(t, l)
			checkCompacted(t, before, got, activeBase(l))
			for _, b := range readAll(t, l) {
				bh, _ := batch.ParseHeader(b)
				if bh.BaseOffset < 11 && bh.Codec() != codec {
					t.Fatalf("batch at %d has codec %v, want %v", bh.BaseOffset, bh.Codec(), codec)
				}
				if bh.BaseOffset == 90 && (bh.NumRecords != 7 || bh.LastOffsetDelta != 9) {
					t.Fatalf("rewritten batch at 90: %d records, last offset delta %d; want 7 and 9", bh.NumRecords, bh.LastOffsetDelta)
				}
			}
		})
	}
}

func TestCleanMultiPassWithTinyMap(t *testing.T) {
	h := newHarness(t, vfs.NewCrashableMem(), "/data/topic-0")
	compactConfig(h, 2048)
	h.cfg.MinCleanableDirtyRatio = 0
	l := h.open()
	defer mustClose(t, l)
	appendVersions(t, l, 900, 150, h.clock.ms.Load(), "v")
	before := readRecords(t, l)
	m := NewOffsetMap(24*64, 0) // 57 keys per pass
	passes := cleanAll(t, l, m, CleanOptions{})
	if passes < 3 {
		t.Fatalf("%d passes; a 57-key map needs several for 150 keys", passes)
	}
	checkCompacted(t, before, readRecords(t, l), activeBase(l))
	if cap(m.slots) > 64 {
		t.Fatalf("offset map grew to %d slots, budget 64", cap(m.slots))
	}
}

func TestCleanOffsetMapTooSmall(t *testing.T) {
	h := newHarness(t, vfs.NewCrashableMem(), "/data/topic-0")
	compactConfig(h, 1024)
	l := h.open()
	defer mustClose(t, l)
	var recs []kv
	for j := range 40 {
		recs = append(recs, kv{fmt.Sprint(j), val("x")})
	}
	for range 5 {
		mustAppend(t, l, kvBatch(t, batch.CodecNone, 0, -1, 0, recs...))
	}
	_, err := l.Clean(ctx, NewOffsetMap(24*16, 0), CleanOptions{})
	if !errors.Is(err, ErrOffsetMapTooSmall) {
		t.Fatalf("Clean with a 14-key map and 40-record batches = %v, want ErrOffsetMapTooSmall", err)
	}
}

func TestCleanDirtyRatioAndLags(t *testing.T) {
	h := newHarness(t, vfs.NewCrashableMem(), "/data/topic-0")
	compactConfig(h, 2048)
	l := h.open()
	defer mustClose(t, l)
	now := h.clock.ms.Load()
	appendVersions(t, l, 300, 100, now, "v")
	cleanAll(t, l, NewOffsetMap(1<<20, 0), CleanOptions{})
	clean := l.Cleanable(math.MaxInt64).CleanBytes

	// A little new dirty data: under the 0.5 ratio.
	appendVersions(t, l, 40, 100, now, "w")
	c := l.Cleanable(math.MaxInt64)
	if c.Due || c.DirtyBytes == 0 || c.Ratio >= 0.5 || c.CleanBytes != clean {
		t.Fatalf("after a little dirty data: %+v, want not due with ratio < 0.5", c)
	}
	// Much more: over it.
	appendVersions(t, l, 300, 100, now, "x")
	if c := l.Cleanable(math.MaxInt64); !c.Due || c.Reason != "min.cleanable.dirty.ratio" {
		t.Fatalf("after much dirty data: %+v, want due by ratio", c)
	}

	// min.compaction.lag.ms holds back segments younger than the lag.
	h.cfg.MinCompactionLagMs = 60_000
	l.SetConfig(h.cfg)
	if c := l.Cleanable(math.MaxInt64); c.Due || c.DirtyBytes != 0 {
		t.Fatalf("with min.compaction.lag.ms: %+v, want nothing cleanable", c)
	}
	if _, err := l.Clean(ctx, NewOffsetMap(1<<20, 0), CleanOptions{}); err != nil {
		t.Fatal(err)
	}
	if c := l.Cleanable(math.MaxInt64); c.CleanBytes != clean {
		t.Fatalf("Clean inside min.compaction.lag.ms changed the clean part: %+v", c)
	}
	h.clock.Advance(61 * time.Second)
	if c := l.Cleanable(math.MaxInt64); !c.Due {
		t.Fatalf("after min.compaction.lag.ms: %+v, want due", c)
	}
	cleanAll(t, l, NewOffsetMap(1<<20, 0), CleanOptions{})

	// max.compaction.lag.ms cleans a log under the ratio once its dirty data is old.
	h.cfg.MinCompactionLagMs = 0
	h.cfg.MaxCompactionLagMs = 120_000
	l.SetConfig(h.cfg)
	appendVersions(t, l, 40, 100, h.clock.ms.Load(), "y")
	if c := l.Cleanable(math.MaxInt64); c.Due {
		t.Fatalf("fresh dirty data under the ratio: %+v, want not due", c)
	}
	h.clock.Advance(121 * time.Second)
	if c := l.Cleanable(math.MaxInt64); !c.Due || c.Reason != "max.compaction.lag.ms" {
		t.Fatalf("after max.compaction.lag.ms: %+v, want due by max lag", c)
	}
	// The caller's high watermark bounds cleaning too.
	if c := l.Cleanable(l.LogStartOffset() + 1); c.DirtyBytes != 0 {
		t.Fatalf("Cleanable(maxOffset just past the start) = %+v, want nothing cleanable", c)
	}
}

func TestCleanKeepsProducersLastBatch(t *testing.T) {
	h := newHarness(t, vfs.NewCrashableMem(), "/data/topic-0")
	compactConfig(h, 1024)
	l := h.open()
	defer mustClose(t, l)
	ts := h.clock.ms.Load()
	mustAppend(t, l, kvBatch(t, batch.CodecNone, ts, 7, 0, kv{"a", val("1")}))
	last := mustAppend(t, l, kvBatch(t, batch.CodecNone, ts, 7, 1, kv{"b", val("1")}, kv{"c", val("1")}))
	mustAppend(t, l, kvBatch(t, batch.CodecNone, ts, -1, 0, kv{"a", val("2")}, kv{"b", val("2")}, kv{"c", val("2")}))
	appendVersions(t, l, 40, 3, ts, "f")
	if _, err := l.Clean(ctx, NewOffsetMap(1<<20, 0), CleanOptions{ProducerLast: map[int64]int64{7: last.LastOffset}}); err != nil {
		t.Fatal(err)
	}
	var pids []batch.Header
	for _, b := range readAll(t, l) {
		if bh, _ := batch.ParseHeader(b); bh.ProducerID == 7 {
			pids = append(pids, bh)
		}
	}
	if len(pids) != 1 {
		t.Fatalf("producer 7 has %d batches after cleaning, want its last one only", len(pids))
	}
	p := pids[0]
	if p.BaseOffset != last.BaseOffset || p.LastOffset() != last.LastOffset || p.NumRecords != 0 || p.BaseSequence != 1 || p.LastSequence() != 2 {
		t.Fatalf("kept producer batch %+v: want an empty batch at [%d, %d] with sequences 1..2", p, last.BaseOffset, last.LastOffset)
	}
}

func TestCleanedLogKeepsAppending(t *testing.T) {
	eachFS(t, func(t *testing.T, h *harness) {
		compactConfig(h, 1024)
		h.cfg.MinCleanableDirtyRatio = 0
		l := h.open()
		m := NewOffsetMap(1<<20, 0)
		var all []rec
		for round := range 4 {
			appendVersions(t, l, 60, 7, h.clock.ms.Load(), fmt.Sprintf("r%d-", round))
			all = append(all, readTail(t, l, all)...)
			cleanAll(t, l, m, CleanOptions{})
			checkCompacted(t, all, readRecords(t, l), activeBase(l))
		}
		// Truncation into a cleaned segment (a follower's divergent tail) and appending again.
		cut := activeBase(l) - 3
		if err := l.Truncate(cut); err != nil {
			t.Fatal(err)
		}
		if l.LogEndOffset() > cut || l.firstDirty.Load() > l.LogEndOffset() {
			t.Fatalf("after Truncate(%d): LEO %d, checkpoint %d", cut, l.LogEndOffset(), l.firstDirty.Load())
		}
		appendVersions(t, l, 10, 7, h.clock.ms.Load(), "t")
		want, leo := readRecords(t, l), l.LogEndOffset()
		mustClose(t, l)
		h.crash()
		l = h.open()
		defer mustClose(t, l)
		got := readRecords(t, l)
		if len(got) != len(want) || l.LogEndOffset() != leo {
			t.Fatalf("after a crash: %d records, LEO %d; want %d, %d", len(got), l.LogEndOffset(), len(want), leo)
		}
		checkNothingLost(t, want, got)
	})
}

// readTail returns the records after the last one in have.
func readTail(t testing.TB, l *Log, have []rec) []rec {
	from := int64(-1)
	if len(have) > 0 {
		from = have[len(have)-1].offset
	}
	var out []rec
	for _, r := range readRecords(t, l) {
		if r.offset > from {
			out = append(out, r)
		}
	}
	return out
}

// compact,delete: retention deletes old cleaned segments; a retention run
// that lands in the middle of a pass makes the pass give up its swap
// cleanly, and the next pass works.
func TestCleanWithRetention(t *testing.T) {
	h := newHarness(t, vfs.NewCrashableMem(), "/data/topic-0")
	compactConfig(h, 1024)
	l := h.open()
	defer mustClose(t, l)
	appendVersions(t, l, 300, 10, h.clock.ms.Load(), "v")
	segsBefore := l.NumSegments()

	h.cfg.RetentionBytes = l.Size() - 3000 // drop the oldest few segments
	l.SetConfig(h.cfg)
	l.cleanHook = func(step string) {
		if step == "cleaned" {
			l.cleanHook = nil
			if n, err := l.EnforceRetention(); err != nil || n == 0 {
				t.Errorf("EnforceRetention during cleaning: %d, %v", n, err)
			}
		}
	}
	_, err := l.Clean(ctx, NewOffsetMap(1<<20, 0), CleanOptions{})
	if !IsCleanAborted(err) {
		t.Fatalf("Clean with retention deleting its segments meanwhile = %v, want an abandoned pass", err)
	}
	for _, n := range listDir(t, h.fs, h.dir) {
		if strings.HasSuffix(n, cleanedSuffix) || strings.HasSuffix(n, swapSuffix) {
			t.Fatalf("abandoned pass left %s", n)
		}
	}
	if l.NumSegments() >= segsBefore {
		t.Fatalf("retention deleted nothing: %d segments", l.NumSegments())
	}
	before := readRecords(t, l)
	cleanAll(t, l, NewOffsetMap(1<<20, 0), CleanOptions{})
	checkCompacted(t, before, readRecords(t, l), activeBase(l))

	// Retention by time applies to cleaned segments too.
	h.cfg.RetentionBytes, h.cfg.RetentionMs = -1, 60_000
	l.SetConfig(h.cfg)
	h.clock.Advance(2 * time.Minute)
	if _, err := l.EnforceRetention(); err != nil {
		t.Fatal(err)
	}
	if l.NumSegments() != 1 || l.LogStartOffset() != activeBase(l) {
		t.Fatalf("after retention.ms: %d segments, log start %d, active base %d", l.NumSegments(), l.LogStartOffset(), activeBase(l))
	}
}

// A compacted log of a million updates to a thousand keys (like
// __consumer_offsets under constant commits), cleaned whenever Cleanable
// says so, stays within a few segments.
func TestCompactedLogStaysSmall(t *testing.T) {
	h := newHarness(t, vfs.NewCrashableMem(), "/data/__consumer_offsets-0")
	compactConfig(h, 1<<20)
	l := h.open()
	defer mustClose(t, l)
	m := NewOffsetMap(1<<20, 0)
	const keys, perBatch, batches = 1000, 100, 10_000
	recs := make([]kv, perBatch)
	maxSize := int64(0)
	for i := range batches {
		for j := range recs {
			n := i*perBatch + j
			recs[j] = kv{fmt.Sprintf("group-%d/topic/%d", n%keys/10, n%10), val(fmt.Sprintf("offset=%d", n))}
		}
		mustAppend(t, l, kvBatch(t, batch.CodecNone, h.clock.ms.Load(), -1, 0, recs...))
		if i%100 == 99 && l.Cleanable(math.MaxInt64).Due {
			if _, err := l.Clean(ctx, m, CleanOptions{}); err != nil {
				t.Fatal(err)
			}
		}
		maxSize = max(maxSize, l.Size())
	}
	if maxSize > 3<<20 {
		t.Fatalf("a log of %d updates to %d keys reached %d bytes", perBatch*batches, keys, maxSize)
	}
	live := newest(readRecords(t, l))
	if len(live) != keys {
		t.Fatalf("%d keys live, want %d", len(live), keys)
	}
	t.Logf("%d records appended; the log peaked at %d bytes and ends at %d bytes in %d segments",
		perBatch*batches, maxSize, l.Size(), l.NumSegments())
}
