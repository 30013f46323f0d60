package log

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/runnel-io/runnel/broker/internal/batch"
)

func TestCrashKeepsOnlySyncedBatches(t *testing.T) {
	fs := vfs.NewCrashableMem()
	h := newHarness(t, fs, "/data/t-0")
	h.cfg.SegmentBytes = 4 << 10
	l := h.open()
	want := appendN(t, l, 30, 2, 1000, 100, 1)
	if err := l.Sync(); err != nil {
		t.Fatal(err)
	}
	synced := l.LogEndOffset()
	appendN(t, l, 5, 2, 2000, 100, 1) // no Sync, no roll in between
	if l.NumSegments() != 3 {
		t.Fatalf("setup: %d segments", l.NumSegments())
	}

	crashed := fs.CrashClone(vfs.CrashCloneCfg{})
	mustClose(t, l)
	h.fs = crashed
	l = h.open()
	if l.LogEndOffset() != synced {
		t.Fatalf("after crash LEO = %d, want the synced %d", l.LogEndOffset(), synced)
	}
	equalBatches(t, readAll(t, l), want)
	// Appends continue at the right offset.
	res, err := l.Append(makeBatch(t, 1, 3000, 10), 1)
	if err != nil || res.BaseOffset != synced {
		t.Fatalf("Append after recovery: %+v, %v", res, err)
	}
	mustClose(t, l)
}

func TestCrashRollMakesOldSegmentsDurable(t *testing.T) {
	fs := vfs.NewCrashableMem()
	h := newHarness(t, fs, "/data/t-0")
	h.cfg.SegmentBytes = 2 << 10
	l := h.open()
	want := appendN(t, l, 20, 2, 1000, 100, 1) // never synced, but rolled
	segs := l.NumSegments()
	crashed := fs.CrashClone(vfs.CrashCloneCfg{})
	mustClose(t, l)
	h.fs = crashed
	l = h.open()
	defer mustClose(t, l)
	if l.NumSegments() != segs {
		t.Fatalf("segments after crash %d, want %d (the active one may be empty)", l.NumSegments(), segs)
	}
	got := readAll(t, l)
	if len(got) == 0 || len(got) >= len(want) {
		t.Fatalf("recovered %d batches of %d", len(got), len(want))
	}
	equalBatches(t, got, want[:len(got)])
}

// With random unsynced blocks surviving, recovery must yield a prefix of the
// appended batches, at least everything synced, every batch whole.
func TestCrashWithRandomUnsyncedData(t *testing.T) {
	for seed := range uint64(20) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			fs := vfs.NewCrashableMem()
			h := newHarness(t, fs, "/data/t-0")
			h.cfg.SegmentBytes = 16 << 10
			rng := rand.New(rand.NewPCG(seed, 7))
			l := h.open()
			var want [][]byte
			var synced int
			for i := range 60 {
				want = append(want, appendN(t, l, 1, 1+rng.IntN(4), int64(i), rng.IntN(700), int32(i/20))...)
				if rng.IntN(5) == 0 {
					if err := l.Sync(); err != nil {
						t.Fatal(err)
					}
					synced = len(want)
				}
			}
			crashed := fs.CrashClone(vfs.CrashCloneCfg{UnsyncedDataPercent: 50, RNG: rng})
			mustClose(t, l)
			h.fs = crashed
			l = h.open()
			defer mustClose(t, l)
			got := readAll(t, l)
			if len(got) < synced {
				t.Fatalf("recovered %d batches, %d were synced", len(got), synced)
			}
			equalBatches(t, got, want[:len(got)])
			if e, _ := l.Epochs().Latest(); len(got) > 0 {
				last, _ := batch.ParseHeader(got[len(got)-1])
				if e != last.PartitionLeaderEpoch {
					t.Fatalf("latest epoch %d, last batch has %d", e, last.PartitionLeaderEpoch)
				}
			}
			res, err := l.Append(makeBatch(t, 1, 0, 1), 9)
			if err != nil || res.BaseOffset != l.LogEndOffset()-1 {
				t.Fatalf("Append after recovery: %+v, %v", res, err)
			}
		})
	}
}

