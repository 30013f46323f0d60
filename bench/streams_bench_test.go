package bench_test

import (
	"context"
	"fmt"
	"hash"
	"os"
	"runtime"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/lovoo/goka"
	"github.com/lovoo/goka/codec"
	"github.com/lovoo/goka/storage"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/runnel-io/runnel/bench/internal/harness"
	"github.com/runnel-io/runnel/streams"
	"github.com/runnel-io/runnel/streams/serde"
)

// Streams benchmarks (issue 6): the same count-per-key aggregation in
// Runnel Streams (at least once and exactly once) and in goka v1.1.16, on
// one `runnel broker` process, back to back in the same run; and the
// restore of a store from its changelog.
//
// Each op counts every record of an 8-partition input topic, written once
// before the timer starts, into a durable per-key count: Runnel's store
// (pebble, changelog topic) and goka's group table (LevelDB, table topic),
// both with their default settings but Runnel's commit interval
// (streamsCommitInterval). A fresh group each op reads the topic
// from the start; the op ends when the last record has been counted (a
// counter bumped after each count update). records/s is input records over
// that time; peak-heap-MB the largest Go heap in use sampled during the op
// (app and clients share this process; the broker is apart).
const streamsPartitions = 8

// streamsCommitInterval is both Runnel guarantees' commit interval:
// exactly once's default (Kafka Streams' too), given to at least once as
// well (whose default is 30 s), so that their ratio is the cost of
// transactions and not of committing 300 times as often. goka commits
// every second (sarama's default), so against it Runnel commits ten
// times as often.
const streamsCommitInterval = 100 * time.Millisecond

// streamsRecords is the input size: RUNNEL_BENCH_STREAMS_RECORDS, default 1M.
func streamsRecords(tb testing.TB) int {
	if s := os.Getenv("RUNNEL_BENCH_STREAMS_RECORDS"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n <= 0 {
			tb.Fatalf("RUNNEL_BENCH_STREAMS_RECORDS=%q: want a positive count", s)
		}
		return n
	}
	return 1_000_000
}

// streamsCounters are the systems BenchmarkStreamsCount compares, in the
// order each key count runs them.
var streamsCounters = []struct {
	name string
	run  func(ctx context.Context, seeds []string, input, id, dir string, counted *atomic.Int64) (stop func() error, err error)
}{
	{"runnel-alos", func(ctx context.Context, seeds []string, input, id, dir string, counted *atomic.Int64) (func() error, error) {
		return runStreamsCount(ctx, seeds, input, id, dir, streams.AtLeastOnce, counted)
	}},
	{"runnel-eos", func(ctx context.Context, seeds []string, input, id, dir string, counted *atomic.Int64) (func() error, error) {
		return runStreamsCount(ctx, seeds, input, id, dir, streams.ExactlyOnce, counted)
	}},
	{"goka", runGokaCount},
}

// BenchmarkStreamsCount: per key count (1,000 and 100,000), each system
// counts the same input.
func BenchmarkStreamsCount(b *testing.B) {
	srv := startStreamsBroker(b)
	n := streamsRecords(b)
	for _, keys := range []int{1_000, 100_000} {
		input := harness.TopicName(fmt.Sprintf("streams-in-%dk", keys/1000))
		writeCountInput(b, srv.addr, input, n, keys)
		for _, sys := range streamsCounters {
			b.Run(fmt.Sprintf("keys-%d/%s", keys, sys.name), func(b *testing.B) {
				for i := range b.N {
					id := harness.TopicName(fmt.Sprintf("count-%s-%d", sys.name, i))
					elapsed, peak := countOnce(b, srv, sys.run, input, id, n)
					b.ReportMetric(float64(n)/elapsed.Seconds(), "records/s")
					b.ReportMetric(float64(peak)/(1<<20), "peak-heap-MB")
				}
				b.ReportMetric(0, "ns/op")
			})
		}
	}
}

