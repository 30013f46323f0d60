package log

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/cockroachdb/pebble/v2/vfs/errorfs"
)

// faults injects errorfs.ErrInjected into operations of one kind on paths
// with a suffix, while on.
type faults struct {
	on     atomic.Bool
	kind   errorfs.OpKind
	suffix string
}

func (f *faults) injector() errorfs.Injector {
	return errorfs.InjectorFunc(func(op errorfs.Op) error {
		if f.on.Load() && op.Kind == f.kind && strings.HasSuffix(op.Path, f.suffix) {
			return errorfs.ErrInjected
		}
		return nil
	})
}

func TestIOErrorsFailTheLog(t *testing.T) {
	tests := []struct {
		name   string
		kind   errorfs.OpKind
		suffix string
		action func(t *testing.T, l *Log) error
	}{
		{"segment write", errorfs.OpFileWriteAt, logSuffix, func(t *testing.T, l *Log) error {
			_, err := l.Append(makeBatch(t, 1, 0, 10), 1)
			return err
		}},
		{"segment fsync", errorfs.OpFileSyncData, logSuffix, func(t *testing.T, l *Log) error {
			l.Append(makeBatch(t, 1, 0, 10), 1)
			return l.Sync()
		}},
		{"segment create at roll", errorfs.OpCreate, logSuffix, func(t *testing.T, l *Log) error {
			_, err := l.Append(makeBatch(t, 1, 0, 5000), 1)
			return err
		}},
		{"index write at roll", errorfs.OpFileWriteAt, indexSuffix + tmpSuffix, func(t *testing.T, l *Log) error {
			_, err := l.Append(makeBatch(t, 1, 0, 5000), 1)
			return err
		}},
		{"epoch checkpoint", errorfs.OpCreate, epochCheckpointFile + tmpSuffix, func(t *testing.T, l *Log) error {
			_, err := l.Append(makeBatch(t, 1, 0, 10), 2)
			return err
		}},
		{"log start offset checkpoint", errorfs.OpFileSync, logStartOffsetFile + tmpSuffix, func(t *testing.T, l *Log) error {
			return l.DeleteRecords(1)
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			mem := vfs.NewCrashableMem()
			f := &faults{kind: tc.kind, suffix: tc.suffix}
			h := newHarness(t, errorfs.Wrap(mem, f.injector()), "/d/t-0")
			h.cfg.SegmentBytes = 4 << 10
			l := h.open()
			want := appendN(t, l, 5, 2, 0, 100, 1)
			if err := l.Sync(); err != nil {
				t.Fatal(err)
			}
			f.on.Store(true)
			if err := tc.action(t, l); !errors.Is(err, ErrFailed) {
				t.Fatalf("action: %v, want ErrFailed", err)
			}
			f.on.Store(false)
			// Failed for good: no silent recovery.
			if _, err := l.Append(makeBatch(t, 1, 0, 10), 1); !errors.Is(err, ErrFailed) {
				t.Fatalf("Append after failure: %v", err)
			}
			if err := l.Sync(); !errors.Is(err, ErrFailed) {
				t.Fatalf("Sync after failure: %v", err)
			}
			if err := l.Truncate(0); !errors.Is(err, ErrFailed) {
				t.Fatalf("Truncate after failure: %v", err)
			}
			// Reads still work.
			got, err := l.Read(nil, 0, 10, 1<<20, true)
			if err != nil || len(splitBatches(t, got)) != 5 {
				t.Fatalf("Read after failure: %v", err)
			}
			if err := l.Close(); !errors.Is(err, ErrFailed) {
				t.Fatalf("Close of a failed log: %v", err)
			}
			if fileExists(mem, "/d/t-0/"+cleanShutdownFile) {
				t.Fatal("failed log wrote the clean-shutdown marker")
			}
			// Everything synced before the failure survives a crash.
			h.fs = mem.CrashClone(vfs.CrashCloneCfg{})
			l = h.open()
			defer mustClose(t, l)
			got2 := readAll(t, l)
			if len(got2) < len(want) {
				t.Fatalf("recovered %d batches, %d were synced", len(got2), len(want))
			}
			equalBatches(t, got2[:len(want)], want)
		})
	}
}

// Random write errors at any point: the log never panics, and after a crash
// it recovers at least every batch a successful Sync acknowledged.
func TestRandomIOErrors(t *testing.T) {
	for seed := range uint64(40) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			mem := vfs.NewCrashableMem()
			rng := rand.New(rand.NewPCG(seed, 1))
			var mu sync.Mutex
			var on atomic.Bool
			inj := errorfs.InjectorFunc(func(op errorfs.Op) error {
				if !on.Load() || op.Kind.ReadOrWrite() != errorfs.OpIsWrite {
					return nil
				}
				mu.Lock()
				defer mu.Unlock()
				if rng.IntN(60) == 0 {
					return errorfs.ErrInjected
				}
				return nil
			})
			h := newHarness(t, errorfs.Wrap(mem, inj), "/d/t-0")
			h.cfg.SegmentBytes = 3 << 10
			h.cfg.IndexIntervalBytes = 200
			l := h.open()
			on.Store(true)
			var appended [][]byte
			acked := 0
			for i := 0; i < 200; i++ {
				b := makeBatch(t, 2, int64(i), 80)
				res, err := l.Append(b, int32(i/50))
				if err != nil {
					break
				}
				appended = append(appended, withOffsets(b, res.BaseOffset, int32(i/50)))
				if i%3 == 0 {
					if err := l.Sync(); err != nil {
						break
					}
					acked = len(appended)
				}
			}
			l.Close()
			on.Store(false)
			h.fs = mem.CrashClone(vfs.CrashCloneCfg{})
			l = h.open()
			defer mustClose(t, l)
			got := readAll(t, l)
			if len(got) < acked || len(got) > len(appended) {
				t.Fatalf("recovered %d batches; %d acked, %d appended", len(got), acked, len(appended))
			}
			equalBatches(t, got, appended[:len(got)])
		})
	}
}

// Opening with an IO error at any operation returns the error, or (if the
// operation did not matter) a correct log; never a panic.
func TestOpenWithIOErrors(t *testing.T) {
	mem := vfs.NewMem()
	h := newHarness(t, mem, "/d/t-0")
	h.cfg.SegmentBytes = 2 << 10
	h.cfg.IndexIntervalBytes = 300
	l := h.open()
	want := appendN(t, l, 20, 2, 0, 100, 1)
	mustClose(t, l)
	h.crash()
	var ops atomic.Int32
	h.fs = errorfs.Wrap(mem, errorfs.InjectorFunc(func(errorfs.Op) error { ops.Add(1); return nil }))
	l = h.open()
	openOps := ops.Load()
	mustClose(t, l)
	for i := range openOps {
		h.crash()
		h.fs = errorfs.Wrap(mem, errorfs.ErrInjected.If(errorfs.OnIndex(i)))
		l, err := Open(h.options())
		if err != nil {
			if !strings.Contains(err.Error(), "injected error") {
				t.Fatalf("op %d: %v", i, err)
			}
			continue
		}
		equalBatches(t, readAll(t, l), want)
		mustClose(t, l)
	}
}
