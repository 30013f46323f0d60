package log

import (
	"context"
	"fmt"
	"math"
	"testing"

	"github.com/runnel-io/runnel/broker/internal/batch"
)

// kv is a test record; a nil val is a tombstone.
type kv struct {
	key string
	val *string
}

func val(s string) *string { return &s }

// kvBatch builds a batch of recs compressed with codec, timestamps ts, ts+1,
// ...; pid >= 0 makes it an idempotent producer's batch starting at seq.
func kvBatch(t testing.TB, codec batch.Codec, ts int64, pid int64, seq int32, recs ...kv) []byte {
	t.Helper()
	var raw []byte
	for i, r := range recs {
		rec := batch.Record{TimestampDelta: int64(i), OffsetDelta: int32(i), Key: []byte(r.key)}
		if r.val != nil {
			rec.Value = []byte(*r.val)
		}
		raw = batch.AppendRecord(raw, &rec)
	}
	cmp, err := batch.Compress(nil, codec, raw)
	if err != nil {
		t.Fatal(err)
	}
	h := batch.Header{
		PartitionLeaderEpoch: -1, Attributes: int16(codec), LastOffsetDelta: int32(len(recs) - 1),
		FirstTimestamp: ts, MaxTimestamp: ts + int64(len(recs)-1),
		ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1, NumRecords: int32(len(recs)),
	}
	if pid >= 0 {
		h.ProducerID, h.ProducerEpoch, h.BaseSequence = pid, 0, seq
	}
	return batch.AppendBatch(nil, &h, cmp)
}

// rec is a record read back from the log.
type rec struct {
	offset int64
	key    string
	val    *string
	ts     int64
}

// readRecords reads every record from the log start offset on, checking
// that offsets only increase.
func readRecords(t testing.TB, l *Log) []rec {
	t.Helper()
	var out []rec
	prev := int64(-1)
	for _, b := range readAll(t, l) {
		h, _ := batch.ParseHeader(b)
		err := batch.ForEachRecord(b, 0, func(r *batch.Record) error {
			x := rec{offset: h.BaseOffset + int64(r.OffsetDelta), key: string(r.Key), ts: h.FirstTimestamp + r.TimestampDelta}
			if r.Value != nil {
				x.val = val(string(r.Value))
			}
			if x.offset <= prev {
				return fmt.Errorf("offset %d after %d", x.offset, prev)
			}
			prev = x.offset
			out = append(out, x)
			return nil
		})
		if err != nil {
			t.Fatalf("batch at %d: %v", h.BaseOffset, err)
		}
	}
	return out
}

// newest returns, per key, the newest record of recs.
func newest(recs []rec) map[string]rec {
	m := map[string]rec{}
	for _, r := range recs {
		m[r.key] = r
	}
	return m
}

// checkCompacted fails unless got holds exactly one record per key, the
// newest of before for keys not in the active part, each at its original
// offset with its original value; records at or after from are checked to be
// unchanged.
func checkCompacted(t testing.TB, before, got []rec, from int64) {
	t.Helper()
	orig := map[int64]rec{}
	for _, r := range before {
		orig[r.offset] = r
	}
	want := newest(before)
	seen := map[string]int{}
	for _, r := range got {
		o, ok := orig[r.offset]
		if !ok || o.key != r.key || (o.val == nil) != (r.val == nil) || (o.val != nil && *o.val != *r.val) || o.ts != r.ts {
			t.Fatalf("record at offset %d (%q) is not the one produced there (%+v)", r.offset, r.key, o)
		}
		if r.offset < from {
			seen[r.key]++
			if want[r.key].offset != r.offset && want[r.key].offset < from {
				t.Fatalf("key %q kept at offset %d, newest is %d", r.key, r.offset, want[r.key].offset)
			}
		}
	}
	for k, n := range seen {
		if n > 1 {
			t.Fatalf("key %q kept %d times below %d", k, n, from)
		}
	}
	gotByOff := map[int64]bool{}
	for _, r := range got {
		gotByOff[r.offset] = true
	}
	for k, r := range want {
		if r.val != nil && !gotByOff[r.offset] {
			t.Fatalf("live key %q lost its newest record at offset %d", k, r.offset)
		}
	}
}

func compactConfig(h *harness, segBytes int64) {
	h.cfg.Compact = true
	h.cfg.SegmentBytes = segBytes
	h.cfg.DeleteRetentionMs = 60_000
	h.cfg.MinCleanableDirtyRatio = 0.5
}

// cleanAll runs Clean until nothing is due, returning the passes run.
func cleanAll(t testing.TB, l *Log, m *OffsetMap, o CleanOptions) int {
	t.Helper()
	n := 0
	for l.Cleanable(math.MaxInt64).Due {
		if _, err := l.Clean(context.Background(), m, o); err != nil {
			t.Fatalf("Clean: %v", err)
		}
		if n++; n > 1000 {
			t.Fatal("cleaning does not converge")
		}
	}
	return n
}

func mustAppend(t testing.TB, l *Log, b []byte) AppendResult {
	t.Helper()
	res, err := l.Append(b, 0)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// checkNothingLost fails unless every record of got is the one produced at
// its offset and every key's newest record of before is in got.
func checkNothingLost(t testing.TB, before, got []rec) {
	t.Helper()
	orig := map[int64]rec{}
	for _, r := range before {
		orig[r.offset] = r
	}
	have := map[int64]bool{}
	for _, r := range got {
		if o, ok := orig[r.offset]; !ok || o.key != r.key || (o.val == nil) != (r.val == nil) || (o.val != nil && *o.val != *r.val) {
			t.Fatalf("record at offset %d (%q) is not the one produced there", r.offset, r.key)
		}
		have[r.offset] = true
	}
	for k, r := range newest(before) {
		if !have[r.offset] {
			t.Fatalf("key %q lost its newest record at offset %d", k, r.offset)
		}
	}
}
