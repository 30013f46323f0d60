package bench_test

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/runnel-io/runnel/bench/internal/harness"
	"github.com/runnel-io/runnel/retail-demo/demo"
	"github.com/runnel-io/runnel/retail-demo/retail"
)

// Retail demo benchmarks (issue 8): the demo's pipeline — the Streams app
// exactly once, Connect with its point-of-sale endpoint and file sinks,
// and the dashboard with a page open on its event stream — in this
// process (demo.Run with every role but the generator, which the
// benchmark drives, once the app has joined its group), on one `runnel
// broker` process. Each op uses new topics and a new app id.
//
// BenchmarkRetailDemo/pipeline: the generator writes
// RUNNEL_BENCH_RETAIL_SALES sales (default 50,000) and their shipments as
// fast as it can; the op ends when the dashboard has read every event's
// stock update (read_committed). sales/s and events/s (sales and
// shipments) are end to end. Its peer, /generator: the generator alone
// into new topics, until the broker acknowledged everything.
//
// BenchmarkRetailDemo/latency: the generator at the demo's default rate
// (retail.DefaultConfig: 200 sales/s) for 3,000 sales; a sale's latency
// runs from the generator handing it to its producer to its stock update
// being read by a read_committed consumer: p50-ms and p99-ms, of the
// sales sent after the first stock update was read (the app's start is
// not the pipeline's latency). The
// update is the one of the same key in the same place of the key's
// sequence (the app applies a key's events in the generator's order).
// The latency includes the app's event-time ordering (a sale waits for
// the next watermark, every 5 simulated minutes) and its 100 ms commit
// interval. Its peer, /round-trip: the same sales at the same rate
// produced (acks=all) to a plain topic and read back read_committed.
func BenchmarkRetailDemo(b *testing.B) {
	srv := startStreamsBroker(b)
	sales := int64(50_000)
	if s := os.Getenv("RUNNEL_BENCH_RETAIL_SALES"); s != "" {
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil || n <= 0 {
			b.Fatalf("RUNNEL_BENCH_RETAIL_SALES=%q: want a positive count", s)
		}
		sales = n
	}
	b.Run("generator", func(b *testing.B) {
		for range b.N {
			cfg := retailBenchConfig(b, sales, 0)
			cl, err := kgo.NewClient(kgo.SeedBrokers(srv.addr))
			if err != nil {
				b.Fatal(err)
			}
			err = retail.EnsureTopics(context.Background(), kadm.NewClient(cl), cfg)
			cl.Close()
			if err != nil {
				b.Fatal(err)
			}
			op := measureRetail(b, srv, func() {
				stats := &retail.GenStats{}
				generate(b, srv.addr, cfg, stats)
			})
			reportRetail(b, op, sales, -1)
		}
	})
	b.Run("pipeline", func(b *testing.B) {
		for range b.N {
			cfg := retailBenchConfig(b, sales, 0)
			p := startPipeline(b, srv.addr, cfg)
			var events int64
			op := measureRetail(b, srv, func() {
				stats := &retail.GenStats{}
				go generate(b, srv.addr, cfg, stats)
				events = p.waitStock(b, func() int64 {
					if stats.Sales.Load() < sales {
						return -1
					}
					return stats.Sales.Load() + stats.Shipments.Load()
				})
			})
			p.stop(b)
			reportRetail(b, op, sales, events)
		}
	})
	const latencySales = 3000
	b.Run("round-trip", func(b *testing.B) {
		for range b.N {
			reportLatency(b, roundTrip(b, srv.addr, latencySales, retail.DefaultConfig().Generator.Rate))
		}
	})
	b.Run("latency", func(b *testing.B) {
		for range b.N {
			cfg := retailBenchConfig(b, latencySales, retail.DefaultConfig().Generator.Rate)
			p := startPipeline(b, srv.addr, cfg)
			lat := newLatencies(b, srv.addr, cfg.Topics)
			stats := &retail.GenStats{Sent: lat.sent}
			go generate(b, srv.addr, cfg, stats)
			got := lat.wait(b, latencySales)
			p.stop(b)
			reportLatency(b, got)
		}
	})
}

func retailBenchConfig(tb testing.TB, sales int64, rate float64) retail.Config {
	cfg := retail.DefaultConfig()
	name := harness.TopicName("retail")
	t := &cfg.Topics
	t.Sales, t.Shipments, t.Stock, t.Reorders, t.Prices = name+".sales", name+".shipments", name+".stock", name+".reorders", name+".prices"
	cfg.App.ApplicationID = name
	cfg.Generator.Sales, cfg.Generator.Rate = sales, rate
	cfg.DataDir = filepath.Join(tb.TempDir(), "retail")
	cfg.Dashboard.Listen = "127.0.0.1:0"
	cfg.Connect.POSListen, cfg.Connect.RESTListen = "127.0.0.1:0", "127.0.0.1:0"
	return cfg
}