// startStreamsBroker starts `runnel broker` as a process; groups join at
// once (no initial rebalance delay), as the systems' first rebalance is
// not what is measured.
func startStreamsBroker(tb testing.TB) server {
	bin, err := runnelBin()
	if err != nil {
		tb.Fatal(err)
	}
	p, err := harness.StartProcess(context.Background(), bin, tb.TempDir(), "--group.initial.rebalance.delay.ms", "0")
	if err != nil {
		tb.Fatal(err)
	}
	return processServer(tb, p)
}

// writeCountInput writes n records to a new 8-partition topic: key
// "k<i mod keys>", value "v".
func writeCountInput(tb testing.TB, addr, topic string, n, keys int) {
	writeTopic(tb, addr, topic, nil, n, func(i int) *kgo.Record {
		return &kgo.Record{Key: []byte("k" + strconv.Itoa(i%keys)), Value: []byte("v")}
	})
}

// writeTopic creates an 8-partition topic with configs and produces the
// n records that rec makes, partitioned by key.
func writeTopic(tb testing.TB, addr, topic string, configs map[string]*string, n int, rec func(i int) *kgo.Record) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ProducerLinger(5*time.Millisecond), kgo.MaxBufferedRecords(100_000))
	if err != nil {
		tb.Fatal(err)
	}
	defer cl.Close()
	if _, err := kadm.NewClient(cl).CreateTopic(ctx, streamsPartitions, 1, configs, topic); err != nil {
		tb.Fatal(err)
	}
	var failed atomic.Pointer[error]
	for i := range n {
		r := rec(i)
		r.Topic = topic
		cl.Produce(ctx, r, func(_ *kgo.Record, err error) {
			if err != nil {
				failed.CompareAndSwap(nil, &err)
			}
		})
	}
	if err := cl.Flush(ctx); err != nil {
		tb.Fatal(err)
	}
	if err := failed.Load(); err != nil {
		tb.Fatalf("write %s: %v", topic, *err)
	}
}

// countOnce runs one system over the input until it has counted n records
// and returns the time that took and the peak heap in use.
func countOnce(b benchT, srv server, run func(context.Context, []string, string, string, string, *atomic.Int64) (func() error, error), input, id string, n int) (time.Duration, uint64) {
	b.StopTimer()
	runtime.GC()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	var counted atomic.Int64
	peak := samplePeakHeap(ctx)
	b.StartTimer()
	start := time.Now()
	stop, err := run(ctx, []string{srv.addr}, input, id, b.TempDir(), &counted)
	if err != nil {
		b.Fatal(err)
	}
	for counted.Load() < int64(n) {
		if err := waitTick(ctx, srv); err != nil {
			b.Fatalf("%s: %d of %d records counted: %v", id, counted.Load(), n, err)
		}
	}
	elapsed := time.Since(start)
	b.StopTimer()
	peakHeap := peak()
	if err := stop(); err != nil {
		b.Fatalf("%s: stop: %v", id, err)
	}
	if got := counted.Load(); got != int64(n) {
		b.Fatalf("%s: %d records counted, want %d", id, got, n)
	}
	b.StartTimer()
	return elapsed, peakHeap
}

// waitTick waits a little for the systems to progress, failing when the
// broker died or ctx ended.
func waitTick(ctx context.Context, srv server) error {
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(2 * time.Millisecond):
	}
	if srv.health != nil {
		return srv.health()
	}
	return nil
}

// samplePeakHeap samples the heap in use every 50 ms until the returned
// function is called, which returns the largest sample.
func samplePeakHeap(ctx context.Context) (peak func() uint64) {
	ctx, stop := context.WithCancel(ctx)
	done := make(chan uint64, 1)
	go func() {
		var ms runtime.MemStats
		var most uint64
		for {
			runtime.ReadMemStats(&ms)
			most = max(most, ms.HeapInuse)
			select {
			case <-ctx.Done():
				done <- most
				return
			case <-time.After(50 * time.Millisecond):
			}
		}
	}()
	return func() uint64 {
		stop()
		return <-done
	}
}

// countTopology counts input's records per key into the store "counts";
// counted goes up after each count update.
func countTopology(input string, counted *atomic.Int64) (*streams.Topology, error) {
	b := streams.NewBuilder()
	streams.From[string, string](b, input).
		GroupByKey().
		Count(streams.Materialized("counts")).
		ToStream().
		Foreach(func(string, int64) { counted.Add(1) })
	return b.Build()
}

