package log

import (
	"errors"
	"log/slog"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/runnel-io/runnel/broker/internal/batch"
)

// FuzzRecover writes arbitrary bytes as a segment file (and optionally as its
// offset index, with or without the clean-shutdown marker) and checks that
// Open never panics and yields a log whose reads work and whose appends
// continue at the log end offset.
func FuzzRecover(f *testing.F) {
	var seg []byte
	for i := range 5 {
		seg = append(seg, withOffsets(makeBatch(f, 1+i, int64(i), 20), int64(i*(i+1)/2), 1)...)
	}
	idx := offsetIndex(nil)
	idx.add(3, int32(len(makeBatch(f, 1, 0, 20))+len(makeBatch(f, 2, 0, 20))))
	f.Add(seg, []byte(nil), false)
	f.Add(seg[:len(seg)-7], []byte(nil), false)
	f.Add(seg, []byte(idx), true)
	f.Add(seg[:100], []byte(idx), true)
	f.Add(append(seg[:200:200], make([]byte, 100)...), []byte(nil), false)
	f.Add([]byte{}, []byte{1, 2, 3}, true)

	f.Fuzz(func(t *testing.T, segment, index []byte, clean bool) {
		fs := vfs.NewMem()
		dir := "/p/t-0"
		if err := fs.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		write := func(name string, data []byte) {
			fl, err := fs.Create(fs.PathJoin(dir, name), vfs.WriteCategoryUnspecified)
			if err != nil {
				t.Fatal(err)
			}
			fl.WriteAt(data, 0)
			fl.Close()
		}
		write(segmentFileName(0, logSuffix), segment)
		if index != nil {
			write(segmentFileName(0, indexSuffix), index)
			write(segmentFileName(0, timeIndexSuffix), nil)
		}
		if clean {
			write(cleanShutdownFile, nil)
		}
		cfg := DefaultConfig()
		cfg.IndexIntervalBytes = 64
		l, err := Open(Options{FS: fs, Dir: dir, Config: cfg, Logger: slog.New(slog.DiscardHandler)})
		if err != nil {
			t.Fatalf("Open: %v", err)
		}
		defer l.Close()
		if l.LogStartOffset() != 0 || l.LogEndOffset() < 0 {
			t.Fatalf("log [%d, %d)", l.LogStartOffset(), l.LogEndOffset())
		}
		// Read everything. A scanned (unclean) log holds only valid batches;
		// trusted index files (clean) may hide garbage, which must surface
		// as ErrCorrupt, never as a panic or a torn batch.
		for off := int64(0); off < l.LogEndOffset(); {
			b, err := l.Read(nil, off, l.LogEndOffset(), 1<<20, true)
			if err != nil {
				if clean && errors.Is(err, ErrCorrupt) {
					break
				}
				t.Fatalf("Read(%d): %v", off, err)
			}
			if len(b) == 0 {
				t.Fatalf("Read(%d) returned nothing below LEO %d", off, l.LogEndOffset())
			}
			for len(b) > 0 {
				h, err := batch.ParseHeader(b)
				if err != nil || h.Size() > len(b) || h.LastOffset() < off || h.BaseOffset > off {
					t.Fatalf("Read(%d) returned a bad batch: %+v, %v", off, h, err)
				}
				if !clean && batch.ComputeCRC(b[:h.Size()]) != h.CRC {
					t.Fatalf("recovered batch at %d has a bad CRC", h.BaseOffset)
				}
				off = h.LastOffset() + 1
				b = b[h.Size():]
			}
		}
		leo := l.LogEndOffset()
		res, err := l.Append(makeBatch(t, 2, 0, 5), 3)
		if err != nil || res.BaseOffset != leo {
			t.Fatalf("Append: %+v, %v (LEO was %d)", res, err, leo)
		}
		b, err := l.Read(nil, leo, leo+2, 1<<20, true)
		if err != nil || len(b) == 0 {
			t.Fatalf("read back: %v", err)
		}
	})
}
