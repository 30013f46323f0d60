package bench_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/runnel-io/runnel/bench/internal/harness"
)

// TestTargets runs a tiny produce and consume against every benchmark
// target, so a broken target shows up in `go test` and not only in
// `make bench`. The broker processes (runnel-proc, kfake-proc) are skipped
// with -short: they build their binaries.
func TestTargets(t *testing.T) {
	for _, tg := range targets {
		t.Run(tg.name, func(t *testing.T) {
			skipProcessInShort(t, tg.name)
			srv := tg.start(t)
			ctx := t.Context()
			log := &harness.ClientLog{}
			cl, err := harness.NewClient([]string{srv.addr}, log, harness.ProducerOpts(100)...)
			if err != nil {
				t.Fatal(err)
			}
			defer cl.Close()
			adm := kadm.NewClient(cl)
			if err := harness.CreateTopic(ctx, adm, "tiny", 3, nil); err != nil {
				t.Fatal(err)
			}
			if err := harness.Produce(ctx, cl, "tiny", 2000, harness.Payload(100), srv.health); err != nil {
				t.Fatal(err)
			}
			d, err := harness.LoadDataset(ctx, adm, "tiny", 100)
			if err != nil {
				t.Fatal(err)
			}
			if got := d.Records(); got != 2000 {
				t.Fatalf("end offsets hold %d records, want 2000", got)
			}
			if err := harness.Consume(ctx, []string{srv.addr}, d, 3000, log, srv.health); err != nil {
				t.Fatal(err)
			}
			if err := harness.DeleteTopic(ctx, adm, "tiny"); err != nil {
				t.Fatal(err)
			}
			if n := log.Count(); n > 0 {
				t.Errorf("%d client warnings, first: %q", n, log.First())
			}
		})
	}
}

// skipProcessInShort skips a test of a broker-process target (runnel-proc,
// kfake-proc) with -short: it builds and starts a broker binary.
func skipProcessInShort(t *testing.T, target string) {
	t.Helper()
	if strings.HasSuffix(target, "-proc") && testing.Short() {
		t.Skip("builds and starts a broker binary")
	}
}

// TestMemcheck pushes a few MiB through a broker process with segments and
// retention small enough that old segments are deleted on the way.
func TestMemcheck(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and starts the runnel binary")
	}
	bin, err := runnelBin()
	if err != nil {
		t.Fatal(err)
	}
	res, err := harness.Memcheck(t.Context(), harness.MemcheckConfig{
		Bin: bin, Dir: t.TempDir(),
		Bytes: 12 << 20, Round: 2 << 20, ValueSize: 1024, Partitions: 2,
		SegmentBytes: 1 << 20, RetentionBytes: 3 << 20,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%+v", res)
	if res.Bytes != 12<<20 || res.HWM <= 0 || res.MaxRSS <= 0 || res.MaxDisk <= 0 {
		t.Fatalf("implausible result %+v", res)
	}
	if res.ClientWarnings != 0 {
		t.Errorf("%d client warnings", res.ClientWarnings)
	}
}

// TestBrokerCPUProfile checks `runnel broker --cpuprofile`, the way to
// profile the runnel-proc broker (RUNNEL_BENCH_BROKER_FLAGS): the broker
// writes a gzipped pprof profile by the time it has stopped on SIGTERM.
func TestBrokerCPUProfile(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and starts the runnel binary")
	}
	bin, err := runnelBin()
	if err != nil {
		t.Fatal(err)
	}
	prof := filepath.Join(t.TempDir(), "broker.prof")
	p, err := harness.StartProcess(t.Context(), bin, t.TempDir(), "--cpuprofile="+prof)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Stop(); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(prof)
	if err != nil {
		t.Fatal(err)
	}
	if len(b) < 2 || b[0] != 0x1f || b[1] != 0x8b {
		t.Fatalf("%s is not a gzipped profile: %d bytes, starting %q", prof, len(b), b[:min(len(b), 8)])
	}
}