func runStreamsCount(ctx context.Context, seeds []string, input, id, dir string, g streams.Guarantee, counted *atomic.Int64) (func() error, error) {
	app, err := newCountApp(seeds, input, id, dir, g, counted, nil)
	if err != nil {
		return nil, err
	}
	return runApp(ctx, app), nil
}

func newCountApp(seeds []string, input, id, dir string, g streams.Guarantee, counted *atomic.Int64, reg *prometheus.Registry) (*streams.App, error) {
	topo, err := countTopology(input, counted)
	if err != nil {
		return nil, err
	}
	cfg := streams.Config{ApplicationID: id, Brokers: seeds, StateDir: dir, Guarantee: g, CommitInterval: streamsCommitInterval}
	if reg != nil {
		cfg.Metrics = reg
	}
	return streams.NewApp(topo, cfg)
}

// runApp runs app until the returned stop is called.
func runApp(ctx context.Context, app *streams.App) (stop func() error) {
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- app.Run(ctx) }()
	return func() error {
		cancel()
		return <-done
	}
}

// runGokaCount runs a goka processor with goka's defaults (sarama, LevelDB
// storage in dir) that counts input per key into its group table.
func runGokaCount(ctx context.Context, seeds []string, input, id, dir string, counted *atomic.Int64) (func() error, error) {
	cfg := func() *sarama.Config {
		c := goka.DefaultConfig()
		c.Consumer.Offsets.Initial = sarama.OffsetOldest
		return c
	}
	tmc := goka.NewTopicManagerConfig()
	tmc.Table.Replication = 1
	tmc.Stream.Replication = 1
	graph := goka.DefineGroup(goka.Group(id),
		goka.Input(goka.Stream(input), new(codec.String), func(gctx goka.Context, _ any) {
			n, _ := gctx.Value().(int64)
			gctx.SetValue(n + 1)
			counted.Add(1)
		}),
		goka.Persist(new(codec.Int64)),
	)
	// goka's builders write to the sarama config they get, concurrently:
	// each build gets its own.
	p, err := goka.NewProcessor(seeds, graph,
		goka.WithTopicManagerBuilder(func(brokers []string) (goka.TopicManager, error) {
			return goka.TopicManagerBuilderWithConfig(cfg(), tmc)(brokers)
		}),
		goka.WithConsumerGroupBuilder(func(brokers []string, group, clientID string) (sarama.ConsumerGroup, error) {
			return goka.ConsumerGroupBuilderWithConfig(cfg())(brokers, group, clientID)
		}),
		goka.WithConsumerSaramaBuilder(func(brokers []string, clientID string) (sarama.Consumer, error) {
			return goka.SaramaConsumerBuilderWithConfig(cfg())(brokers, clientID)
		}),
		goka.WithProducerBuilder(func(brokers []string, clientID string, hasher func() hash.Hash32) (goka.Producer, error) {
			return goka.ProducerBuilderWithConfig(cfg())(brokers, clientID, hasher)
		}),
		goka.WithStorageBuilder(storage.DefaultBuilder(dir)),
		goka.WithLogger(quietGoka{}),
	)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- p.Run(ctx) }()
	return func() error {
		cancel()
		return <-done
	}, nil
}

type quietGoka struct{}

func (quietGoka) Print(...any)          {}
func (quietGoka) Println(...any)        {}
func (quietGoka) Printf(string, ...any) {}

// BenchmarkStreamsRestore: a store's changelog of n distinct keys over 8
// partitions, restored by an instance with an empty state directory.
// records/s is changelog records over the time the app spent restoring
// (its runnel_streams_restore_seconds_total); start-to-restored-records/s
// over the time from the app's start to the last record applied (the group
// join and topic checks included).
func BenchmarkStreamsRestore(b *testing.B) {
	srv := startStreamsBroker(b)
	n := streamsRecords(b)
	input := harness.TopicName("streams-restore-in")
	id := harness.TopicName("restore")
	changelog := id + "-counts-changelog"
	writeChangelog(b, srv.addr, input, changelog, n)
	for range b.N {
		elapsed, restoring, peak := restoreOnce(b, srv, input, id, n)
		b.ReportMetric(float64(n)/restoring, "records/s")
		b.ReportMetric(float64(n)/elapsed.Seconds(), "start-to-restored-records/s")
		b.ReportMetric(float64(peak)/(1<<20), "peak-heap-MB")
	}
	b.ReportMetric(0, "ns/op")
}

