package streams_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/runnel-io/runnel/streams"
)

// TestAppQueriesAWindowStore: a windowed count read while the app runs,
// through the Go API (QueryKey with the window store's handle) and over
// HTTP (a key's windows as JSON).
func TestAppQueriesAWindowStore(t *testing.T) {
	c, err := kfake.NewCluster(kfake.NumBrokers(1))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	seeds := c.ListenAddrs()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cl, err := kgo.NewClient(kgo.SeedBrokers(seeds...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	if _, err := kadm.NewClient(cl).CreateTopics(ctx, 2, 1, nil, "clicks"); err != nil {
		t.Fatal(err)
	}
	base := time.Now().Truncate(time.Minute).Add(-10 * time.Minute)
	for i, at := range []time.Duration{0, 10 * time.Second, 70 * time.Second, 75 * time.Second, 80 * time.Second} {
		r := &kgo.Record{Topic: "clicks", Key: []byte("ann"), Value: []byte{byte(i)}, Timestamp: base.Add(at)}
		if err := cl.ProduceSync(ctx, r).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	b := streams.NewBuilder()
	streams.WindowedBy(streams.From[string, []byte](b, "clicks").GroupByKey(), streams.TumblingWindows(time.Minute)).
		Count(streams.Materialized("clicks-per-minute"), streams.Retention(time.Hour)) // kept an hour, for queries
	app, err := streams.NewApp(build(t, b), streams.Config{ApplicationID: "wq", Brokers: seeds, CommitInterval: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- app.Run(runCtx) }()
	defer func() {
		stop()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	}()

	counts := func() (map[int64]int64, error) {
		got := map[int64]int64{}
		err := streams.QueryKey(app, "clicks-per-minute", "ann", func(s *streams.WindowStore[string, int64]) error {
			for kv, err := range s.Fetch("ann", 0, time.Now().UnixMilli()) {
				if err != nil {
					return err
				}
				got[kv.Key.Start] = kv.Value
			}
			return nil
		})
		return got, err
	}
	first, second := base.UnixMilli(), base.Add(time.Minute).UnixMilli()
	for {
		got, err := counts()
		if err == nil && got[first] == 2 && got[second] == 3 && len(got) == 2 {
			break
		}
		var nl *streams.NotLocalError
		if err != nil && !errors.Is(err, streams.ErrNotRunning) && !errors.Is(err, streams.ErrRestoring) && !errors.As(err, &nl) {
			t.Fatal(err)
		}
		select {
		case <-ctx.Done():
			t.Fatalf("windows of ann: %v (%v), want 2 in the first minute and 3 in the second", got, err)
		case err := <-done:
			t.Fatalf("app stopped: %v", err)
		case <-time.After(20 * time.Millisecond):
		}
	}

	srv := httptest.NewServer(app.Handler())
	defer srv.Close()
	resp, err := srv.Client().Get(srv.URL + "/stores/clicks-per-minute/keys/ann")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var body struct {
		Key   string
		Value []struct{ Start, End, Value int64 }
	}
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != 200 || body.Key != "ann" || len(body.Value) != 2 ||
		body.Value[0].Start != first || body.Value[0].End != second || body.Value[0].Value != 2 || body.Value[1].Value != 3 {
		t.Errorf("GET ann: %s %+v", resp.Status, body)
	}
}
