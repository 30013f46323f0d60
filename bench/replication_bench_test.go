package bench_test

import (
	"context"
	"flag"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/runnel-io/runnel/bench/internal/harness"
)

// Replication benchmarks: what replicating to three brokers costs a
// producer (BenchmarkReplication, RF=3 against RF=1 on the same cluster)
// and the end-to-end latency of records at a fixed rate with RF=3
// (BenchmarkReplicationLatency). The cluster is three `runnel broker`
// processes with Runnel's default settings, so the benchmark process holds
// only the clients.
const (
	replNodes      = 3
	replPartitions = 8
	replValueSize  = 1024
	// The latency run's load: 20,000 records/s of 1 KB, 200 records every
	// 10 ms.
	latencyRate  = 20000
	latencyBatch = 200
)

// replTopics are the topics BenchmarkReplication produces to, in the order
// each round runs them: every partition on one broker (RF=1, acks=all is
// the leader alone), and on all three with min.insync.replicas=2 (acks=all
// waits until every replica in the ISR has the batch).
var replTopics = []struct {
	name string
	spec topicSpec
}{
	{"rf1", topicSpec{partitions: replPartitions, rf: 1, configs: map[string]*string{"min.insync.replicas": kadm.StringPtr("1")}}},
	{"rf3", topicSpec{partitions: replPartitions, rf: 3, configs: map[string]*string{"min.insync.replicas": kadm.StringPtr("2")}}},
}

// startProcCluster starts replNodes `runnel broker` processes that form
// one cluster ($RUNNEL_BENCH_BROKER_FLAGS added to each), stopped (SIGTERM, clean exits required) when tb ends. srv
// carries the nodes' pids (the meter sums their CPU) and their health.
func startProcCluster(tb testing.TB) (seeds []string, srv server) {
	bin, err := runnelBin()
	if err != nil {
		tb.Fatal(err)
	}
	// Extra flags for every node, as for runnel-proc.
	flags := strings.Fields(os.Getenv("RUNNEL_BENCH_BROKER_FLAGS"))
	c, err := harness.StartCluster(context.Background(), bin, tb.TempDir(), replNodes, flags...)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		if err := c.Stop(); err != nil {
			tb.Error(err)
		}
	})
	return c.Seeds(), server{addr: c.Seeds()[0], pids: c.PIDs(), health: c.Health}
}

// BenchmarkReplication measures one franz-go client producing b.N records
// of 1 KB (acks=all, idempotent, default linger) into a fresh 8-partition
// topic of a three-node cluster, RF=1 and then RF=3, back to back on the
// same cluster. MB/s as in BenchmarkProduce; broker-cpu-% is the three
// nodes' together.
func BenchmarkReplication(b *testing.B) {
	seeds, srv := startProcCluster(b)
	for _, tp := range replTopics {
		b.Run(fmt.Sprintf("%s/1KB/%dp", tp.name, replPartitions), func(b *testing.B) {
			benchProduceTo(b, srv, seeds, tp.spec, replValueSize)
		})
	}
}

// BenchmarkReplicationLatency measures end-to-end latency on the same kind
// of cluster: a producer hands 200 records of 1 KB to its client every
// 10 ms (20,000 records/s) into an 8-partition RF=3 topic
// (min.insync.replicas=2, acks=all) while a consumer in this process reads
// them; a record's latency is from the time its batch was due until the
// consumer had it (see harness.PacedLatency). One op is one paced run of
// latencyDuration; with b.N > 1 the samples of all runs are pooled.
// Metrics: p50-ms, p99-ms, p99.9-ms and max-ms (exact, from every
// record's sample), records/s the producer achieved (below 20000 when it
// could not keep up), behind-max-ms (the latest a batch was handed over),
// and the CPU metrics of BenchmarkReplication.
func BenchmarkReplicationLatency(b *testing.B) {
	seeds, srv := startProcCluster(b)
	b.Run(fmt.Sprintf("rf3/1KB/%dp", replPartitions), func(b *testing.B) {
		benchLatency(b, srv, seeds, replTopics[1].spec, latencyDuration(b))
	})
}

