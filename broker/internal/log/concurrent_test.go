package log

import (
	"errors"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/cockroachdb/pebble/v2/vfs/errorfs"
	"github.com/runnel-io/runnel/broker/internal/batch"
)

// Producers append and sync, readers tail the log, and a housekeeper rolls,
// enforces retention (deleting segments under the readers) and looks up
// timestamps, all at once. Run with -race.
func TestConcurrentAppendReadSync(t *testing.T) {
	eachFS(t, func(t *testing.T, h *harness) {
		h.cfg.SegmentBytes = 8 << 10
		h.cfg.IndexIntervalBytes = 512
		h.cfg.RetentionBytes = 48 << 10
		l := h.open()
		defer mustClose(t, l)

		const producers, perProducer, readers = 4, 150, 3
		var stored sync.Map // base offset -> stored batch
		var producing sync.WaitGroup
		var done atomic.Bool
		errc := make(chan error, producers+readers+1)
		for p := range producers {
			producing.Add(1)
			go func() {
				defer producing.Done()
				for i := range perProducer {
					b := makeBatch(t, 1+i%3, int64(p*1000+i), 40+p*10)
					res, err := l.Append(b, 1)
					if err != nil {
						errc <- err
						return
					}
					stored.Store(res.BaseOffset, withOffsets(b, res.BaseOffset, 1))
					if err := l.Sync(); err != nil {
						errc <- err
						return
					}
				}
			}()
		}
		var background sync.WaitGroup
		for range readers {
			background.Add(1)
			go func() {
				defer background.Done()
				off := int64(0)
				var buf []byte
				for {
					finished := done.Load() // read before LEO: after it, LEO is final
					leo := l.LogEndOffset()
					if off >= leo {
						if finished {
							return
						}
						runtime.Gosched()
						continue
					}
					var err error
					buf, err = l.Read(buf[:0], off, leo, 4<<10, true)
					if errors.Is(err, ErrOffsetOutOfRange) {
						off = l.LogStartOffset() // retention overtook us
						continue
					}
					if err != nil {
						errc <- err
						return
					}
					for b := buf; len(b) > 0; {
						hd, err := batch.ParseHeader(b)
						if err != nil || hd.Size() > len(b) || batch.ComputeCRC(b[:hd.Size()]) != hd.CRC {
							errc <- errors.New("reader saw a torn or corrupt batch")
							return
						}
						if hd.LastOffset() < off || (hd.BaseOffset > off) {
							errc <- errors.New("reader saw a gap")
							return
						}
						off = hd.LastOffset() + 1
						b = b[hd.Size():]
					}
				}
			}()
		}
		background.Add(1)
		go func() {
			defer background.Done()
			for !done.Load() {
				if _, err := l.EnforceRetention(); err != nil {
					errc <- err
					return
				}
				if err := l.MaybeRoll(); err != nil {
					errc <- err
					return
				}
				if _, _, err := l.FirstBatchAtOrAfterTime(nil, 1500); err != nil {
					errc <- err
					return
				}
				if _, _, err := l.MaxTimestampBatch(nil); err != nil {
					errc <- err
					return
				}
				_ = l.Size() + int64(l.NumSegments())
				runtime.Gosched()
			}
		}()
		producing.Wait()
		done.Store(true)
		background.Wait()
		close(errc)
		for err := range errc {
			t.Fatal(err)
		}
		if l.LogEndOffset() != producers*(perProducer/3)*(1+2+3) {
			t.Fatalf("LEO %d", l.LogEndOffset())
		}
		for _, b := range readAll(t, l) {
			hd, _ := batch.ParseHeader(b)
			want, ok := stored.Load(hd.BaseOffset)
			if !ok || string(want.([]byte)) != string(b) {
				t.Fatalf("batch at %d differs from what was appended", hd.BaseOffset)
			}
		}
		if _, err := l.EnforceRetention(); err != nil {
			t.Fatal(err)
		}
		if l.Size() > h.cfg.RetentionBytes+h.cfg.SegmentBytes {
			t.Fatalf("retention did not run: %d bytes", l.Size())
		}
	})
}

// Producers that append while an fsync runs share the next one: with the
// first fsync held until every other producer has appended, exactly two
// fsyncs cover all of them, however the scheduler orders the Sync calls.
func TestGroupCommit(t *testing.T) {
	release := make(chan struct{})
	entered := make(chan struct{})
	var fsyncs atomic.Int32
	inj := errorfs.InjectorFunc(func(op errorfs.Op) error {
		if op.Kind == errorfs.OpFileSyncData && strings.HasSuffix(op.Path, logSuffix) {
			if fsyncs.Add(1) == 1 {
				close(entered)
				<-release
			}
		}
		return nil
	})
	h := newHarness(t, errorfs.Wrap(vfs.NewMem(), inj), "/d/t-0")
	l := h.open()
	defer mustClose(t, l)

	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		appendN(t, l, 1, 1, 0, 10, 0)
		if err := l.Sync(); err != nil {
			t.Error(err)
		}
	}()
	<-entered // the first fsync is running (and blocked)

	const n = 16
	var appended sync.WaitGroup
	for range n {
		appended.Add(1)
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := l.Append(makeBatch(t, 1, 0, 10), 0)
			appended.Done()
			if err != nil {
				t.Error(err)
				return
			}
			if err := l.Sync(); err != nil {
				t.Error(err)
			}
		}()
	}
	appended.Wait() // appends did not wait for the running fsync
	close(release)
	wg.Wait()
	if got := fsyncs.Load(); got != 2 {
		t.Fatalf("%d fsyncs for %d producers, want 2", got, n+1)
	}
	if err := l.Sync(); err != nil || fsyncs.Load() != 2 {
		t.Fatalf("Sync with nothing new fsynced again: %v, %d", err, fsyncs.Load())
	}
}

func TestFlushNeverSkipsFsync(t *testing.T) {
	var fsyncs atomic.Int32
	inj := errorfs.InjectorFunc(func(op errorfs.Op) error {
		if op.Kind == errorfs.OpFileSyncData && strings.HasSuffix(op.Path, logSuffix) {
			fsyncs.Add(1)
		}
		return nil
	})
	h := newHarness(t, errorfs.Wrap(vfs.NewMem(), inj), "/d/t-0")
	h.cfg.FlushNever = true
	l := h.open()
	appendN(t, l, 3, 1, 0, 10, 0)
	if err := l.Sync(); err != nil || fsyncs.Load() != 0 {
		t.Fatalf("Sync with log.flush=never: %v, %d fsyncs", err, fsyncs.Load())
	}
	mustClose(t, l)
	if fsyncs.Load() != 1 {
		t.Fatalf("Close did not fsync: %d", fsyncs.Load())
	}
}