func generate(tb testing.TB, addr string, cfg retail.Config, stats *retail.GenStats) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.RecordPartitioner(retail.Partitioner()))
	if err != nil {
		tb.Error(err)
		return
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	if err := retail.Generate(ctx, cl, cfg, stats); err != nil {
		tb.Errorf("generator: %v", err)
	}
}

// pipeline is the demo without its generator, and a page open on the
// dashboard's event stream.
type pipeline struct {
	url    string
	cancel context.CancelFunc
	done   chan error
}

func startPipeline(tb testing.TB, addr string, cfg retail.Config) *pipeline {
	cfg.Brokers = []string{addr}
	ctx, cancel := context.WithCancel(context.Background())
	p := &pipeline{cancel: cancel, done: make(chan error, 1)}
	ready := make(chan string, 1)
	go func() {
		p.done <- demo.Run(ctx, demo.Options{Config: cfg, Roles: []string{demo.RoleApp, demo.RoleConnect, demo.RoleDashboard},
			Ready: func(url string) { ready <- url }})
	}()
	select {
	case p.url = <-ready:
	case err := <-p.done:
		tb.Fatalf("the demo pipeline did not start: %v", err)
	}
	// The app has joined its group and holds every partition: what
	// follows measures the pipeline, not its start.
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		tb.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	for deadline := time.Now().Add(time.Minute); ; {
		groups, err := adm.DescribeGroups(context.Background(), cfg.App.ApplicationID)
		if err == nil && groups.Error() == nil {
			if g := groups[cfg.App.ApplicationID]; g.State == "Stable" && len(g.Members) > 0 {
				break
			}
		}
		if time.Now().After(deadline) {
			tb.Fatalf("the app did not join its group within a minute")
		}
		time.Sleep(20 * time.Millisecond) // polling the group
	}
	// The open page: read the event stream until the pipeline stops.
	go func() {
		resp, err := http.Get(p.url + "events")
		if err != nil {
			return
		}
		defer resp.Body.Close()
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(nil, 16<<20)
		for sc.Scan() {
		}
	}()
	return p
}

func (p *pipeline) stop(tb testing.TB) {
	p.cancel()
	if err := <-p.done; err != nil {
		tb.Errorf("the demo pipeline: %v", err)
	}
}

// waitStock waits until the dashboard has read want() stock updates
// (want is -1 until the generator is done) and returns that count.
func (p *pipeline) waitStock(tb testing.TB, want func() int64) int64 {
	deadline := time.Now().Add(10 * time.Minute)
	for {
		var snap struct {
			Totals struct{ Stock int64 } `json:"totals"`
		}
		resp, err := http.Get(p.url + "api/snapshot")
		if err != nil {
			tb.Fatal(err)
		}
		err = json.NewDecoder(resp.Body).Decode(&snap)
		resp.Body.Close()
		if err != nil {
			tb.Fatal(err)
		}
		if n := want(); n >= 0 && snap.Totals.Stock >= n {
			return n
		}
		if time.Now().After(deadline) {
			tb.Fatalf("the dashboard read %d stock updates in 10 minutes", snap.Totals.Stock)
		}
		time.Sleep(20 * time.Millisecond) // polling the dashboard
	}
}

type retailOp struct {
	elapsed, self, others time.Duration
}

// measureRetail times run, with this process's CPU and the rest of the
// machine's (the broker's).
func measureRetail(tb testing.TB, srv server, run func()) retailOp {
	machine0, err := harness.MachineCPU()
	if err != nil {
		tb.Fatal(err)
	}
	self0, start := harness.SelfCPU(), time.Now()
	run()
	op := retailOp{elapsed: time.Since(start), self: harness.SelfCPU() - self0}
	machine, err := harness.MachineCPU()
	if err != nil {
		tb.Fatal(err)
	}
	op.others = max(machine-machine0-op.self, 0)
	return op
}

func reportRetail(b *testing.B, op retailOp, sales, events int64) {
	s := op.elapsed.Seconds()
	b.ReportMetric(float64(sales)/s, "sales/s")
	if events >= 0 {
		b.ReportMetric(float64(events)/s, "events/s")
	}
	b.ReportMetric(100*op.self.Seconds()/s, "cpu-%")
	b.ReportMetric(100*op.others.Seconds()/s, "others-cpu-%")
	b.ReportMetric(0, "ns/op")
}

