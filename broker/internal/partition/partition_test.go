package partition

import (
	"encoding/binary"
	"errors"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/runnel-io/runnel/broker/internal/batch"
	plog "github.com/runnel-io/runnel/broker/internal/log"
)

// makeBatch builds an uncompressed batch of n records with timestamps
// ts, ts+1, ... and the given producer fields.
func makeBatch(n int, ts int64, pid int64, epoch int16, seq int32) []byte {
	var recs []byte
	for i := range n {
		r := kmsg.Record{OffsetDelta: int32(i), TimestampDelta64: int64(i), Key: []byte("k"), Value: []byte("value")}
		r.Length = int32(len(r.AppendTo(nil)) - 1) // the rest, after a 1-byte varint 0
		recs = r.AppendTo(recs)
	}
	b := kmsg.RecordBatch{
		PartitionLeaderEpoch: -1, Magic: 2, LastOffsetDelta: int32(n - 1),
		FirstTimestamp: ts, MaxTimestamp: ts + int64(n-1),
		ProducerID: pid, ProducerEpoch: epoch, FirstSequence: seq,
		NumRecords: int32(n), Records: recs,
	}
	out := b.AppendTo(nil)
	binary.BigEndian.PutUint32(out[8:], uint32(len(out)-12))
	binary.BigEndian.PutUint32(out[17:], batch.ComputeCRC(out))
	return out
}

func testConfig() Config {
	return Config{
		Log:             plog.Config{SegmentBytes: 1 << 20, IndexIntervalBytes: 4096, RetentionMs: -1, RetentionBytes: -1},
		MaxMessageBytes: 1 << 20,
	}
}