func TestRecoverGarbledTail(t *testing.T) {
	// Each case damages the active segment (whose last batch is `last`,
	// starting at lastPos) and says how many of the batches survive.
	type damage func(t *testing.T, data []byte, lastPos int) []byte
	half := makeBatch(t, 3, 0, 50)
	tests := []struct {
		name   string
		damage damage
		keep   int // batches kept of the active segment's 4
	}{
		{"overwrite middle of last batch", func(t *testing.T, d []byte, p int) []byte {
			for i := p + (len(d)-p)/2; i < p+(len(d)-p)/2+8; i++ {
				d[i] ^= 0x5a
			}
			return d
		}, 3},
		{"half a batch appended", func(t *testing.T, d []byte, p int) []byte {
			h, _ := batch.ParseHeader(d[p:])
			return append(d, withOffsets(half, h.LastOffset()+1, 1)[:len(half)/2]...)
		}, 4},
		{"partial header appended", func(t *testing.T, d []byte, p int) []byte {
			return append(d, half[:20]...)
		}, 4},
		{"zeros appended", func(t *testing.T, d []byte, p int) []byte {
			return append(d, make([]byte, 4096)...)
		}, 4},
		{"bad magic in last batch", func(t *testing.T, d []byte, p int) []byte {
			d[p+16] = 1
			return d
		}, 3},
		{"huge length in last batch", func(t *testing.T, d []byte, p int) []byte {
			copy(d[p+8:], []byte{0x7f, 0xff, 0xff, 0xff})
			return d
		}, 3},
		{"offset gap before last batch", func(t *testing.T, d []byte, p int) []byte {
			h, _ := batch.ParseHeader(d[p:])
			batch.SetBaseOffset(d[p:], h.BaseOffset+1)
			return d
		}, 3},
		{"first batch corrupt", func(t *testing.T, d []byte, p int) []byte {
			d[batch.HeaderSize+1] ^= 1
			return d
		}, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			eachFS(t, func(t *testing.T, h *harness) {
				one := len(makeBatch(t, 3, 0, 50))
				h.cfg.SegmentBytes = int64(4 * one)
				h.cfg.IndexIntervalBytes = int32(one / 2)
				l := h.open()
				want := appendN(t, l, 12, 3, 100, 50, 1) // three full segments
				mustClose(t, l)
				h.crash()
				segs := segmentFiles(t, h.fs, h.dir, logSuffix)
				path := h.fs.PathJoin(h.dir, segs[len(segs)-1])
				data := readFile(t, h.fs, path)
				if len(data) != 4*one {
					t.Fatalf("setup: active segment has %d bytes", len(data))
				}
				rewriteFile(t, h.fs, path, tc.damage(t, data, 3*one))

				l = h.open()
				keep := 8 + tc.keep
				if l.LogEndOffset() != int64(3*keep) {
					t.Fatalf("LEO after recovery = %d, want %d", l.LogEndOffset(), 3*keep)
				}
				equalBatches(t, readAll(t, l), want[:keep])
				if fi, err := h.fs.Stat(path); err != nil || fi.Size() != int64(tc.keep*one) {
					t.Fatalf("segment not truncated: %v, %v", fi, err)
				}
				if tc.keep < 4 || tc.name != "half a batch appended" {
					if !strings.Contains(h.logs.String(), "truncated a segment") {
						t.Fatalf("no warning logged:\n%s", h.logs)
					}
				}
				more := appendN(t, l, 2, 3, 500, 50, 2)
				if hd, _ := batch.ParseHeader(more[0]); hd.BaseOffset != int64(3*keep) {
					t.Fatalf("append after recovery at %d", hd.BaseOffset)
				}
				mustClose(t, l)
				l = h.open()
				defer mustClose(t, l)
				equalBatches(t, readAll(t, l), append(slices.Clip(want[:keep]), more...))
			})
		})
	}
}

func TestRecoverCorruptOlderSegment(t *testing.T) {
	eachFS(t, func(t *testing.T, h *harness) {
		one := len(makeBatch(t, 2, 0, 60))
		h.cfg.SegmentBytes = int64(3 * one)
		l := h.open()
		want := appendN(t, l, 12, 2, 100, 60, 1)
		if l.NumSegments() != 4 {
			t.Fatalf("setup: %d segments", l.NumSegments())
		}
		mustClose(t, l)
		// Damage the second segment's second batch and remove its index so
		// that Open scans it.
		segs := segmentFiles(t, h.fs, h.dir, logSuffix)
		path := h.fs.PathJoin(h.dir, segs[1])
		data := readFile(t, h.fs, path)
		data[one+batch.HeaderSize+3] ^= 0xff
		rewriteFile(t, h.fs, path, data)
		if err := h.fs.Remove(h.fs.PathJoin(h.dir, segs[1][:20]+indexSuffix)); err != nil {
			t.Fatal(err)
		}
		l = h.open()
		defer mustClose(t, l)
		if l.NumSegments() != 2 || l.LogEndOffset() != 8 {
			t.Fatalf("after recovery: %d segments, LEO %d; want 2, 8", l.NumSegments(), l.LogEndOffset())
		}
		equalBatches(t, readAll(t, l), want[:4])
		if got := segmentFiles(t, h.fs, h.dir, logSuffix); len(got) != 2 {
			t.Fatalf("later segment files not deleted: %v", got)
		}
		if !strings.Contains(h.logs.String(), "deletes the segments after a truncated one") {
			t.Fatalf("no warning:\n%s", h.logs)
		}
	})
}