func reportLatency(b *testing.B, lat []time.Duration) {
	slices.Sort(lat)
	q := func(f float64) float64 { return float64(lat[int(f*float64(len(lat)-1))]) / float64(time.Millisecond) }
	b.ReportMetric(q(0.50), "p50-ms")
	b.ReportMetric(q(0.99), "p99-ms")
	b.ReportMetric(0, "ns/op")
}

// latencies matches stock updates to the events the generator sent.
type latencies struct {
	shipments string // the shipments topic
	mu        sync.Mutex
	byKey     map[string][]sentEvent // per key, in the generator's order
	cl        *kgo.Client
}

type sentEvent struct {
	at   time.Time
	sale bool
}

func newLatencies(tb testing.TB, addr string, topics retail.Topics) *latencies {
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ConsumeTopics(topics.Stock), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()), kgo.FetchMaxWait(50*time.Millisecond))
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(cl.Close)
	return &latencies{shipments: topics.Shipments, byKey: map[string][]sentEvent{}, cl: cl}
}

// sent is the generator's GenStats.Sent.
func (l *latencies) sent(e retail.Event) {
	now := time.Now()
	l.mu.Lock()
	l.byKey[e.Key] = append(l.byKey[e.Key], sentEvent{at: now, sale: e.Topic != l.shipments})
	l.mu.Unlock()
}

// wait reads stock updates until the generator's sales have theirs and
// returns the latencies of those sent after the first update was read:
// the ones before measure the app's start (its first transaction, its
// tasks' first fetches), not the pipeline.
func (l *latencies) wait(tb testing.TB, sales int) []time.Duration {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	seen := map[string]int{}
	var out []time.Duration
	var flowing time.Time // when the first stock update was read
	for read := 0; read < sales; {
		fs := l.cl.PollFetches(ctx)
		if err := fs.Err0(); err != nil {
			tb.Fatalf("reading the stock updates: %v (%d of %d sales seen)", err, read, sales)
		}
		now := time.Now()
		if flowing.IsZero() {
			flowing = now
		}
		l.mu.Lock()
		fs.EachRecord(func(r *kgo.Record) {
			k := string(r.Key)
			i := seen[k]
			seen[k]++
			if i >= len(l.byKey[k]) {
				tb.Errorf("stock update %d of %s: the generator sent %d events of that key", i, k, len(l.byKey[k]))
				return
			}
			if e := l.byKey[k][i]; e.sale {
				read++
				if e.at.After(flowing) {
					out = append(out, now.Sub(e.at))
				}
			}
		})
		l.mu.Unlock()
	}
	if len(out) < sales/2 {
		tb.Fatalf("only %d of %d sales were sent after the pipeline flowed", len(out), sales)
	}
	return out
}

// roundTrip produces sales of the generator's data set at rate a second
// (acks=all) to a new topic while a read_committed consumer reads them
// back, and returns each one's time from produce to read.
func roundTrip(tb testing.TB, addr string, sales int, rate float64) []time.Duration {
	cfg := retailBenchConfig(tb, int64(sales), rate)
	topic := cfg.Topics.Sales
	createTopic(tb, addr, topic)
	var values [][]byte
	start, err := cfg.Generator.StartTime(time.Now())
	if err != nil {
		tb.Fatal(err)
	}
	if err := retail.Events(cfg, start, func(e retail.Event) bool {
		if e.Topic == topic {
			values = append(values, e.Value)
		}
		return true
	}); err != nil {
		tb.Fatal(err)
	}
	cons, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()), kgo.FetchMaxWait(50*time.Millisecond))
	if err != nil {
		tb.Fatal(err)
	}
	defer cons.Close()
	prod, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		tb.Fatal(err)
	}
	defer prod.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	sent := make([]atomic.Int64, len(values)) // UnixNano
	go func() {
		began := time.Now()
		for i, v := range values {
			if wait := time.Until(began.Add(time.Duration(float64(i) / rate * float64(time.Second)))); wait > 0 {
				time.Sleep(wait) // pacing at the demo's rate
			}
			sent[i].Store(time.Now().UnixNano())
			prod.Produce(ctx, &kgo.Record{Topic: topic, Key: []byte(strconv.Itoa(i)), Value: v}, nil)
		}
	}()
	var out []time.Duration
	for len(out) < len(values) {
		fs := cons.PollFetches(ctx)
		if err := fs.Err0(); err != nil {
			tb.Fatalf("round trip: %v", err)
		}
		now := time.Now()
		fs.EachRecord(func(r *kgo.Record) {
			i, _ := strconv.Atoi(string(r.Key))
			out = append(out, now.Sub(time.Unix(0, sent[i].Load())))
		})
	}
	return out
}
