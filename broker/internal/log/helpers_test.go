package log

import (
	"bytes"
	"encoding/binary"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/runnel-io/runnel/broker/internal/batch"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// makeBatch builds a valid v2 record batch of n uncompressed records with
// valueSize-byte values; record i has timestamp ts+i. Offsets and epoch are
// left for the log to fill in.
func makeBatch(t testing.TB, n int, ts int64, valueSize int) []byte {
	t.Helper()
	var recs []byte
	for i := range n {
		r := kmsg.Record{
			TimestampDelta64: int64(i),
			OffsetDelta:      int32(i),
			Key:              []byte{byte(i)},
			Value:            bytes.Repeat([]byte{byte('a' + i%26)}, valueSize),
		}
		r.Length = int32(len(r.AppendTo(nil)) - 1) // a zero Length encodes in one byte
		recs = r.AppendTo(recs)
	}
	rb := kmsg.RecordBatch{
		Length:               int32(batch.HeaderSize - batch.LengthOverhead + len(recs)),
		PartitionLeaderEpoch: -1,
		Magic:                2,
		LastOffsetDelta:      int32(n - 1),
		FirstTimestamp:       ts,
		MaxTimestamp:         ts + int64(n-1),
		ProducerID:           -1,
		ProducerEpoch:        -1,
		FirstSequence:        -1,
		NumRecords:           int32(n),
		Records:              recs,
	}
	b := rb.AppendTo(nil)
	binary.BigEndian.PutUint32(b[17:], batch.ComputeCRC(b))
	return b
}

// withOffsets returns a copy of b as the log stores it at base with epoch.
func withOffsets(b []byte, base int64, epoch int32) []byte {
	c := slices.Clone(b)
	batch.SetBaseOffset(c, base)
	batch.SetPartitionLeaderEpoch(c, epoch)
	return c
}

// splitBatches splits whole batches; it fails the test on a partial one or
// a CRC mismatch.
func splitBatches(t testing.TB, b []byte) [][]byte {
	t.Helper()
	return splitBatchesCRC(t, b, true)
}

func splitBatchesCRC(t testing.TB, b []byte, checkCRC bool) [][]byte {
	t.Helper()
	var out [][]byte
	for len(b) > 0 {
		h, err := batch.ParseHeader(b)
		if err != nil || h.Size() > len(b) {
			t.Fatalf("not whole batches: %v (size %d, have %d)", err, h.Size(), len(b))
		}
		if checkCRC && batch.ComputeCRC(b[:h.Size()]) != h.CRC {
			t.Fatalf("batch at offset %d: bad CRC", h.BaseOffset)
		}
		out = append(out, b[:h.Size()])
		b = b[h.Size():]
	}
	return out
}

// clock is a settable test clock.
type clock struct{ ms atomic.Int64 }

func newClock(ms int64) *clock {
	c := &clock{}
	c.ms.Store(ms)
	return c
}
func (c *clock) Now() time.Time          { return time.UnixMilli(c.ms.Load()) }
func (c *clock) Advance(d time.Duration) { c.ms.Add(d.Milliseconds()) }

// logBuffer captures slog output for assertions.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *logBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *logBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// harness opens logs on one FS and directory.
type harness struct {
	t     testing.TB
	fs    vfs.FS
	dir   string
	cfg   Config
	clock *clock
	logs  *logBuffer
}

func newHarness(t testing.TB, fs vfs.FS, dir string) *harness {
	cfg := DefaultConfig()
	cfg.SegmentMs = 0
	cfg.RetentionMs = -1
	return &harness{t: t, fs: fs, dir: dir, cfg: cfg, clock: newClock(1_700_000_000_000), logs: &logBuffer{}}
}

func (h *harness) options() Options {
	return Options{
		FS: h.fs, Dir: h.dir, Config: h.cfg, Now: h.clock.Now,
		Logger: slog.New(slog.NewTextHandler(h.logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
	}
}

func (h *harness) open() *Log {
	h.t.Helper()
	l, err := Open(h.options())
	if err != nil {
		h.t.Fatalf("Open: %v", err)
	}
	return l
}

// eachFS runs fn against an in-memory FS and against real files.
func eachFS(t *testing.T, fn func(t *testing.T, h *harness)) {
	t.Run("mem", func(t *testing.T) {
		fn(t, newHarness(t, vfs.NewCrashableMem(), "/data/topic-0"))
	})
	t.Run("disk", func(t *testing.T) {
		fn(t, newHarness(t, vfs.Default, t.TempDir()+"/topic-0"))
	})
}

// appendN appends n batches of recs records each and returns the stored
// batches (with offsets and epoch) in order.
func appendN(t testing.TB, l *Log, n, recs int, ts int64, valueSize int, epoch int32) [][]byte {
	t.Helper()
	var out [][]byte
	for i := range n {
		b := makeBatch(t, recs, ts+int64(i), valueSize)
		res, err := l.Append(b, epoch)
		if err != nil {
			t.Fatalf("Append %d: %v", i, err)
		}
		if res.LastOffset-res.BaseOffset != int64(recs-1) {
			t.Fatalf("Append %d: result %+v for %d records", i, res, recs)
		}
		out = append(out, withOffsets(b, res.BaseOffset, epoch))
	}
	return out
}

// readAll reads every batch from the log start offset to the log end offset.
func readAll(t testing.TB, l *Log) [][]byte {
	t.Helper()
	return readAllCRC(t, l, true)
}

func readAllCRC(t testing.TB, l *Log, checkCRC bool) [][]byte {
	t.Helper()
	var out [][]byte
	off := l.LogStartOffset()
	for off < l.LogEndOffset() {
		b, err := l.Read(nil, off, l.LogEndOffset(), 64<<10, true)
		if err != nil {
			t.Fatalf("Read(%d): %v", off, err)
		}
		bs := splitBatchesCRC(t, b, checkCRC)
		if len(bs) == 0 {
			if l.cfg.Compact {
				break // compaction emptied the tail of the last full segment; the active one is empty
			}
			t.Fatalf("Read(%d) returned nothing below LEO %d", off, l.LogEndOffset())
		}
		for _, x := range bs {
			h, _ := batch.ParseHeader(x)
			if h.LastOffset() < off {
				t.Fatalf("Read(%d) returned batch ending at %d", off, h.LastOffset())
			}
			off = h.LastOffset() + 1
		}
		out = append(out, bs...)
	}
	return out
}

// equalBatches fails the test unless got equals want batch by batch.
func equalBatches(t testing.TB, got, want [][]byte) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("got %d batches, want %d", len(got), len(want))
	}
	for i := range got {
		if !bytes.Equal(got[i], want[i]) {
			gh, _ := batch.ParseHeader(got[i])
			wh, _ := batch.ParseHeader(want[i])
			t.Fatalf("batch %d differs: got offset %d (%d bytes), want offset %d (%d bytes)",
				i, gh.BaseOffset, len(got[i]), wh.BaseOffset, len(want[i]))
		}
	}
}

func mustClose(t testing.TB, l *Log) {
	t.Helper()
	if err := l.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
}

func fileExists(fs vfs.FS, path string) bool {
	_, err := fs.Stat(path)
	return err == nil
}

func listDir(t testing.TB, fs vfs.FS, dir string) []string {
	t.Helper()
	names, err := fs.List(dir)
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(names)
	return names
}

func segmentFiles(t testing.TB, fs vfs.FS, dir, suffix string) []string {
	var out []string
	for _, n := range listDir(t, fs, dir) {
		if strings.HasSuffix(n, suffix) && !strings.HasSuffix(n, tmpSuffix) {
			out = append(out, n)
		}
	}
	return out
}

// rewriteFile replaces a file's contents.
func rewriteFile(t testing.TB, fs vfs.FS, path string, data []byte) {
	t.Helper()
	f, err := fs.Create(path, vfs.WriteCategoryUnspecified)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt(data, 0); err != nil {
		t.Fatal(err)
	}
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}

func readFile(t testing.TB, fs vfs.FS, path string) []byte {
	t.Helper()
	b, err := readWholeFile(fs, path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// crash removes the clean-shutdown marker of a closed log, as if the process
// had died after writing everything.
func (h *harness) crash() {
	h.t.Helper()
	if err := h.fs.Remove(h.fs.PathJoin(h.dir, cleanShutdownFile)); err != nil && !isNotExist(err) {
		h.t.Fatal(err)
	}
}
