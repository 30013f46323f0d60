package log

import (
	"fmt"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/runnel-io/runnel/broker/internal/batch"
)

// A crash at each step of a cleaning swap leaves a log that opens to either
// the uncleaned or the cleaned records, never a mix that loses a live key or
// repeats one, with no .cleaned or .swap file left; cleaning then finishes.
func TestCleanCrashAtEachStep(t *testing.T) {
	for _, step := range []string{"cleaned", "swap", "installed", "deleted", "renamed", "indexed"} {
		t.Run(step, func(t *testing.T) {
			fs := vfs.NewCrashableMem()
			h := newHarness(t, fs, "/data/topic-0")
			compactConfig(h, 1024)
			l := h.open()
			appendVersions(t, l, 200, 10, h.clock.ms.Load(), "v")
			if err := l.Sync(); err != nil {
				t.Fatal(err)
			}
			before := readRecords(t, l)
			act := activeBase(l)
			var crashed *vfs.MemFS
			l.cleanHook = func(s string) {
				if s == step && crashed == nil {
					crashed = fs.CrashClone(vfs.CrashCloneCfg{})
				}
			}
			if _, err := l.Clean(ctx, NewOffsetMap(1<<20, 0), CleanOptions{}); err != nil {
				t.Fatal(err)
			}
			mustClose(t, l)
			if crashed == nil {
				t.Fatalf("step %q never reached", step)
			}

			h.fs = crashed
			l = h.open()
			defer mustClose(t, l)
			for _, n := range listDir(t, crashed, h.dir) {
				if strings.HasSuffix(n, cleanedSuffix) || strings.HasSuffix(n, swapSuffix) {
					t.Fatalf("recovery left %s", n)
				}
			}
			// Each group is swapped on its own: some may be cleaned, the
			// rest not; no record may be lost that is a key's newest.
			checkNothingLost(t, before, readRecords(t, l))
			if l.LogEndOffset() != before[len(before)-1].offset+1 {
				t.Fatalf("LEO after recovery = %d, want %d", l.LogEndOffset(), before[len(before)-1].offset+1)
			}
			cleanAll(t, l, NewOffsetMap(1<<20, 0), CleanOptions{})
			checkCompacted(t, before, readRecords(t, l), act)
		})
	}
}

// Readers scanning from the start while cleaning and appends run never get
// an error and never miss a key written before their scan began.
func TestCleanWhileReading(t *testing.T) {
	eachFS(t, func(t *testing.T, h *harness) {
		compactConfig(h, 1024)
		h.cfg.MinCleanableDirtyRatio = 0
		h.cfg.IndexIntervalBytes = 128
		l := h.open()
		defer mustClose(t, l)
		const keys, readers = 30, 2
		appendVersions(t, l, keys, keys, 0, "first")

		var done atomic.Bool
		errc := make(chan error, readers)
		var scans atomic.Int64
		var wg sync.WaitGroup
		for range readers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for !done.Load() {
					if err := scanKeys(l, keys); err != nil {
						errc <- err
						return
					}
					scans.Add(1)
				}
			}()
		}
		m := NewOffsetMap(1<<16, 0)
		passes := 0
		rounds := 30
		if h.fs == vfs.Default {
			rounds = 4 // each pass fsyncs a few times per group
		}
		for round := range rounds {
			for i := range 20 {
				k := fmt.Sprintf("k%02d", (round*20+i)%keys)
				mustAppend(t, l, kvBatch(t, batch.CodecNone, int64(i), -1, 0, kv{k, val(fmt.Sprint(round))}))
			}
			st, err := l.Clean(ctx, m, CleanOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if st.Segments > 0 {
				passes++
			}
		}
		// Let the readers finish at least one scan over the final log.
		for start := scans.Load(); scans.Load() < start+2*readers && len(errc) == 0; {
			runtime.Gosched()
		}
		done.Store(true)
		wg.Wait()
		close(errc)
		for err := range errc {
			t.Fatal(err)
		}
		if passes < rounds*2/3 {
			t.Fatalf("only %d cleaning passes rewrote segments", passes)
		}
		t.Logf("%d scans during %d cleaning passes", scans.Load(), passes)
	})
}

// scanKeys reads the log from its start to its end (as it grows) and checks
// that every one of keys keys shows up.
func scanKeys(l *Log, keys int) error {
	seen := map[string]bool{}
	off := l.LogStartOffset()
	for off < l.LogEndOffset() {
		leo := l.LogEndOffset()
		b, err := l.Read(nil, off, leo, 4096, true)
		if err != nil {
			return fmt.Errorf("Read(%d) during cleaning: %w", off, err)
		}
		if len(b) == 0 {
			if l.LogEndOffset() > leo {
				continue // as a consumer, fetch again up to the new end
			}
			break // compaction emptied the tail of the last full segment; the active one is empty
		}
		for len(b) > 0 {
			bh, err := batch.ParseHeader(b)
			if err != nil || bh.Size() > len(b) {
				return fmt.Errorf("Read(%d): partial batch", off)
			}
			if err := batch.ForEachRecord(b[:bh.Size()], 0, func(r *batch.Record) error {
				seen[string(r.Key)] = true
				return nil
			}); err != nil {
				return err
			}
			off = bh.LastOffset() + 1
			b = b[bh.Size():]
		}
	}
	if len(seen) != keys {
		return fmt.Errorf("a scan saw %d of %d keys", len(seen), keys)
	}
	return nil
}
