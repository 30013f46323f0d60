package retail

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/runnel-io/runnel/broker/brokertest"
	"github.com/runnel-io/runnel/internal/testchild"
	"github.com/runnel-io/runnel/retail-demo/retail"
	"github.com/runnel-io/runnel/retail-demo/retail/retailtest"
	"github.com/runnel-io/runnel/streams"
)

// sales is the size of the data set: some five simulated days, 20k sales
// and their shipments.
const sales = 20_000

// childEnv carries a child instance's appConfig, as JSON.
const childEnv = "RUNNEL_RETAIL_TEST_APP"

type appConfig struct {
	Brokers  []string
	StateDir string
}

func testConfig(stateDir string) retail.Config {
	cfg := retailtest.Config(sales)
	cfg.App.StateDir = stateDir
	// Some six seconds of input, so that the restarts land in it.
	cfg.Generator.Rate = sales / 6
	return cfg
}

// runChild runs an app instance until ctx ends (its stdin closes) and
// returns the exit status.
func runChild(ctx context.Context, ac appConfig) int {
	cfg := testConfig(ac.StateDir)
	topo, err := retail.Topology(cfg)
	if err == nil {
		var app *streams.App
		// The broker's shortest session: a SIGKILLed instance leaves the
		// group after 6 s instead of kgo's 45.
		app, err = streams.NewApp(topo, cfg.StreamsConfig(ac.Brokers, slog.New(slog.NewTextHandler(os.Stderr, nil)),
			kgo.SessionTimeout(6*time.Second), kgo.HeartbeatInterval(500*time.Millisecond)))
		if err == nil {
			err = app.Run(ctx)
		}
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "retail child:", err)
		return 1
	}
	return 0
}

func TestMain(m *testing.M) {
	if ac, ok := testchild.Params[appConfig](childEnv); ok {
		os.Exit(runChild(testchild.StdinContext(), ac))
	}
	brokertest.Main(m)
}

