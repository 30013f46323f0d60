package streams_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/runnel-io/runnel/broker/brokertest"
	"github.com/runnel-io/runnel/streams"
	"github.com/runnel-io/runnel/streams/serde"
)

// TestAppExactlyOnceRecoversWhenFenced: another producer takes the app's
// transactional id (as a zombie's successor would), fencing the app's
// producer mid-stream. The app drops its uncommitted work, rejoins with a
// new epoch and goes on: the counts end exact, and no count read with
// read_committed ever goes past its final value.
func TestAppExactlyOnceRecoversWhenFenced(t *testing.T) {
	b := brokertest.Start(t)
	seeds := []string{b.Addr()}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	line := func(i int) string { return fmt.Sprintf("w%d v%d", i%50, i%3) }
	cl, want := writeLines(t, ctx, seeds, 4, 3000, line)

	dir := t.TempDir()
	reg := prometheus.NewRegistry()
	app, err := streams.NewApp(wordCount(t), streams.Config{ApplicationID: "fenced", Brokers: seeds, StateDir: dir,
		Guarantee: streams.ExactlyOnce, Metrics: reg})
	if err != nil {
		t.Fatal(err)
	}
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- app.Run(runCtx) }()

	out, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.ConsumeTopics("word-counts"),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	got, most := map[string]int64{}, map[string]int64{}
	poll := func() {
		fs := out.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("counts not reached: %d of %d words", len(got), len(want))
		}
		select {
		case err := <-done:
			t.Fatalf("app stopped: %v", err)
		default:
		}
		fs.EachRecord(func(r *kgo.Record) {
			n, err := serde.Int64.Decode(r.Value)
			if err != nil {
				t.Fatal(err)
			}
			got[string(r.Key)] = n
			most[string(r.Key)] = max(most[string(r.Key)], n)
		})
	}
	for len(got) == 0 { // the app has committed something
		poll()
	}

	// Fence it: a producer with the app's transactional id initializes.
	id, err := os.ReadFile(filepath.Join(dir, "fenced", "instance-id"))
	if err != nil {
		t.Fatal(err)
	}
	zombie, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.TransactionalID("fenced-"+strings.TrimSpace(string(id))))
	if err != nil {
		t.Fatal(err)
	}
	if err := zombie.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	if err := zombie.ProduceSync(ctx, &kgo.Record{Topic: "lines", Key: []byte("z"), Value: []byte("never")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	if err := zombie.EndTransaction(ctx, kgo.TryAbort); err != nil {
		t.Fatal(err)
	}
	zombie.Close()

	// More input after the fence, then the final counts.
	var recs []*kgo.Record
	for i := 3000; i < 6000; i++ {
		for _, w := range strings.Fields(line(i)) {
			want[w]++
		}
		recs = append(recs, &kgo.Record{Topic: "lines", Key: fmt.Appendf(nil, "k%d", i), Value: []byte(line(i))})
	}
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	for !equalCounts(got, want) {
		poll()
	}
	stop()
	if err := <-done; err != nil {
		t.Fatalf("Run: %v", err)
	}
	if n := gathered(t, reg, "runnel_streams_producer_fenced_total"); n < 1 {
		t.Errorf("the app was never fenced (%v): the test did not test recovery", n)
	}
	for w, n := range want {
		if most[w] != n {
			t.Errorf("%s: read_committed showed %d, final count %d: counted twice", w, most[w], n)
		}
	}
}
