package streams

import (
	"context"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/runnel-io/runnel/broker/brokertest"
	"github.com/runnel-io/runnel/streams/serde"
)

const (
	records    = 1_000_000
	keys       = 1_000
	partitions = 8
)

// brokers starts n `runnel broker` processes; internal topics and the
// app's topics are replicated to all of them.
func brokers(t *testing.T, n int) *brokertest.Processes {
	s := brokertest.QuickFailover()
	maps.Copy(s, map[string]string{"group.initial.rebalance.delay.ms": "0"})
	if n > 1 {
		maps.Copy(s, map[string]string{
			"default.replication.factor":               "3",
			"min.insync.replicas":                      "2",
			"offsets.topic.replication.factor":         "3",
			"offsets.topic.num.partitions":             "5",
			"transaction.state.log.replication.factor": "3",
			"transaction.state.log.min.isr":            "2",
			"transaction.state.log.num.partitions":     "5",
		})
	}
	return brokertest.StartProcesses(t, brokertest.ProcessOptions{Binary: brokertest.BuildRunnel(t), Nodes: n, Settings: s})
}

// writeInput creates input and output topics and writes records records
// over keys keys, each key records/keys times.
func writeInput(t *testing.T, ctx context.Context, seeds []string, input, output string) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.ProducerLinger(5*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	resp, err := adm.CreateTopics(ctx, partitions, -1, nil, input, output)
	if err == nil {
		err = resp.Error()
	}
	if err != nil {
		t.Fatal(err)
	}
	errs := make(chan error, 1)
	for i := range records {
		r := &kgo.Record{Topic: input, Key: fmt.Appendf(nil, "k%04d", i%keys), Value: fmt.Appendf(nil, "%d", i)}
		cl.Produce(ctx, r, func(_ *kgo.Record, err error) {
			if err != nil {
				select {
				case errs <- err:
				default:
				}
			}
		})
	}
	if err := cl.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-errs:
		t.Fatal(err)
	default:
	}
}

// counts reads the app's output topic (read_committed) and keeps the
// latest count per key and the largest count ever seen per key.
type counts struct {
	cl     *kgo.Client
	latest map[string]int64
	max    map[string]int64
}

func readCounts(t *testing.T, seeds []string, output string) *counts {
	cl, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.ConsumeTopics(output),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return &counts{cl: cl, latest: map[string]int64{}, max: map[string]int64{}}
}

// poll reads what is there and returns the sum of the latest counts.
func (c *counts) poll(t *testing.T, ctx context.Context) int64 {
	pctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	fs := c.cl.PollFetches(pctx)
	fs.EachRecord(func(r *kgo.Record) {
		n, err := serde.Int64.Decode(r.Value)
		if err != nil {
			t.Errorf("count of %s: %v", r.Key, err)
			return
		}
		k := string(r.Key)
		c.latest[k] = n
		c.max[k] = max(c.max[k], n)
	})
	var sum int64
	for _, n := range c.latest {
		sum += n
	}
	return sum
}

// runCountUnderKill runs two instances of the count app, SIGKILLs one
// when about 40% of the input is counted, restarts it on its state
// directory, and waits for the final counts.
func runCountUnderKill(t *testing.T, nodes int, exactly bool) {
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	ps := brokers(t, nodes)
	seeds := ps.Seeds()
	writeInput(t, ctx, seeds, "input", "counts")

	dir := t.TempDir()
	cfg := func(i int) appConfig {
		return appConfig{Brokers: seeds, AppID: "count-app", StateDir: filepath.Join(dir, fmt.Sprint("instance-", i)),
			Exactly: exactly, Input: "input", Output: "counts", CommitMS: 100, Replicate: int16(min(nodes, 3))}
	}
	logPath := filepath.Join(dir, "instances.log")
	t.Cleanup(func() {
		if t.Failed() { // the directory goes with the test: show the log's errors and its end
			b, _ := os.ReadFile(logPath)
			lines := strings.Split(string(b), "\n")
			var notable []string
			for _, l := range lines {
				if !strings.HasPrefix(l, "[INFO]") && !strings.HasPrefix(l, "[DEBUG]") && !strings.Contains(l, "level=INFO") {
					notable = append(notable, l)
				}
			}
			t.Logf("instance logs: %d lines; all but info:\n%s\nthe last 100:\n%s", len(lines),
				strings.Join(notable, "\n"), strings.Join(lines[max(0, len(lines)-100):], "\n"))
		}
	})
	a := startInstance(t, cfg(0), logPath)
	b := startInstance(t, cfg(1), logPath)
	out := readCounts(t, seeds, "counts")

	start := time.Now()
	for out.poll(t, ctx) < records*4/10 {
		if ctx.Err() != nil {
			t.Fatalf("40%% of the input not counted in time")
		}
	}
	t.Logf("killing instance 1 at %d counted (%.1fs)", sumOf(out.latest), time.Since(start).Seconds())
	b.Kill()
	b = startInstance(t, cfg(1), logPath)
	for {
		sum := out.poll(t, ctx)
		if done(out.latest) {
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("final counts not reached: %d of %d counted, %d keys", sum, records, len(out.latest))
		}
	}
	elapsed := time.Since(start)
	t.Logf("%d records counted by two instances (one killed and restarted) in %.1fs: %.0f records/s", records, elapsed.Seconds(), records/elapsed.Seconds())
	a.Stop(t)
	b.Stop(t)

	// Anything committed after the final counts would be a duplicate.
	out.poll(t, ctx)
	want := int64(records / keys)
	for k, n := range out.latest {
		if exactly && (n != want || out.max[k] != want) {
			t.Errorf("key %s: latest count %d, largest %d; want exactly %d", k, n, out.max[k], want)
		}
		if !exactly && n < want {
			t.Errorf("key %s: count %d < %d: records lost", k, n, want)
		}
	}
}

func sumOf(m map[string]int64) int64 {
	var s int64
	for _, n := range m {
		s += n
	}
	return s
}

// done reports whether every key has reached its final count (or more:
// at least once may count some records twice).
func done(latest map[string]int64) bool {
	if len(latest) < keys {
		return false
	}
	for _, n := range latest {
		if n < records/keys {
			return false
		}
	}
	return true
}

func TestCountExactlyOnceUnderKillOneNode(t *testing.T) { runCountUnderKill(t, 1, true) }

func TestCountExactlyOnceUnderKillThreeNodes(t *testing.T) { runCountUnderKill(t, 3, true) }

func TestCountAtLeastOnceUnderKill(t *testing.T) { runCountUnderKill(t, 1, false) }