func TestRebuildIndexes(t *testing.T) {
	tests := []struct {
		name   string
		suffix string
		damage func([]byte) []byte // nil removes the file
	}{
		{"missing offset index", indexSuffix, nil},
		{"missing time index", timeIndexSuffix, nil},
		{"short offset index", indexSuffix, func(b []byte) []byte { return b[:len(b)-3] }},
		{"short time index", timeIndexSuffix, func(b []byte) []byte { return b[:len(b)-timeEntrySize] }},
		{"offset index entry points into a batch", indexSuffix, func(b []byte) []byte {
			be.PutUint32(b[len(b)-4:], be.Uint32(b[len(b)-4:])+5)
			return b
		}},
		{"offset index entry names the wrong offset", indexSuffix, func(b []byte) []byte {
			be.PutUint32(b[len(b)-8:], be.Uint32(b[len(b)-8:])+1)
			return b
		}},
		{"time index out of order", timeIndexSuffix, func(b []byte) []byte {
			copy(b[timeEntrySize:], b[:timeEntrySize])
			return b
		}},
		{"time index points past the segment", timeIndexSuffix, func(b []byte) []byte {
			be.PutUint32(b[len(b)-4:], 1<<30)
			return b
		}},
		{"garbage offset index", indexSuffix, func(b []byte) []byte {
			for i := range b {
				b[i] = byte(i * 7)
			}
			return b
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			eachFS(t, func(t *testing.T, h *harness) {
				h.cfg.SegmentBytes = 4 << 10
				h.cfg.IndexIntervalBytes = 256
				l := h.open()
				want := appendN(t, l, 50, 2, 100, 60, 1)
				mustClose(t, l)
				segs := segmentFiles(t, h.fs, h.dir, logSuffix)
				for _, seg := range []string{segs[0], segs[len(segs)-1]} { // an old and the active segment
					path := h.fs.PathJoin(h.dir, seg[:20]+tc.suffix)
					orig := readFile(t, h.fs, path)
					if tc.damage == nil {
						if err := h.fs.Remove(path); err != nil {
							t.Fatal(err)
						}
					} else {
						rewriteFile(t, h.fs, path, tc.damage(slices.Clone(orig)))
					}
					l = h.open()
					equalBatches(t, readAll(t, l), want)
					for i, b := range want {
						hd, _ := batch.ParseHeader(b)
						got, ok, err := l.FirstBatchAtOrAfterTime(nil, hd.MaxTimestamp)
						if err != nil || !ok || !bytes.Equal(got, want[i]) {
							t.Fatalf("FirstBatchAtOrAfterTime(%d) wrong after rebuild: %v %v", hd.MaxTimestamp, ok, err)
						}
					}
					mustClose(t, l)
					if got := readFile(t, h.fs, path); !bytes.Equal(got, orig) {
						t.Fatalf("%s: rebuilt index differs from the original (%d vs %d bytes)", seg, len(got), len(orig))
					}
				}
			})
		})
	}
}

func TestOpenRemovesStrayFiles(t *testing.T) {
	eachFS(t, func(t *testing.T, h *harness) {
		l := h.open()
		appendN(t, l, 3, 1, 0, 10, 0)
		mustClose(t, l)
		for _, name := range []string{"00000000000000000000.log.tmp", "leader-epoch-checkpoint.tmp", "00000000000000000099.index", "00000000000000000099.timeindex"} {
			rewriteFile(t, h.fs, h.fs.PathJoin(h.dir, name), []byte("junk"))
		}
		l = h.open()
		defer mustClose(t, l)
		got := strings.Join(listDir(t, h.fs, h.dir), " ")
		if got != "00000000000000000000.index 00000000000000000000.log 00000000000000000000.timeindex leader-epoch-checkpoint" {
			t.Fatalf("files after open: %s", got)
		}
	})
}

