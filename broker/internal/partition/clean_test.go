package partition

import (
	"context"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/runnel-io/runnel/broker/internal/batch"
	plog "github.com/runnel-io/runnel/broker/internal/log"
)

// Compaction keeps an idempotent producer's newest batch (emptied of its
// superseded records), so after a restart without the producer snapshot the
// rebuilt state still knows the producer's sequence: the next batch is
// accepted and a retry of the last one is recognized as a duplicate.
func TestProducerStateSurvivesCleaning(t *testing.T) {
	fs := vfs.NewMem()
	cfg := compactedConfig(512)
	p := openTest(t, fs, cfg, nil)
	appendCommit := func(b []byte) AppendResult {
		t.Helper()
		res, err := p.Append(b, 1)
		if err != nil {
			t.Fatal(err)
		}
		if err := p.Commit(); err != nil {
			t.Fatal(err)
		}
		return res
	}
	appendCommit(makeBatch(3, 1000, 5, 0, 0))
	last := appendCommit(makeBatch(3, 1000, 5, 0, 3))
	for range 20 { // newer values of the same key, from a plain producer
		appendCommit(makeBatch(2, 1000, -1, -1, -1))
	}
	st, err := p.Clean(context.Background(), plog.NewOffsetMap(1<<20, 0), plog.CleanOptions{})
	if err != nil || st.RecordsRemoved == 0 {
		t.Fatalf("Clean: %+v, %v", st, err)
	}
	var kept []batch.Header
	if err := p.Log().Scan(0, func(h batch.Header) error {
		if h.ProducerID == 5 {
			kept = append(kept, h)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if len(kept) != 1 || kept[0].BaseOffset != last.BaseOffset || kept[0].NumRecords != 0 || kept[0].BaseSequence != 3 {
		t.Fatalf("producer 5's batches after cleaning: %+v; want only its last, empty, at %d", kept, last.BaseOffset)
	}
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	if err := fs.Remove(fs.PathJoin("p", producerSnapshot)); err != nil {
		t.Fatal(err)
	}

	p = openTest(t, fs, cfg, nil)
	defer p.Close()
	dup, err := p.Append(makeBatch(3, 1000, 5, 0, 3), 1)
	if err != nil || !dup.Duplicate || dup.BaseOffset != last.BaseOffset {
		t.Fatalf("retry of the last batch after cleaning and restart: %+v, %v; want a duplicate at %d", dup, err, last.BaseOffset)
	}
	if _, err := p.Append(makeBatch(1, 1000, 5, 0, 6), 1); err != nil {
		t.Fatalf("next sequence after cleaning and restart: %v", err)
	}
}

// compactedConfig is a compacted topic's config with segments of segBytes,
// always due for cleaning.
func compactedConfig(segBytes int64) Config {
	cfg := testConfig()
	cfg.Compacted = true
	cfg.Log.Compact = true
	cfg.Log.SegmentBytes = segBytes
	cfg.Log.MinCleanableDirtyRatio = 0
	return cfg
}
