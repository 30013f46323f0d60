package harness

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
)

// MemcheckConfig says what Memcheck pushes through a broker process.
type MemcheckConfig struct {
	// Bin is the runnel binary.
	Bin string
	// Dir holds the broker's data directory.
	Dir string
	// Bytes of record values to produce and then consume again, in rounds
	// of Round bytes (produce a round, consume it, next round).
	Bytes, Round int64
	// ValueSize is the size of each record's value.
	ValueSize int
	// Partitions of the one topic.
	Partitions int32
	// SegmentBytes and RetentionBytes (per partition) are given to the
	// broker as log.segment.bytes and log.retention.bytes, so old segments
	// are deleted and the disk holds about Partitions*RetentionBytes.
	SegmentBytes, RetentionBytes int64
	// Progress receives a line per round; nil discards them.
	Progress io.Writer
}

// Peak is the broker's peak resident memory: the larger of VmHWM and the
// largest sampled VmRSS.
func (r MemcheckResult) Peak() int64 { return max(r.HWM, r.MaxRSS) }

// MemcheckResult is what Memcheck measured.
type MemcheckResult struct {
	Bytes                  int64
	Produce, Consume, Wall time.Duration
	// HWM is the broker's VmHWM just before it was stopped: its peak
	// resident memory over the whole run, as far as the kernel tracked it.
	// The kernel updates the high-water mark lazily (and RSS counters are
	// per-CPU approximations), so a sampled VmRSS can exceed it slightly;
	// Peak takes the larger of the two.
	HWM int64
	// MaxRSS is the largest VmRSS sampled (every 100ms).
	MaxRSS int64
	// MaxDisk is the largest size of the data directory sampled (every
	// second), in allocated bytes.
	MaxDisk int64
	// ClientWarnings counts warnings logged by the clients (retries).
	ClientWarnings int
}