func TestEpochCacheRecovery(t *testing.T) {
	t.Run("missing checkpoint rebuilt from batches", func(t *testing.T) {
		eachFS(t, func(t *testing.T, h *harness) {
			h.cfg.SegmentBytes = 1 << 10
			l := h.open()
			for _, e := range []int32{1, 1, 3, 3, 3, 5, 5} {
				appendN(t, l, 2, 2, 0, 60, e)
			}
			want := fmt.Sprint(l.Epochs().entries())
			mustClose(t, l)
			if err := h.fs.Remove(h.fs.PathJoin(h.dir, epochCheckpointFile)); err != nil {
				t.Fatal(err)
			}
			l = h.open()
			defer mustClose(t, l)
			if got := fmt.Sprint(l.Epochs().entries()); got != want || want != "[{1 0} {3 8} {5 20}]" {
				t.Fatalf("rebuilt %s, want %s", got, want)
			}
			if !fileExists(h.fs, h.fs.PathJoin(h.dir, epochCheckpointFile)) {
				t.Fatal("rebuilt cache not written")
			}
		})
	})
	t.Run("corrupt checkpoint rebuilt", func(t *testing.T) {
		eachFS(t, func(t *testing.T, h *harness) {
			l := h.open()
			appendN(t, l, 2, 2, 0, 60, 4)
			mustClose(t, l)
			rewriteFile(t, h.fs, h.fs.PathJoin(h.dir, epochCheckpointFile), []byte("0\n2\n4 0\n"))
			l = h.open()
			defer mustClose(t, l)
			if got := fmt.Sprint(l.Epochs().entries()); got != "[{4 0}]" {
				t.Fatalf("entries %s", got)
			}
			if !strings.Contains(h.logs.String(), "rebuilding the leader epoch cache") {
				t.Fatal("no warning")
			}
		})
	})
	t.Run("entries beyond the recovered end dropped", func(t *testing.T) {
		fs := vfs.NewCrashableMem()
		h := newHarness(t, fs, "/d/t-0")
		l := h.open()
		appendN(t, l, 3, 1, 0, 10, 1)
		l.Sync()
		appendN(t, l, 3, 1, 0, 10, 2) // epoch 2 is checkpointed (fsynced), its batches are not
		h.fs = fs.CrashClone(vfs.CrashCloneCfg{})
		mustClose(t, l)
		l = h.open()
		defer mustClose(t, l)
		if got := fmt.Sprint(l.Epochs().entries()); got != "[{1 0}]" || l.LogEndOffset() != 3 {
			t.Fatalf("entries %s, LEO %d", got, l.LogEndOffset())
		}
		if e, end := l.Epochs().EndOffsetFor(1); e != 1 || end != 3 {
			t.Fatalf("EndOffsetFor(1) = %d, %d", e, end)
		}
	})
	t.Run("epochs in the scanned tail added", func(t *testing.T) {
		eachFS(t, func(t *testing.T, h *harness) {
			l := h.open()
			appendN(t, l, 2, 1, 0, 10, 1)
			appendN(t, l, 2, 1, 0, 10, 2)
			mustClose(t, l)
			h.crash()
			rewriteFile(t, h.fs, h.fs.PathJoin(h.dir, epochCheckpointFile), []byte("0\n1\n1 0\n"))
			l = h.open()
			defer mustClose(t, l)
			if got := fmt.Sprint(l.Epochs().entries()); got != "[{1 0} {2 2}]" {
				t.Fatalf("entries %s", got)
			}
		})
	})
}

func TestLogStartOffsetBeyondRecoveredEnd(t *testing.T) {
	fs := vfs.NewCrashableMem()
	h := newHarness(t, fs, "/d/t-0")
	l := h.open()
	appendN(t, l, 3, 1, 0, 10, 1)
	l.Sync()
	appendN(t, l, 5, 1, 0, 10, 1)
	if err := l.DeleteRecords(6); err != nil { // persisted; offsets 3-7 are not
		t.Fatal(err)
	}
	h.fs = fs.CrashClone(vfs.CrashCloneCfg{})
	mustClose(t, l)
	l = h.open()
	defer mustClose(t, l)
	if l.LogStartOffset() != 6 || l.LogEndOffset() != 6 || l.NumSegments() != 1 {
		t.Fatalf("[%d, %d) in %d segments, want an empty log at 6", l.LogStartOffset(), l.LogEndOffset(), l.NumSegments())
	}
	if got := segmentFiles(t, h.fs, h.dir, logSuffix); fmt.Sprint(got) != "[00000000000000000006.log]" {
		t.Fatalf("segments %v", got)
	}
	res, err := l.Append(makeBatch(t, 1, 0, 1), 2)
	if err != nil || res.BaseOffset != 6 {
		t.Fatalf("append: %+v %v", res, err)
	}
}
