package bench_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/runnel-io/runnel/bench/internal/harness"
	"github.com/runnel-io/runnel/broker/brokertest"
	"github.com/runnel-io/runnel/internal/groupmember"
)

// Every scenario: record value size × partition count.
var (
	sizes = []struct {
		name  string
		bytes int
	}{{"1KB", 1024}, {"100B", 100}}
	partitionCounts = []int32{1, 8}
)

// server is a Kafka-protocol server under test.
type server struct {
	addr string
	// pids are the broker processes when they run apart from the
	// benchmark, else nil (their CPU and memory are then part of this
	// process's): one, or a cluster's nodes (BenchmarkReplication).
	pids []int
	// health reports a broker process that exited; nil in-process.
	health func() error
}

// targets are the servers measured, in the order each corner runs them.
// "runnel-proc" (`runnel broker`) and "kfake-proc" (cmd/kfakebroker) each
// run as a child process with its own runtime, so the benchmark process
// holds only the client, the same for both: that is the fair comparison.
// "runnel" and "kfake" run inside the benchmark process and share its
// heap and garbage collector with the client; kfake's in-memory data then
// sets the collector's pace for the client too (see README.md).
var targets = []struct {
	name  string
	start func(tb testing.TB) server
}{
	{"runnel", func(tb testing.TB) server {
		return server{addr: brokertest.Start(tb).Addr()}
	}},
	{"runnel-proc", func(tb testing.TB) server {
		bin, err := runnelBin()
		if err != nil {
			tb.Fatal(err)
		}
		// Extra flags, e.g. --cpuprofile=/tmp/broker.prof to profile it.
		flags := strings.Fields(os.Getenv("RUNNEL_BENCH_BROKER_FLAGS"))
		p, err := harness.StartProcess(context.Background(), bin, tb.TempDir(), flags...)
		if err != nil {
			tb.Fatal(err)
		}
		return processServer(tb, p)
	}},
	{"kfake", func(tb testing.TB) server {
		c, err := kfake.NewCluster(kfake.NumBrokers(1))
		if err != nil {
			tb.Fatal(err)
		}
		tb.Cleanup(c.Close)
		return server{addr: c.ListenAddrs()[0]}
	}},
	{"kfake-proc", func(tb testing.TB) server {
		bin, err := kfakeBin()
		if err != nil {
			tb.Fatal(err)
		}
		p, err := harness.StartKfakeProcess(context.Background(), bin)
		if err != nil {
			tb.Fatal(err)
		}
		return processServer(tb, p)
	}},
}

// processServer is the server of a broker process, stopped (SIGTERM, a
// clean exit required) when the test or benchmark ends.
func processServer(tb testing.TB, p *harness.Process) server {
	tb.Cleanup(func() {
		if err := p.Stop(); err != nil {
			tb.Error(err)
		}
	})
	return server{addr: p.Addr, pids: []int{p.PID()}, health: p.Health}
}

// binDir makes the directory for the binaries built for the process
// targets; madeBinDir is it once made, for TestMain to remove.
var (
	madeBinDir atomic.Pointer[string]
	binDir     = sync.OnceValues(func() (string, error) {
		dir, err := os.MkdirTemp("", "runnel-bench-bin-")
		if err == nil {
			madeBinDir.Store(&dir)
		}
		return dir, err
	})
)

var runnelBin = sync.OnceValues(func() (string, error) {
	dir, err := binDir()
	if err != nil {
		return "", err
	}
	return harness.RunnelBinary(context.Background(), dir)
})

var kfakeBin = sync.OnceValues(func() (string, error) {
	dir, err := binDir()
	if err != nil {
		return "", err
	}
	return harness.KfakeBinary(context.Background(), dir)
})

func TestMain(m *testing.M) {
	// BenchmarkRebalance kills members that run in child processes: this
	// binary started again.
	groupmember.MainIfChild()
	code := m.Run()
	if dir := madeBinDir.Load(); dir != nil {
		os.RemoveAll(*dir)
	}
	os.Exit(code)
}