// Memcheck starts a broker process, pushes cfg.Bytes through it and
// reports its memory. The broker is stopped before it returns; a broker
// that exits early, does not stop cleanly, loses or repeats a record, or
// stalls is an error.
func Memcheck(ctx context.Context, cfg MemcheckConfig) (res MemcheckResult, err error) {
	if cfg.ValueSize <= 0 || cfg.Partitions <= 0 || cfg.Round <= 0 {
		return res, errors.New("memcheck: ValueSize, Partitions and Round must be positive")
	}
	progress := cfg.Progress
	if progress == nil {
		progress = io.Discard
	}
	dataDir := filepath.Join(cfg.Dir, "data")
	p, err := StartProcess(ctx, cfg.Bin, dataDir,
		fmt.Sprintf("--log.segment.bytes=%d", cfg.SegmentBytes),
		fmt.Sprintf("--log.retention.bytes=%d", cfg.RetentionBytes),
		"--log.retention.check.interval.ms=1000",
		"--log.segment.delete.delay.ms=0",
	)
	if err != nil {
		return res, err
	}
	defer func() {
		if m, merr := ReadMemory(p.PID()); merr == nil {
			res.HWM = m.HWM
		} else {
			err = errors.Join(err, merr)
		}
		err = errors.Join(err, p.Stop())
	}()

	// Sample memory and disk until the run ends.
	sampleCtx, stopSampling := context.WithCancel(ctx)
	var sampled sync.WaitGroup
	var maxRSS, maxDisk int64 // owned by the sampler until sampled.Wait
	sampled.Go(func() {
		tick := time.NewTicker(100 * time.Millisecond)
		defer tick.Stop()
		for i := 0; ; i++ {
			if m, err := ReadMemory(p.PID()); err == nil {
				maxRSS = max(maxRSS, m.RSS)
			}
			if i%10 == 0 {
				maxDisk = max(maxDisk, diskUsage(dataDir))
			}
			select {
			case <-sampleCtx.Done():
				return
			case <-tick.C:
			}
		}
	})
	defer func() {
		stopSampling()
		sampled.Wait()
		res.MaxRSS, res.MaxDisk = maxRSS, max(maxDisk, diskUsage(dataDir))
	}()

	log := &ClientLog{}
	defer func() { res.ClientWarnings = log.Count() }()
	seeds := []string{p.Addr}
	cl, err := NewClient(seeds, log, ProducerOpts(cfg.ValueSize)...)
	if err != nil {
		return res, err
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	topic := "memcheck"
	if err := CreateTopic(ctx, adm, topic, cfg.Partitions, nil); err != nil {
		return res, err
	}
	payload := Payload(cfg.ValueSize)
	start := time.Now()
	for done := int64(0); done < cfg.Bytes; {
		n := max(1, min(cfg.Round, cfg.Bytes-done)/int64(cfg.ValueSize))
		before, err := LoadDataset(ctx, adm, topic, cfg.ValueSize)
		if err != nil {
			return res, err
		}
		t0 := time.Now()
		if err := Produce(ctx, cl, topic, n, payload, p.Health); err != nil {
			return res, err
		}
		t1 := time.Now()
		after, err := LoadDataset(ctx, adm, topic, cfg.ValueSize)
		if err != nil {
			return res, err
		}
		round := Dataset{Topic: topic, Start: before.End, End: after.End, ValueSize: cfg.ValueSize}
		if got := round.Records(); got != n {
			return res, fmt.Errorf("memcheck: end offsets grew by %d records after %d were acknowledged", got, n)
		}
		if err := Consume(ctx, seeds, round, n, log, p.Health); err != nil {
			return res, err
		}
		t2 := time.Now()
		res.Produce += t1.Sub(t0)
		res.Consume += t2.Sub(t1)
		done += n * int64(cfg.ValueSize)
		res.Bytes = done
		m, _ := ReadMemory(p.PID())
		fmt.Fprintf(progress, "memcheck: %s of %s through; VmRSS %s, VmHWM %s, data dir %s\n",
			FormatBytes(done), FormatBytes(cfg.Bytes), FormatBytes(m.RSS), FormatBytes(m.HWM), FormatBytes(diskUsage(dataDir)))
	}
	res.Wall = time.Since(start)
	return res, nil
}

// diskUsage is the space allocated to the files under dir, in bytes.
func diskUsage(dir string) int64 {
	var n int64
	filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return nil
		}
		if fi, err := d.Info(); err == nil {
			if st, ok := fi.Sys().(*syscall.Stat_t); ok {
				n += st.Blocks * 512
			} else {
				n += fi.Size()
			}
		}
		return nil
	})
	return n
}

// ParseBytes parses a byte count: a number with an optional unit (B, kB,
// MB, GB, TB in powers of 1000; KiB, MiB, GiB, TiB in powers of 1024).
func ParseBytes(s string) (int64, error) {
	s = strings.TrimSpace(s)
	i := strings.IndexFunc(s, func(r rune) bool { return (r < '0' || r > '9') && r != '.' })
	num, unit := s, ""
	if i >= 0 {
		num, unit = s[:i], strings.TrimSpace(s[i:])
	}
	v, err := strconv.ParseFloat(num, 64)
	if err != nil || v < 0 {
		return 0, fmt.Errorf("byte count %q: want a number with an optional unit such as 10GB or 64MiB", s)
	}
	mult := map[string]float64{
		"": 1, "b": 1,
		"kb": 1e3, "mb": 1e6, "gb": 1e9, "tb": 1e12,
		"kib": 1 << 10, "mib": 1 << 20, "gib": 1 << 30, "tib": 1 << 40,
	}[strings.ToLower(unit)]
	if mult == 0 {
		return 0, fmt.Errorf("byte count %q: unknown unit %q", s, unit)
	}
	return int64(v * mult), nil
}

// FormatBytes formats n in binary units.
func FormatBytes(n int64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.2f GiB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d B", n)
}