func openTest(t *testing.T, fs vfs.FS, cfg Config, now func() time.Time) *Partition {
	t.Helper()
	p, err := Open(Options{FS: fs, Dir: "p", Topic: "t", Index: 0, Config: cfg, Now: now})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestAppendCommitRead(t *testing.T) {
	fs := vfs.NewMem()
	p := openTest(t, fs, testConfig(), nil)
	defer p.Close()
	res, err := p.Append(makeBatch(3, 1000, -1, -1, -1), 1)
	if err != nil {
		t.Fatal(err)
	}
	if res.BaseOffset != 0 || res.LastOffset != 2 {
		t.Fatalf("offsets %+v", res)
	}
	// Not visible before the commit: the high watermark covers synced data.
	if o := p.Offsets(); o.HighWatermark != 0 || o.LogEnd != 3 {
		t.Fatalf("before commit: %+v", o)
	}
	if err := p.Commit(); err != nil {
		t.Fatal(err)
	}
	got, o, err := p.Read(nil, 0, 1<<20, true)
	if err != nil || o.HighWatermark != 3 {
		t.Fatalf("read: %v %+v", err, o)
	}
	h, err := batch.ParseHeader(got)
	if err != nil || h.BaseOffset != 0 || h.NumRecords != 3 {
		t.Fatalf("read back %+v %v", h, err)
	}
}

func TestWaitWakesOnCommit(t *testing.T) {
	p := openTest(t, vfs.NewMem(), testConfig(), nil)
	defer p.Close()
	ch := make(chan struct{}, 1)
	p.Wait(ch)
	defer p.Unwait(ch)
	if _, err := p.Append(makeBatch(1, 0, -1, -1, -1), 1); err != nil {
		t.Fatal(err)
	}
	select {
	case <-ch:
		t.Fatal("woken before the high watermark moved")
	default:
	}
	if err := p.Commit(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-ch:
	default:
		t.Fatal("not woken by the commit")
	}
}

func TestIdempotentDedupeSurvivesRestart(t *testing.T) {
	for _, clean := range []bool{true, false} {
		name := "clean"
		if !clean {
			name = "crash"
		}
		t.Run(name, func(t *testing.T) {
			fs := vfs.NewCrashableMem()
			p := openTest(t, fs, testConfig(), nil)
			if _, err := p.Append(makeBatch(2, 0, 42, 0, 0), 1); err != nil {
				t.Fatal(err)
			}
			if _, err := p.Append(makeBatch(2, 0, 42, 0, 2), 1); err != nil {
				t.Fatal(err)
			}
			if err := p.Commit(); err != nil {
				t.Fatal(err)
			}
			if clean {
				if err := p.Close(); err != nil {
					t.Fatal(err)
				}
			} else {
				fs = fs.CrashClone(vfs.CrashCloneCfg{})
			}
			p2 := openTest(t, fs, testConfig(), nil)
			defer p2.Close()
			res, err := p2.Append(makeBatch(2, 0, 42, 0, 2), 1)
			if err != nil || !res.Duplicate || res.BaseOffset != 2 {
				t.Fatalf("retry after restart: %+v %v", res, err)
			}
			if _, err := p2.Append(makeBatch(1, 0, 42, 0, 7), 1); !errors.Is(err, ErrOutOfOrderSequence) {
				t.Fatalf("gap after restart: %v", err)
			}
			res, err = p2.Append(makeBatch(1, 0, 42, 0, 4), 1)
			if err != nil || res.BaseOffset != 4 {
				t.Fatalf("next batch after restart: %+v %v", res, err)
			}
		})
	}
}

func TestRejects(t *testing.T) {
	cfg := testConfig()
	cfg.MaxMessageBytes = 100
	now := time.UnixMilli(10_000_000)
	cfg.TimestampAfterMaxMs = 1000
	p := openTest(t, vfs.NewMem(), cfg, func() time.Time { return now })
	defer p.Close()
	if _, err := p.Append(makeBatch(5, now.UnixMilli(), -1, -1, -1), 1); !errors.Is(err, ErrRecordTooLarge) {
		t.Fatalf("too large: %v", err)
	}
	if _, err := p.Append(makeBatch(1, now.UnixMilli()+5000, -1, -1, -1), 1); !errors.Is(err, ErrInvalidTimestamp) {
		t.Fatalf("future timestamp: %v", err)
	}
	bad := makeBatch(1, now.UnixMilli(), -1, -1, -1)
	bad[len(bad)-1] ^= 0xff
	if _, err := p.Append(bad, 1); !errors.Is(err, batch.ErrCRC) {
		t.Fatalf("bad crc: %v", err)
	}
	if p.Offsets().LogEnd != 0 {
		t.Fatal("a rejected batch was stored")
	}
}

func TestLogAppendTime(t *testing.T) {
	cfg := testConfig()
	cfg.LogAppendTime = true
	now := time.UnixMilli(5_000_000)
	p := openTest(t, vfs.NewMem(), cfg, func() time.Time { return now })
	defer p.Close()
	res, err := p.Append(makeBatch(2, 1, -1, -1, -1), 1)
	if err != nil || res.LogAppendTime != now.UnixMilli() {
		t.Fatalf("%+v %v", res, err)
	}
	p.Commit()
	got, _, err := p.Read(nil, 0, 1<<20, true)
	if err != nil {
		t.Fatal(err)
	}
	h, _ := batch.ParseHeader(got)
	if !h.IsLogAppendTime() || h.MaxTimestamp != now.UnixMilli() || batch.ComputeCRC(got) != h.CRC {
		t.Fatalf("stored header %+v", h)
	}
}

func TestOffsetForTime(t *testing.T) {
	p := openTest(t, vfs.NewMem(), testConfig(), nil)
	defer p.Close()
	// offsets 0-2 at 100,101,102; 3-5 at 200,201,202
	p.Append(makeBatch(3, 100, -1, -1, -1), 1)
	p.Append(makeBatch(3, 200, -1, -1, -1), 1)
	p.Commit()
	cases := []struct {
		ts, off, gotTs int64
	}{
		{50, 0, 100},
		{101, 1, 101},
		{150, 3, 200},
		{202, 5, 202},
		{203, -1, -1},
		{Earliest, 0, -1},
		{Latest, 6, -1},
		{MaxTimestamp, 5, 202},
	}
	for _, c := range cases {
		off, ts, err := p.OffsetForTime(c.ts, false, nil)
		if err != nil || off != c.off || ts != c.gotTs {
			t.Errorf("OffsetForTime(%d) = %d, %d, %v; want %d, %d", c.ts, off, ts, err, c.off, c.gotTs)
		}
	}
}

func TestDeleteRecords(t *testing.T) {
	p := openTest(t, vfs.NewMem(), testConfig(), nil)
	defer p.Close()
	p.Append(makeBatch(3, 0, -1, -1, -1), 1)
	p.Commit()
	if _, err := p.DeleteRecords(4); !errors.Is(err, plog.ErrOffsetOutOfRange) {
		t.Fatalf("beyond hw: %v", err)
	}
	low, err := p.DeleteRecords(-1)
	if err != nil || low != 3 {
		t.Fatalf("delete to hw: %d %v", low, err)
	}
}

func TestReadCrossesSegments(t *testing.T) {
	cfg := testConfig()
	cfg.Log.SegmentBytes = 300 // a few batches per segment
	p := openTest(t, vfs.NewMem(), cfg, nil)
	defer p.Close()
	for range 10 {
		if _, err := p.Append(makeBatch(2, 0, -1, -1, -1), 1); err != nil {
			t.Fatal(err)
		}
	}
	p.Commit()
	if p.Log().NumSegments() < 3 {
		t.Fatalf("want several segments, got %d", p.Log().NumSegments())
	}
	got, _, err := p.Read(nil, 0, 1<<20, true)
	if err != nil {
		t.Fatal(err)
	}
	if next, _ := nextOffset(got); next != 20 {
		t.Fatalf("one read ended at offset %d, want all 20 records across segments", next)
	}
}