// writeChangelog creates the count app's (empty) input and its store's
// changelog holding n keys, each with a count, in the app's layout
// (partitioned by key as the app would, compacted).
func writeChangelog(tb testing.TB, addr, input, changelog string, n int) {
	writeTopic(tb, addr, input, nil, 0, nil)
	compact := "compact"
	writeTopic(tb, addr, changelog, map[string]*string{"cleanup.policy": &compact}, n, func(i int) *kgo.Record {
		v, _ := serde.Int64.Encode(nil, int64(i%100+1))
		return &kgo.Record{Key: []byte("k" + strconv.Itoa(i)), Value: v}
	})
}

// restoreOnce starts the count app on an empty state directory and waits
// until its restore metric says n records were applied.
func restoreOnce(b benchT, srv server, input, id string, n int) (elapsed time.Duration, restoring float64, peak uint64) {
	b.StopTimer()
	runtime.GC()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	reg := prometheus.NewRegistry()
	var counted atomic.Int64
	app, err := newCountApp([]string{srv.addr}, input, id, b.TempDir(), streams.AtLeastOnce, &counted, reg)
	if err != nil {
		b.Fatal(err)
	}
	sampler := samplePeakHeap(ctx)
	b.StartTimer()
	start := time.Now()
	stop := runApp(ctx, app)
	for gathered(b, reg, "runnel_streams_restored_records_total") < float64(n) {
		if err := waitTick(ctx, srv); err != nil {
			b.Fatalf("restore: %.0f of %d records: %v", gathered(b, reg, "runnel_streams_restored_records_total"), n, err)
		}
	}
	elapsed = time.Since(start)
	b.StopTimer()
	peak = sampler()
	if err := stop(); err != nil {
		b.Fatal(err)
	}
	// The restore's time is counted when it ends, after the last records.
	restoring = gathered(b, reg, "runnel_streams_restore_seconds_total")
	b.StartTimer()
	return elapsed, restoring, peak
}

// gathered sums the values of the counter name in reg.
func gathered(tb testing.TB, reg *prometheus.Registry, name string) float64 {
	mfs, err := reg.Gather()
	if err != nil {
		tb.Fatal(err)
	}
	var sum float64
	for _, mf := range mfs {
		if mf.GetName() == name {
			for _, m := range mf.GetMetric() {
				sum += m.GetCounter().GetValue()
			}
		}
	}
	return sum
}

// benchT is a *testing.B, or a test's T with a timer that does nothing.
type benchT interface {
	testing.TB
	StartTimer()
	StopTimer()
}

type untimed struct{ *testing.T }

func (untimed) StartTimer() {}
func (untimed) StopTimer()  {}

// TestStreamsBenchmarks runs each system's count and the restore once,
// small, so a broken benchmark shows in `go test`.
func TestStreamsBenchmarks(t *testing.T) {
	skipProcessInShort(t, "runnel-proc")
	const n, keys = 3000, 100
	srv := startStreamsBroker(t)
	input := harness.TopicName("streams-test-in")
	writeCountInput(t, srv.addr, input, n, keys)
	for _, sys := range streamsCounters {
		t.Run(sys.name, func(t *testing.T) {
			countOnce(untimed{t}, srv, sys.run, input, harness.TopicName("count-test-"+sys.name), n)
		})
	}
	t.Run("restore", func(t *testing.T) {
		id := harness.TopicName("restore-test")
		in := harness.TopicName("restore-test-in")
		writeChangelog(t, srv.addr, in, id+"-counts-changelog", n)
		restoreOnce(untimed{t}, srv, in, id, n)
	})
}