// consumeBytes is the size of the data set each consume scenario reads,
// again and again: $RUNNEL_BENCH_CONSUME_BYTES, else 256 MiB.
func consumeBytes(tb testing.TB) int64 {
	v := os.Getenv("RUNNEL_BENCH_CONSUME_BYTES")
	if v == "" {
		return 256 << 20
	}
	n, err := harness.ParseBytes(v)
	if err != nil || n <= 0 {
		tb.Fatalf("RUNNEL_BENCH_CONSUME_BYTES: %v", err)
	}
	return n
}

// BenchmarkProduce measures one client producing b.N records (acks=all,
// idempotent) into a fresh topic and waiting for every acknowledgement.
func BenchmarkProduce(b *testing.B) {
	for _, tg := range targets {
		b.Run(tg.name, func(b *testing.B) {
			srv := tg.start(b)
			for _, size := range sizes {
				for _, parts := range partitionCounts {
					b.Run(fmt.Sprintf("%s/%dp", size.name, parts), func(b *testing.B) {
						benchProduce(b, srv, size.bytes, parts)
					})
				}
			}
		})
	}
}

func benchProduce(b *testing.B, srv server, size int, parts int32) {
	benchProduceTo(b, srv, []string{srv.addr}, topicSpec{partitions: parts, rf: 1}, size)
}

// topicSpec is the topic a produce benchmark creates.
type topicSpec struct {
	partitions int32
	rf         int16
	configs    map[string]*string
}

// benchProduceTo is benchProduce into a new topic of spec on the brokers
// at seeds; srv is for the meter and health.
func benchProduceTo(b *testing.B, srv server, seeds []string, spec topicSpec, size int) {
	benchProduceWith(b, srv, seeds, spec, size, idempotentSend)
}

// sendFunc sends n records of payload to topic through cl and waits until
// every one is acknowledged; it returns the transactions it committed
// (none without transactions).
type sendFunc func(ctx context.Context, cl *kgo.Client, topic string, n int64, payload []byte, health func() error) (harness.TxnResult, error)

// idempotentSend is the producer of every benchmark but the
// transactional ones: harness.Produce.
func idempotentSend(ctx context.Context, cl *kgo.Client, topic string, n int64, payload []byte, health func() error) (harness.TxnResult, error) {
	return harness.TxnResult{}, harness.Produce(ctx, cl, topic, n, payload, health)
}