// The demo pipeline through a broker: the generator writes the seeded
// data set while the app runs; the app is SIGKILLed at a third of the
// input and restarted on its state directory, stopped at two thirds and
// restarted on an empty one (restoring its stores from the changelogs).
// The committed reorders and price adjustments equal the reference's,
// and the stock topic has exactly one update per input event.
func TestPipelineMatchesReferenceAcrossRestarts(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	b := brokertest.Start(t, map[string]string{"group.initial.rebalance.delay.ms": "0"})
	seeds := []string{b.Addr()}
	dir := t.TempDir()
	cfg := testConfig("")
	events := retailtest.Events(t, cfg)
	wantR, wantP := retailtest.Reference(cfg, events)
	t.Logf("data set: %d events; the reference makes %d reorders and %d price changes", len(events), len(wantR), len(wantP))

	adm := admin(t, seeds)
	if err := retail.EnsureTopics(ctx, adm, cfg); err != nil {
		t.Fatal(err)
	}
	logPath := filepath.Join(dir, "instances.log")
	t.Cleanup(func() {
		if t.Failed() {
			out, _ := os.ReadFile(logPath)
			lines := strings.Split(string(out), "\n")
			t.Logf("instance log, the last 200 lines:\n%s", strings.Join(lines[max(0, len(lines)-200):], "\n"))
		}
	})
	app := testchild.Start(t, childEnv, appConfig{Brokers: seeds, StateDir: filepath.Join(dir, "state-1")}, logPath)

	gen, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.RecordPartitioner(retail.Partitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer gen.Close()
	genDone := make(chan error, 1)
	start := time.Now()
	go func() { genDone <- retail.Generate(ctx, gen, cfg, nil) }()

	// Waits until the app has committed at least want(total) input
	// records, total being every input record (watermarks included) once
	// the generator is done, or -1 before.
	total := int64(-1)
	progress := func() (committed, end int64) {
		ends, err := adm.ListEndOffsets(ctx, cfg.Topics.Sales, cfg.Topics.Shipments)
		if err != nil {
			t.Fatal(err)
		}
		ends.Each(func(o kadm.ListedOffset) { end += o.Offset })
		offs, err := adm.FetchOffsets(ctx, cfg.App.ApplicationID)
		if err != nil {
			t.Fatal(err)
		}
		offs.Each(func(o kadm.OffsetResponse) { committed += max(o.At, 0) })
		return committed, end
	}
	waitCommitted := func(what string, want func(total int64) bool) {
		t.Helper()
		for {
			select {
			case err := <-genDone:
				if err != nil {
					t.Fatalf("generator: %v", err)
				}
				_, total = progress()
				t.Logf("generator done in %.1fs: %d input records with watermarks", time.Since(start).Seconds(), total)
			default:
			}
			c, end := progress()
			if want(c) {
				t.Logf("%s: %d input records committed of %d written (%.1fs)", what, c, end, time.Since(start).Seconds())
				return
			}
			if ctx.Err() != nil {
				t.Fatalf("%s: not reached in time: %d committed of %d written", what, c, end)
			}
			time.Sleep(50 * time.Millisecond) // polling the committed offsets
		}
	}
	n := int64(len(events))
	waitCommitted("a third", func(c int64) bool { return c >= n/3 })
	app.Kill()
	app = testchild.Start(t, childEnv, appConfig{Brokers: seeds, StateDir: filepath.Join(dir, "state-1")}, logPath)
	waitCommitted("two thirds, after a SIGKILL and a restart", func(c int64) bool { return c >= 2*n/3 })
	app.Stop(t)
	app = testchild.Start(t, childEnv, appConfig{Brokers: seeds, StateDir: filepath.Join(dir, "state-2")}, logPath)
	waitCommitted("all, after a stop and a restart on empty state", func(c int64) bool { return total >= 0 && c == total })
	elapsed := time.Since(start)
	app.Stop(t)

	gotR := readAll[retail.Reorder](t, ctx, seeds, cfg.Topics.Reorders)
	gotP := readAll[retail.PriceChange](t, ctx, seeds, cfg.Topics.Prices)
	stock := readAll[retail.Stock](t, ctx, seeds, cfg.Topics.Stock)
	t.Logf("%d events through the pipeline in %.1fs (%.0f events/s, restarts included): %d reorders, %d price changes, %d stock updates",
		len(events), elapsed.Seconds(), float64(len(events))/elapsed.Seconds(), len(gotR), len(gotP), len(stock))
	if len(stock) != len(events) {
		t.Errorf("%d stock updates committed for %d events: exactly one each expected", len(stock), len(events))
	}
	retailtest.Diff(t, gotR, wantR, gotP, wantP)
}

func admin(t *testing.T, seeds []string) *kadm.Client {
	cl, err := kgo.NewClient(kgo.SeedBrokers(seeds...))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return kadm.NewClient(cl)
}

// readAll reads every committed record of topic and decodes it. The app
// must be stopped: readAll appends an end marker (a record with header
// endHeader) to every partition and reads to the markers, under
// read_committed.
func readAll[T any](t *testing.T, ctx context.Context, seeds []string, topic string) []T {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	parts := testConfig("").Topics.Partitions
	for p := range parts {
		r := &kgo.Record{Topic: topic, Partition: p, Key: []byte(endHeader), Headers: []kgo.RecordHeader{{Key: endHeader}}}
		if err := cl.ProduceSync(ctx, r).FirstErr(); err != nil {
			t.Fatalf("end marker on %s/%d: %v", topic, p, err)
		}
	}
	var out []T
	for ended := int32(0); ended < parts; {
		fs := cl.PollFetches(ctx)
		if err := fs.Err0(); err != nil {
			t.Fatalf("reading %s: %v", topic, err)
		}
		fs.EachRecord(func(r *kgo.Record) {
			if len(r.Headers) > 0 && r.Headers[0].Key == endHeader {
				ended++
				return
			}
			var v T
			if err := json.Unmarshal(r.Value, &v); err != nil {
				t.Fatalf("%s: %q: %v", topic, r.Value, err)
			}
			out = append(out, v)
		})
	}
	return out
}

// endHeader marks the records readAll appends.
const endHeader = "test-end-of-topic"
