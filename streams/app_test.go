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
	cl, err := kgo.NewClient(kgo.SeedBrokers(seeds...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	if _, err := adm.CreateTopics(ctx, 4, 1, nil, "lines", "word-counts"); err != nil {
		t.Fatal(err)
	}
	want := map[string]int64{}
	for i := range 2000 {
		line := fmt.Sprintf("w%d w%d common", i%37, i%11)
		for _, w := range strings.Fields(line) {
			want[w]++
		}
		if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "lines", Key: fmt.Appendf(nil, "k%d", i), Value: []byte(line)}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}

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
