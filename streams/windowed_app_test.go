package streams_test

import (
	"context"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/runnel-io/runnel/streams"
	"github.com/runnel-io/runnel/streams/serde"
)

// windowedApp counts events per key and minute into "updates", and the
// final count of each minute into "finals".
func windowedApp(t *testing.T) *streams.Topology {
	t.Helper()
	b := streams.NewBuilder()
	g := streams.From[string, string](b, "events").GroupByKey()
	counts := streams.WindowedBy(g, streams.TumblingWindows(time.Minute)).Count(streams.Materialized("per-minute"))
	counts.ToStream().To("updates")
	counts.Suppress(streams.UntilWindowCloses(), streams.Named("final")).ToStream().To("finals")
	topo, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	return topo
}

// runUntil runs one instance of the windowed app until done says its
// outputs are complete, then stops it gracefully.
func runUntil(ctx context.Context, t *testing.T, seeds []string, dir string, g streams.Guarantee, done func(updates, finals []streams.Record[win, int64]) bool) (updates, finals []streams.Record[win, int64]) {
	t.Helper()
	app, err := streams.NewApp(windowedApp(t), streams.Config{
		ApplicationID: "windowed", Brokers: seeds, StateDir: dir, Guarantee: g, CommitInterval: 100 * time.Millisecond,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	if err != nil {
		t.Fatal(err)
	}
	runCtx, stop := context.WithCancel(ctx)
	errc := make(chan error, 1)
	go func() { errc <- app.Run(runCtx) }()
	ks := streams.WindowedSerdeOfSize(serde.String, time.Minute)
	for {
		updates, finals = readWindowed(ctx, t, seeds, "updates", ks), readWindowed(ctx, t, seeds, "finals", ks)
		if done(updates, finals) {
			break
		}
		select {
		case err := <-errc:
			t.Fatalf("app stopped: %v", err)
		case <-ctx.Done():
			t.Fatalf("outputs not reached: updates %q, finals %q", renderAll(updates), renderAll(finals))
		case <-time.After(50 * time.Millisecond): // a broker has no watch on a topic: poll
		}
	}
	stop()
	if err := <-errc; err != nil {
		t.Fatalf("Run: %v", err)
	}
	return updates, finals
}

// readWindowed reads every committed record of topic, up to its last
// stable offset (control records count toward it, so they are kept).
func readWindowed(ctx context.Context, t *testing.T, seeds []string, topic string, ks serde.Serde[win]) []streams.Record[win, int64] {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.ConsumeTopics(topic),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()), kgo.KeepControlRecords(), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ends, err := kadm.NewClient(cl).ListCommittedOffsets(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	var out []streams.Record[win, int64]
	var read int64
	want := ends.Offsets()[topic][0].At
	for read < want {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("read %s: %v", topic, ctx.Err())
		}
		fs.EachRecord(func(r *kgo.Record) {
			read = r.Offset + 1
			if r.Attrs.IsControl() {
				return
			}
			k, err := ks.Decode(r.Key)
			if err != nil {
				t.Fatalf("%s key: %v", topic, err)
			}
			n, err := serde.Int64.Decode(r.Value)
			if err != nil {
				t.Fatalf("%s value: %v", topic, err)
			}
			out = append(out, streams.Record[win, int64]{Key: k, Value: n, Timestamp: r.Timestamp.UnixMilli()})
		})
	}
	return out
}

func renderAll(recs []streams.Record[win, int64]) []string { return updates(recs) }

// latest returns the last value per window of one key.
func latest(recs []streams.Record[win, int64], key string, start int64) (int64, int) {
	var v int64
	n := 0
	for _, r := range recs {
		if r.Key.Key == key && r.Key.Start == start {
			v, n = r.Value, n+1
		}
	}
	return v, n
}

func TestWindowedCountAndSuppressionSurviveARestartWithoutState(t *testing.T) {
	for _, g := range []streams.Guarantee{streams.AtLeastOnce, streams.ExactlyOnce} {
		t.Run(g.String(), func(t *testing.T) {
			c, err := kfake.NewCluster(kfake.NumBrokers(1))
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			seeds := c.ListenAddrs()
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			cl, err := kgo.NewClient(kgo.SeedBrokers(seeds...))
			if err != nil {
				t.Fatal(err)
			}
			defer cl.Close()
			adm := kadm.NewClient(cl)
			// One partition: one task, so that one stream time closes every window.
			if _, err := adm.CreateTopics(ctx, 1, 1, nil, "events", "updates", "finals"); err != nil {
				t.Fatal(err)
			}
			// Recent event times: the changelog's retention.ms is measured
			// against record times, as Kafka's is.
			base := time.Now().Add(-10 * time.Minute).Truncate(time.Minute)
			w0 := base.UnixMilli()
			produce := func(key string, offset time.Duration) {
				t.Helper()
				r := &kgo.Record{Topic: "events", Key: []byte(key), Value: []byte("x"), Timestamp: base.Add(offset)}
				if err := cl.ProduceSync(ctx, r).FirstErr(); err != nil {
					t.Fatal(err)
				}
			}
			dir := t.TempDir()

			// 1. Counts for the first minute; its window stays open.
			produce("a", 0)
			produce("a", 10*time.Second)
			produce("b", 20*time.Second)
			runUntil(ctx, t, seeds, dir, g, func(u, _ []streams.Record[win, int64]) bool {
				a, _ := latest(u, "a", w0)
				b, _ := latest(u, "b", w0)
				return a == 2 && b == 1
			})
			cfg, err := adm.DescribeTopicConfigs(ctx, "windowed-per-minute-changelog")
			if err != nil {
				t.Fatal(err)
			}
			if v, err := cfg.On("windowed-per-minute-changelog", nil); err != nil || !hasConfig(v, "cleanup.policy", "compact,delete") {
				t.Fatalf("window changelog configs %v (%v): want cleanup.policy compact,delete", v.Configs, err)
			}

			// 2. The state directory is lost. The next instance rebuilds the
			// window store and the suppression buffer from their changelogs:
			// a's count goes on from 2, and b's buffered count is emitted
			// when the minute closes.
			if err := os.RemoveAll(filepath.Join(dir, "windowed")); err != nil {
				t.Fatal(err)
			}
			produce("a", 30*time.Second)
			produce("c", 2*time.Minute) // closes the first minute
			_, finals := runUntil(ctx, t, seeds, dir, g, func(_, f []streams.Record[win, int64]) bool {
				_, na := latest(f, "a", w0)
				_, nb := latest(f, "b", w0)
				return na > 0 && nb > 0
			})
			if a, n := latest(finals, "a", w0); a != 3 || n != 1 {
				t.Fatalf("final of a: %d in %d records, want 3 in one (finals %q)", a, n, renderAll(finals))
			}
			if b, n := latest(finals, "b", w0); b != 1 || n != 1 {
				t.Fatalf("final of b: %d in %d records, want 1 in one (finals %q)", b, n, renderAll(finals))
			}

			// 3. Lost again, then a record for the closed minute. The new
			// task's stream time starts over, but the restored stores know
			// how far it had got: the count drops the record, and the
			// suppression (which keeps its own stream time) emits no
			// second final.
			if err := os.RemoveAll(filepath.Join(dir, "windowed")); err != nil {
				t.Fatal(err)
			}
			produce("a", 40*time.Second)
			produce("d", 3*time.Minute)
			updates, finals := runUntil(ctx, t, seeds, dir, g, func(u, _ []streams.Record[win, int64]) bool {
				d, _ := latest(u, "d", w0+3*60_000)
				return d == 1
			})
			if a, n := latest(updates, "a", w0); a != 3 || n != 3 {
				t.Fatalf("updates of a for the first minute: last %d of %d, want 3 of 3 (updates %q)", a, n, renderAll(updates))
			}
			for _, key := range []string{"a", "b"} {
				if _, n := latest(finals, key, w0); n != 1 {
					t.Fatalf("%d finals of %s for the first minute, want 1 (finals %q)", n, key, renderAll(finals))
				}
			}
		})
	}
}

func hasConfig(rc kadm.ResourceConfig, key, value string) bool {
	for _, c := range rc.Configs {
		if c.Key == key && c.Value != nil && *c.Value == value {
			return true
		}
	}
	return false
}