// benchProduceWith is benchProduceTo with send as the producer; opts are
// added to the client's. With transactions it also reports commits/s,
// records/commit and endtxn-ms (the mean time EndTransaction took), and
// the end offsets must hold the commit markers too.
func benchProduceWith(b *testing.B, srv server, seeds []string, spec topicSpec, size int, send sendFunc, opts ...kgo.Opt) {
	b.StopTimer()
	ctx := b.Context()
	log := &harness.ClientLog{}
	cl, err := harness.NewClient(seeds, log, append(harness.ProducerOpts(size), opts...)...)
	if err != nil {
		b.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	topic := harness.TopicName("produce")
	parts := spec.partitions
	if err := harness.CreateReplicatedTopic(ctx, adm, topic, parts, spec.rf, spec.configs); err != nil {
		b.Fatal(err)
	}
	defer deleteTopic(b, adm, topic)
	payload := harness.Payload(size)
	// Warm up outside the timer: connect, load metadata and a producer id.
	warm := int64(parts)
	warmTxn, err := send(ctx, cl, topic, warm, payload, srv.health)
	if err != nil {
		b.Fatalf("warm-up produce: %v", err)
	}

	n := int64(b.N)
	m := startMeter(srv)
	b.ResetTimer()
	b.StartTimer()
	txn, err := send(ctx, cl, topic, n, payload, srv.health)
	b.StopTimer()
	if err != nil {
		b.Fatalf("produce %d records of %d bytes to %d partitions: %v", n, size, parts, err)
	}
	m.report(b, n, size, log)
	if txn.Commits > 0 {
		b.ReportMetric(float64(txn.Commits)/b.Elapsed().Seconds(), "commits/s")
		b.ReportMetric(float64(n)/float64(txn.Commits), "records/commit")
		b.ReportMetric(txn.EndTxnTime.Seconds()*1000/float64(txn.Commits), "endtxn-ms")
	}

	// Every acknowledged record and commit marker, no more: no loss, no
	// duplicates, no transaction left open.
	if _, err := harness.AwaitDataset(ctx, adm, topic, size, warm+n+warmTxn.Markers+txn.Markers); err != nil {
		b.Fatalf("%v (%d records acknowledged, %d commit markers)", err, warm+n, warmTxn.Markers+txn.Markers)
	}
}

// BenchmarkConsume measures reading b.N records with one client that
// assigns itself every partition (no group) from the start: passes over a
// data set of consumeBytes produced once per scenario, so the broker reads
// from the page cache as it would right after a produce.
func BenchmarkConsume(b *testing.B) {
	for _, tg := range targets {
		b.Run(tg.name, func(b *testing.B) {
			srv := tg.start(b)
			cl, err := harness.NewClient([]string{srv.addr}, nil)
			if err != nil {
				b.Fatal(err)
			}
			defer cl.Close()
			adm := kadm.NewClient(cl)
			for _, size := range sizes {
				for _, parts := range partitionCounts {
					var ds *harness.Dataset
					b.Run(fmt.Sprintf("%s/%dp", size.name, parts), func(b *testing.B) {
						b.StopTimer()
						if ds == nil {
							ds = prepareDataset(b, srv, adm, size.bytes, parts)
						}
						benchConsume(b, srv, *ds)
					})
					if ds != nil {
						deleteTopic(b, adm, ds.Topic)
					}
				}
			}
		})
	}
}

// prepareDataset produces consumeBytes of records into a new topic.
func prepareDataset(b *testing.B, srv server, adm *kadm.Client, size int, parts int32) *harness.Dataset {
	ctx := b.Context()
	topic := harness.TopicName("consume")
	if err := harness.CreateTopic(ctx, adm, topic, parts, nil); err != nil {
		b.Fatal(err)
	}
	cl, err := harness.NewClient([]string{srv.addr}, nil, harness.ProducerOpts(size)...)
	if err != nil {
		b.Fatal(err)
	}
	defer cl.Close()
	n := max(1, consumeBytes(b)/int64(size))
	if err := harness.Produce(ctx, cl, topic, n, harness.Payload(size), srv.health); err != nil {
		b.Fatalf("produce the data set: %v", err)
	}
	d, err := harness.LoadDataset(ctx, adm, topic, size)
	if err != nil {
		b.Fatal(err)
	}
	if got := d.Records(); got != n {
		b.Fatalf("data set: end offsets hold %d records, %d were acknowledged", got, n)
	}
	return &d
}

func benchConsume(b *testing.B, srv server, d harness.Dataset) {
	log := &harness.ClientLog{}
	n := int64(b.N)
	m := startMeter(srv)
	b.ResetTimer()
	b.StartTimer()
	stats := &harness.FetchStats{}
	err := harness.Consume(b.Context(), []string{srv.addr}, d, n, log, srv.health, kgo.WithHooks(stats))
	b.StopTimer()
	if err != nil {
		b.Fatalf("consume %d records: %v", n, err)
	}
	m.report(b, n, d.ValueSize, log)
	if os.Getenv("RUNNEL_BENCH_FETCH_STATS") != "" {
		b.Logf("%d records: %v", n, stats)
	}
}

// BenchmarkRaw measures the machine's limit for the same bytes: produce is
// loopback TCP into a file fsynced with group commit, consume is a file
// sent over loopback TCP (see harness.RawProduce and harness.RawConsume).
// One op is one record's worth of bytes, so MB/s compares directly.
func BenchmarkRaw(b *testing.B) {
	b.Run("produce", func(b *testing.B) {
		for _, size := range sizes {
			b.Run(size.name, func(b *testing.B) {
				b.StopTimer()
				dir := b.TempDir()
				m := startMeter(server{})
				b.ResetTimer()
				b.StartTimer()
				err := harness.RawProduce(b.Context(), dir, int64(b.N)*int64(size.bytes))
				b.StopTimer()
				if err != nil {
					b.Fatal(err)
				}
				m.report(b, int64(b.N), size.bytes, nil)
			})
		}
	})
	b.Run("consume", func(b *testing.B) {
		path, err := harness.WriteRawFile(b.TempDir(), consumeBytes(b))
		if err != nil {
			b.Fatal(err)
		}
		for _, size := range sizes {
			b.Run(size.name, func(b *testing.B) {
				m := startMeter(server{})
				b.ResetTimer()
				err := harness.RawConsume(b.Context(), path, int64(b.N)*int64(size.bytes))
				b.StopTimer()
				if err != nil {
					b.Fatal(err)
				}
				m.report(b, int64(b.N), size.bytes, nil)
			})
		}
	})
}

// meter takes the CPU readings a run reports besides throughput.
type meter struct {
	srv                      server
	start                    time.Time
	selfCPU, brkCPU, machine time.Duration
	gcs                      uint32
	err                      error
}

func startMeter(srv server) meter {
	m := meter{srv: srv, start: time.Now(), selfCPU: harness.SelfCPU(), gcs: numGC()}
	var err error
	m.brkCPU, err = brokersCPU(srv.pids)
	m.err = errors.Join(m.err, err)
	m.machine, err = harness.MachineCPU()
	m.err = errors.Join(m.err, err)
	return m
}

// report adds the metrics: MB/s (10^6 bytes of record values per second),
// records/s, and those of reportCPU.
func (m meter) report(b *testing.B, records int64, size int, log *harness.ClientLog) {
	el := b.Elapsed().Seconds()
	b.ReportMetric(float64(records)*float64(size)/1e6/el, "MB/s")
	b.ReportMetric(float64(records)/el, "records/s")
	m.reportCPU(b, log)
}

// reportCPU adds cpu-% (this process; 100 = one core busy), gcs (garbage
// collections in this process during the run: the client's allocation
// rate against the live heap, which in-process kfake's stored data
// inflates), broker-cpu-% and broker-VmHWM-MiB for broker processes
// (runnel-proc, kfake-proc; for a cluster the sum of its nodes' CPU and
// the largest node's VmHWM), others-cpu-% (every other process on the
// machine: load that competed with the run), and the warnings the clients
// logged (kgo retries silently otherwise).
func (m meter) reportCPU(b *testing.B, log *harness.ClientLog) {
	wall := time.Since(m.start).Seconds()
	self := harness.SelfCPU() - m.selfCPU
	machine, err := harness.MachineCPU()
	if err = errors.Join(m.err, err); err != nil {
		b.Fatalf("CPU readings: %v", err)
	}
	machine -= m.machine
	b.ReportMetric(100*self.Seconds()/wall, "cpu-%")
	b.ReportMetric(float64(numGC()-m.gcs), "gcs")
	others := machine - self
	if len(m.srv.pids) > 0 {
		cpu, err := brokersCPU(m.srv.pids)
		if err != nil {
			b.Fatalf("broker CPU: %v", err)
		}
		b.ReportMetric(100*(cpu-m.brkCPU).Seconds()/wall, "broker-cpu-%")
		others -= cpu - m.brkCPU
		var hwm int64
		for _, pid := range m.srv.pids {
			mem, err := harness.ReadMemory(pid)
			if err != nil {
				b.Fatal(err)
			}
			hwm = max(hwm, mem.HWM)
		}
		b.ReportMetric(float64(hwm)/(1<<20), "broker-VmHWM-MiB")
	}
	// /proc/stat counts in 10ms ticks: too coarse for short runs.
	if wall >= 0.5 {
		b.ReportMetric(min(max(0, 100*others.Seconds()/wall), 100*float64(runtime.NumCPU())), "others-cpu-%")
	}
	if log != nil {
		b.ReportMetric(float64(log.Count()), "client-warnings")
		for _, l := range log.First() {
			b.Logf("client warning: %s", l)
		}
	}
}

func deleteTopic(b *testing.B, adm *kadm.Client, topic string) {
	if b.Failed() {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := harness.DeleteTopic(ctx, adm, topic); err != nil {
		b.Error(err)
	}
}

// brokersCPU is the CPU time the processes pids used so far, summed.
func brokersCPU(pids []int) (time.Duration, error) {
	var sum time.Duration
	for _, pid := range pids {
		cpu, err := harness.ProcessCPU(pid)
		if err != nil {
			return 0, err
		}
		sum += cpu
	}
	return sum, nil
}

// numGC returns the number of garbage collections completed so far.
func numGC() uint32 {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.NumGC
}
