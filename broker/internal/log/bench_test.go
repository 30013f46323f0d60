package log

import (
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/cockroachdb/pebble/v2/vfs/errorfs"
)

// benchLog opens a log on real files (t.TempDir) counting segment fsyncs.
func benchLog(b *testing.B, cfg Config) (*Log, *atomic.Int64) {
	b.Helper()
	var fsyncs atomic.Int64
	fs := errorfs.Wrap(vfs.Default, errorfs.InjectorFunc(func(op errorfs.Op) error {
		if op.Kind == errorfs.OpFileSyncData && strings.HasSuffix(op.Path, logSuffix) {
			fsyncs.Add(1)
		}
		return nil
	}))
	l, err := Open(Options{FS: fs, Dir: b.TempDir() + "/t-0", Config: cfg, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { l.Close() })
	return l, &fsyncs
}

// oneKB is a 1 KiB batch: 10 records of ~90-byte values.
func oneKB(b testing.TB) []byte {
	batch := makeBatch(b, 10, 1_700_000_000_000, 86)
	if n := len(batch); n < 1000 || n > 1100 {
		b.Fatalf("batch is %d bytes", n)
	}
	return batch
}

// BenchmarkAppend appends 1 KiB batches from one goroutine, without and with
// a Sync after each.
func BenchmarkAppend(b *testing.B) {
	for _, sync := range []bool{false, true} {
		name := "nosync"
		if sync {
			name = "sync"
		}
		b.Run(name, func(b *testing.B) {
			l, fsyncs := benchLog(b, DefaultConfig())
			buf := oneKB(b)
			b.SetBytes(int64(len(buf)))
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				if _, err := l.Append(buf, 1); err != nil {
					b.Fatal(err)
				}
				if sync {
					if err := l.Sync(); err != nil {
						b.Fatal(err)
					}
				}
			}
			b.ReportMetric(float64(fsyncs.Load())/float64(b.N), "fsyncs/append")
		})
	}
}

// BenchmarkAppendParallelSync has many producers each appending a 1 KiB
// batch and calling Sync before the next (acks=all on one partition). Group
// commit makes fsyncs/append fall well below 1.
func BenchmarkAppendParallelSync(b *testing.B) {
	l, fsyncs := benchLog(b, DefaultConfig())
	b.SetBytes(int64(len(oneKB(b))))
	b.SetParallelism(16) // 16 producers per GOMAXPROCS
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		buf := oneKB(b)
		for pb.Next() {
			if _, err := l.Append(buf, 1); err != nil {
				b.Error(err)
				return
			}
			if err := l.Sync(); err != nil {
				b.Error(err)
				return
			}
		}
	})
	b.ReportMetric(float64(fsyncs.Load())/float64(b.N), "fsyncs/append")
}

// BenchmarkRead reads a 64 MiB log of 1 KiB batches from real files (page
// cache): a consumer fetching 1 MiB at a time, and a tailing consumer
// fetching one batch at a random offset.
func BenchmarkRead(b *testing.B) {
	cfg := DefaultConfig()
	cfg.SegmentBytes = 16 << 20
	l, _ := benchLog(b, cfg)
	buf := oneKB(b)
	for l.Size() < 64<<20 {
		if _, err := l.Append(buf, 1); err != nil {
			b.Fatal(err)
		}
	}
	leo := l.LogEndOffset()
	b.Run("1MiB", func(b *testing.B) {
		dst := make([]byte, 0, 1<<20)
		var off int64
		b.SetBytes(1 << 20)
		b.ReportAllocs()
		for range b.N {
			var err error
			if dst, err = l.Read(dst[:0], off, leo, 1<<20, true); err != nil {
				b.Fatal(err)
			}
			off += int64(len(dst)/len(buf)) * 10
			if off >= leo {
				off = 0
			}
		}
	})
	b.Run("1batch", func(b *testing.B) {
		dst := make([]byte, 0, 4<<10)
		b.SetBytes(int64(len(buf)))
		b.ReportAllocs()
		for i := range b.N {
			off := int64(i*7919) % leo
			var err error
			if dst, err = l.Read(dst[:0], off, leo, len(buf), true); err != nil || len(dst) != len(buf) {
				b.Fatal(err, len(dst))
			}
		}
	})
}
