package streams_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/runnel-io/runnel/broker/brokertest"
	"github.com/runnel-io/runnel/streams"
	"github.com/runnel-io/runnel/streams/serde"
)

// runWordCount runs the word count app on brokers at seeds over lines it
// writes first, and checks the counts it writes.
func runWordCount(t *testing.T, seeds []string, g streams.Guarantee) {
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	_, want := writeLines(t, ctx, seeds, 4, 2000, func(i int) string { return fmt.Sprintf("w%d w%d common", i%37, i%11) })

	app, err := streams.NewApp(wordCount(t), streams.Config{
		ApplicationID:  "wordcount",
		Brokers:        seeds,
		Guarantee:      g,
		CommitInterval: 100 * time.Millisecond,
	})
	if err != nil {
		t.Fatal(err)
	}
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() {
		err := app.Run(runCtx)
		if err != nil {
			t.Logf("Run: %v", err)
		}
		done <- err
	}()

	out, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.ConsumeTopics("word-counts"),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	got := map[string]int64{}
	for !equalCounts(got, want) {
		fs := out.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("counts not reached: got %v, want %v", got, want)
		}
		select {
		case err := <-done:
			t.Fatalf("app stopped: %v", err)
		default:
		}
		fs.EachRecord(func(r *kgo.Record) {
			n, err := serde.Int64.Decode(r.Value)
			if err != nil {
				t.Errorf("value of %s: %v", r.Key, err)
			}
			got[string(r.Key)] = n
		})
	}
	stop()
	if err := <-done; err != nil {
		t.Fatalf("Run: %v", err)
	}
}

// writeLines creates "lines" and "word-counts" with partitions each and
// writes n lines, line(i) keyed "k<i>"; it returns the client (closed
// with the test) and each word's count in them.
func writeLines(t *testing.T, ctx context.Context, seeds []string, partitions int32, n int, line func(i int) string) (*kgo.Client, map[string]int64) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(seeds...))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	if _, err := kadm.NewClient(cl).CreateTopics(ctx, partitions, 1, nil, "lines", "word-counts"); err != nil {
		t.Fatal(err)
	}
	want := map[string]int64{}
	recs := make([]*kgo.Record, 0, n)
	for i := range n {
		l := line(i)
		for _, w := range strings.Fields(l) {
			want[w]++
		}
		recs = append(recs, &kgo.Record{Topic: "lines", Key: fmt.Appendf(nil, "k%d", i), Value: []byte(l)})
	}
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	return cl, want
}

func equalCounts(got, want map[string]int64) bool {
	if len(got) != len(want) {
		return false
	}
	for k, v := range want {
		if got[k] != v {
			return false
		}
	}
	return true
}

func TestAppWordCountKfake(t *testing.T) {
	for _, g := range []streams.Guarantee{streams.AtLeastOnce, streams.ExactlyOnce} {
		t.Run(g.String(), func(t *testing.T) {
			c, err := kfake.NewCluster(kfake.NumBrokers(1))
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			runWordCount(t, c.ListenAddrs(), g)
		})
	}
}

func TestAppWordCountRunnel(t *testing.T) {
	for _, g := range []streams.Guarantee{streams.AtLeastOnce, streams.ExactlyOnce} {
		t.Run(g.String(), func(t *testing.T) {
			b := brokertest.Start(t)
			runWordCount(t, []string{b.Addr()}, g)
		})
	}
}