func benchLatency(b *testing.B, srv server, seeds []string, spec topicSpec, d time.Duration) {
	b.StopTimer()
	ctx := b.Context()
	log := &harness.ClientLog{}
	cl, err := harness.NewClient(seeds, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	load := harness.Paced{ValueSize: replValueSize, Rate: latencyRate, Batch: latencyBatch, Duration: d}
	var all harness.LatencyResult
	var sendTime time.Duration
	m := startMeter(srv)
	for range b.N {
		load.Topic = harness.TopicName("latency")
		if err := harness.CreateReplicatedTopic(ctx, adm, load.Topic, spec.partitions, spec.rf, spec.configs); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		res, err := harness.PacedLatency(ctx, seeds, load, spec.partitions, log, srv.health)
		b.StopTimer()
		if err != nil {
			b.Fatalf("paced run of %v at %d records/s: %v", d, load.Rate, err)
		}
		all.Latencies = append(all.Latencies, res.Latencies...)
		all.MaxBehind = max(all.MaxBehind, res.MaxBehind)
		sendTime += time.Duration(float64(len(res.Latencies)) / res.SendRate * float64(time.Second))
		deleteTopic(b, adm, load.Topic)
	}
	slices.Sort(all.Latencies)
	ms := func(d time.Duration) float64 { return float64(d) / 1e6 }
	b.ReportMetric(ms(all.Percentile(0.50)), "p50-ms")
	b.ReportMetric(ms(all.Percentile(0.99)), "p99-ms")
	b.ReportMetric(ms(all.Percentile(0.999)), "p99.9-ms")
	b.ReportMetric(ms(all.Percentile(1)), "max-ms")
	b.ReportMetric(float64(len(all.Latencies))/sendTime.Seconds(), "records/s")
	b.ReportMetric(ms(all.MaxBehind), "behind-max-ms")
	m.reportCPU(b, log)
}

// latencyDuration is how long one paced run lasts: $RUNNEL_BENCH_LATENCY_TIME
// (a Go duration), else ten times -benchtime (10 s at the default 1s), or
// 10 s when -benchtime is a count (Nx).
func latencyDuration(tb testing.TB) time.Duration {
	if v := os.Getenv("RUNNEL_BENCH_LATENCY_TIME"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 {
			tb.Fatalf("RUNNEL_BENCH_LATENCY_TIME=%q: want a positive duration", v)
		}
		return d
	}
	if f := flag.Lookup("test.benchtime"); f != nil {
		if d, err := time.ParseDuration(f.Value.String()); err == nil && d > 0 {
			return 10 * d
		}
	}
	return 10 * time.Second
}

// TestReplication runs both replication benchmarks' drivers briefly
// against a three-node process cluster: an RF=3 topic takes records with
// acks=all, and a paced run at 2,000 records/s for half a second yields a
// latency sample per record. Skipped with -short (it builds and starts
// the runnel binary).
func TestReplication(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and starts three runnel broker processes")
	}
	seeds, srv := startProcCluster(t)
	ctx := t.Context()
	log := &harness.ClientLog{}
	cl, err := harness.NewClient(seeds, log, harness.ProducerOpts(replValueSize)...)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	spec := replTopics[1].spec
	if err := harness.CreateReplicatedTopic(ctx, adm, "rf3", spec.partitions, spec.rf, spec.configs); err != nil {
		t.Fatal(err)
	}
	if err := harness.Produce(ctx, cl, "rf3", 2000, harness.Payload(replValueSize), srv.health); err != nil {
		t.Fatal(err)
	}
	d, err := harness.LoadDataset(ctx, adm, "rf3", replValueSize)
	if err != nil {
		t.Fatal(err)
	}
	if got := d.Records(); got != 2000 {
		t.Fatalf("end offsets hold %d records, want 2000", got)
	}

	load := harness.Paced{Topic: "paced", ValueSize: replValueSize, Rate: 2000, Batch: 20, Duration: 500 * time.Millisecond}
	if err := harness.CreateReplicatedTopic(ctx, adm, load.Topic, spec.partitions, spec.rf, spec.configs); err != nil {
		t.Fatal(err)
	}
	res, err := harness.PacedLatency(ctx, seeds, load, spec.partitions, log, srv.health)
	if err != nil {
		t.Fatal(err)
	}
	p50, p999 := res.Percentile(0.5), res.Percentile(0.999)
	t.Logf("%d samples, p50 %v, p99.9 %v, %.0f records/s, behind at most %v", len(res.Latencies), p50, p999, res.SendRate, res.MaxBehind)
	if int64(len(res.Latencies)) != load.Records() || p50 <= 0 || p999 < p50 || res.SendRate <= 0 {
		t.Fatalf("implausible result: %d samples of %d, p50 %v, p99.9 %v, %.0f records/s", len(res.Latencies), load.Records(), p50, p999, res.SendRate)
	}
}
