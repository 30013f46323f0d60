package log

import (
	"fmt"
	"log/slog"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/runnel-io/runnel/broker/internal/batch"
)

// BenchmarkClean measures one cleaning pass over 32 MiB of non-active
// segments on real files: batches of 10 records with 1 KiB values over
// 4096 keys (about 8 versions a key, so 7/8 of the records go), uncompressed
// and zstd. Its copy sub-benchmark reads the same segments and writes them
// to a new file with one fsync: the raw IO cleaning cannot beat. Compare
// their MB/s (bytes of segments read per second).
func BenchmarkClean(b *testing.B) {
	for _, codec := range []batch.Codec{batch.CodecNone, batch.CodecZstd} {
		for _, mode := range []string{"clean", "copy"} {
			b.Run(codec.String()+"/"+mode, func(b *testing.B) {
				b.ReportAllocs()
				m := NewOffsetMap(128<<20, 0)
				var total int64
				for range b.N {
					b.StopTimer()
					l, bytes := dirtyBenchLog(b, codec)
					total = bytes
					b.StartTimer()
					switch mode {
					case "clean":
						if _, err := l.Clean(ctx, m, CleanOptions{}); err != nil {
							b.Fatal(err)
						}
					case "copy":
						copySegments(b, l)
					}
					b.StopTimer()
					l.Close()
					b.StartTimer()
				}
				b.SetBytes(total)
			})
		}
	}
}

// dirtyBenchLog builds a fresh log of 32 MiB of dirty non-active segments
// and returns it with their size.
func dirtyBenchLog(b *testing.B, codec batch.Codec) (*Log, int64) {
	cfg := DefaultConfig()
	cfg.Compact, cfg.SegmentBytes, cfg.MinCleanableDirtyRatio, cfg.RetentionMs = true, 8<<20, 0.5, -1
	l, err := Open(Options{FS: vfs.Default, Dir: b.TempDir() + "/t-0", Config: cfg, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		b.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(1, 1))
	value := make([]byte, 1000)
	recs := make([]kv, 10)
	for l.Size() < 33<<20 {
		for i := range recs {
			for j := range value {
				value[j] = byte('a' + rng.IntN(16)) // compressible about 2:1, as text is
			}
			recs[i] = kv{fmt.Sprintf("key-%04d", rng.IntN(4096)), val(string(value))}
		}
		if _, err := l.Append(kvBatch(b, codec, 1_700_000_000_000, -1, 0, recs...), 0); err != nil {
			b.Fatal(err)
		}
	}
	if err := l.Sync(); err != nil {
		b.Fatal(err)
	}
	c := l.Cleanable(math.MaxInt64)
	return l, c.DirtyBytes
}

// copySegments reads every non-active segment and writes it to one new
// file, fsynced.
func copySegments(b *testing.B, l *Log) {
	l.mu.RLock()
	segs := append([]*segment(nil), l.mu.segments[:len(l.mu.segments)-1]...)
	l.mu.RUnlock()
	out, err := l.fs.Create(l.path("copy"), vfs.WriteCategoryUnspecified)
	if err != nil {
		b.Fatal(err)
	}
	buf := make([]byte, 1<<20)
	var at int64
	for _, s := range segs {
		for off := int64(0); off < s.size; {
			n := min(int64(len(buf)), s.size-off)
			if err := readAt(s.file.f, buf[:n], off); err != nil {
				b.Fatal(err)
			}
			if _, err := out.WriteAt(buf[:n], at); err != nil {
				b.Fatal(err)
			}
			off, at = off+n, at+n
		}
	}
	if err := out.Sync(); err != nil {
		b.Fatal(err)
	}
	out.Close()
}
