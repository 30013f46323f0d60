// Command memcheck pushes bytes through a `runnel broker` child process and
// reports the broker's peak memory: it produces a round of records
// (acks=all, idempotent), consumes the round back, and repeats until
// -bytes have flowed through, while it samples /proc/PID/status. The
// broker keeps small segments and a per-partition retention so the disk
// holds only a few rounds.
//
// The result is one line in `go test -bench` format for cmd/benchtable:
//
//	BenchmarkMemcheck/1KB/8p  1  <ns> ns/op  <MB> MB  <VmHWM-MiB> VmHWM-MiB ...
//
// Any error (a lost or repeated record, a stall, a broker that exits or
// does not stop cleanly) prints "memcheck: FAIL: ..." and exits 1.
//
// Usage:
//
//	go run ./bench/cmd/memcheck [-bytes 10GB] [-runnel bin/runnel]
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/runnel-io/runnel/bench/internal/harness"
)

// maxRSSMiB is the target for the broker's peak RSS.
const maxRSSMiB = 512

func main() {
	if err := run(); err != nil {
		fmt.Printf("memcheck: FAIL: %v\n", err)
		os.Exit(1)
	}
}

func run() error {
	defBytes := "10GB"
	if v := os.Getenv("RUNNEL_BENCH_BYTES"); v != "" {
		defBytes = v
	}
	bytesFlag := flag.String("bytes", defBytes, "record value bytes to push through (default $RUNNEL_BENCH_BYTES or 10GB)")
	roundFlag := flag.String("round", "1GiB", "bytes per produce-then-consume round")
	segFlag := flag.String("segment-bytes", "64MiB", "the broker's log.segment.bytes")
	retFlag := flag.String("retention-bytes", "256MiB", "the broker's log.retention.bytes (per partition)")
	size := flag.Int("record-size", 1024, "bytes per record value")
	parts := flag.Int("partitions", 8, "partitions of the topic")
	bin := flag.String("runnel", "", "runnel binary (default $RUNNEL_BIN, else built with go build)")
	dir := flag.String("dir", "", "directory for the broker's data (default a new temporary directory, removed afterwards)")
	flag.Parse()

	cfg := harness.MemcheckConfig{ValueSize: *size, Partitions: int32(*parts), Progress: os.Stderr}
	for _, f := range []struct {
		name string
		val  string
		dst  *int64
	}{{"bytes", *bytesFlag, &cfg.Bytes}, {"round", *roundFlag, &cfg.Round},
		{"segment-bytes", *segFlag, &cfg.SegmentBytes}, {"retention-bytes", *retFlag, &cfg.RetentionBytes}} {
		n, err := harness.ParseBytes(f.val)
		if err != nil {
			return fmt.Errorf("-%s: %w", f.name, err)
		}
		*f.dst = n
	}
	if cfg.Bytes <= 0 || cfg.Round <= 0 || *size <= 0 || *parts <= 0 {
		return errors.New("-bytes, -round, -record-size and -partitions must be positive")
	}
	cfg.Round = min(cfg.Round, cfg.Bytes)
	// A round must survive retention until it is consumed: each partition
	// keeps at least retention minus one segment.
	if keep := int64(*parts) * (cfg.RetentionBytes - cfg.SegmentBytes); cfg.Round > keep {
		return fmt.Errorf("-round %s is more than retention keeps (%s over %d partitions); lower -round or raise -retention-bytes",
			harness.FormatBytes(cfg.Round), harness.FormatBytes(keep), *parts)
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	cfg.Dir = *dir
	if cfg.Dir == "" {
		d, err := os.MkdirTemp("", "runnel-memcheck-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(d)
		cfg.Dir = d
	}
	cfg.Bin = *bin
	if cfg.Bin == "" {
		b, err := harness.RunnelBinary(ctx, cfg.Dir)
		if err != nil {
			return err
		}
		cfg.Bin = b
	}

	fmt.Fprintf(os.Stderr, "memcheck: pushing %s through %s (records of %d B, %d partitions, rounds of %s, segments %s, retention %s per partition)\n",
		harness.FormatBytes(cfg.Bytes), cfg.Bin, *size, *parts, harness.FormatBytes(cfg.Round),
		harness.FormatBytes(cfg.SegmentBytes), harness.FormatBytes(cfg.RetentionBytes))
	res, err := harness.Memcheck(ctx, cfg)
	if err != nil {
		return err
	}
	const mib = 1 << 20
	fmt.Printf("BenchmarkMemcheck/%s/%dp \t1\t%d ns/op\t%.1f MB\t%.1f VmHWM-MiB\t%.1f VmRSS-max-MiB\t%.1f disk-max-MiB\t%.1f produce-MB/s\t%.1f consume-MB/s\t%d client-warnings\n",
		sizeName(*size), *parts, res.Wall.Nanoseconds(), float64(res.Bytes)/1e6,
		float64(res.HWM)/mib, float64(res.MaxRSS)/mib, float64(res.MaxDisk)/mib,
		float64(res.Bytes)/1e6/res.Produce.Seconds(), float64(res.Bytes)/1e6/res.Consume.Seconds(),
		res.ClientWarnings)
	verdict := "PASS"
	if res.Peak() >= maxRSSMiB*mib {
		verdict = "MISS"
	}
	fmt.Fprintf(os.Stderr, "memcheck: broker peak RSS (max of VmHWM and sampled VmRSS) %s, target < %d MiB: %s\n", harness.FormatBytes(res.Peak()), maxRSSMiB, verdict)
	return nil
}

// sizeName names a record size as the benchmarks do: 1KB, 100B.
func sizeName(n int) string {
	if n%1024 == 0 {
		return fmt.Sprintf("%dKB", n/1024)
	}
	return fmt.Sprintf("%dB", n)
}
