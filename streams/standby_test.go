package streams_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/runnel-io/runnel/broker/brokertest"
	"github.com/runnel-io/runnel/streams"
)

// gathered sums a metric family's values in reg.
func gathered(t *testing.T, reg *prometheus.Registry, name string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var sum float64
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			switch {
			case m.Counter != nil:
				sum += m.GetCounter().GetValue()
			case m.Gauge != nil:
				sum += m.GetGauge().GetValue()
			}
		}
	}
	return sum
}

// TestAppStandbyReplicasTakeOverWithoutRestoring: with Standbys: 1, each
// of two instances follows the changelogs of the other's stateful tasks.
// When one stops, the other takes its tasks over and restores only what
// its standbys had not yet applied, far less than the changelogs hold.
func TestAppStandbyReplicasTakeOverWithoutRestoring(t *testing.T) {
	b := brokertest.Start(t)
	seeds := []string{b.Addr()}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cl, want := writeLines(t, ctx, seeds, 4, 4000, func(i int) string { return fmt.Sprintf("w%d x%d", i%500, i%7) })
	adm := kadm.NewClient(cl)

	type inst struct {
		app  *streams.App
		reg  *prometheus.Registry
		stop context.CancelFunc
		done chan error
	}
	start := func(name string) *inst {
		in := &inst{reg: prometheus.NewRegistry(), done: make(chan error, 1)}
		var err error
		in.app, err = streams.NewApp(wordCount(t), streams.Config{ApplicationID: "standby", Brokers: seeds,
			StateDir: t.TempDir(), Standbys: 1, CommitInterval: 50 * time.Millisecond, Metrics: in.reg})
		if err != nil {
			t.Fatal(err)
		}
		var runCtx context.Context
		runCtx, in.stop = context.WithCancel(ctx)
		go func() { in.done <- in.app.Run(runCtx) }()
		return in
	}
	a, c := start("a"), start("c")

	// local reports whether every word is answered by app itself.
	local := func(app *streams.App) (bool, error) {
		for w, n := range want {
			got, ok, err := streams.Get[string, int64](app, "counts", w)
			var nl *streams.NotLocalError
			if errors.As(err, &nl) || errors.Is(err, streams.ErrRestoring) || errors.Is(err, streams.ErrNotRunning) || (err == nil && (!ok || got != n)) {
				return false, nil
			}
			if err != nil {
				return false, err
			}
		}
		return true, nil
	}
	counted := func() bool { // every word counted, by one instance or the other
		for w, n := range want {
			found := false
			for _, in := range []*inst{a, c} {
				got, ok, err := streams.Get[string, int64](in.app, "counts", w)
				found = found || (err == nil && ok && got == n)
			}
			if !found {
				return false
			}
		}
		return true
	}
	waitFor := func(what string, cond func() bool) {
		t.Helper()
		for !cond() {
			select {
			case err := <-a.done:
				t.Fatalf("instance a stopped: %v", err)
			case err := <-c.done:
				t.Fatalf("instance c stopped: %v", err)
			case <-ctx.Done():
				t.Fatalf("%s: not before the deadline", what)
			case <-time.After(20 * time.Millisecond):
			}
		}
	}
	waitFor("every word counted", counted)
	waitFor("both instances' standbys caught up", func() bool {
		return gathered(t, a.reg, "runnel_streams_standby_tasks") > 0 && gathered(t, c.reg, "runnel_streams_standby_tasks") > 0 &&
			gathered(t, a.reg, "runnel_streams_standby_records_total") > 0 && gathered(t, c.reg, "runnel_streams_standby_records_total") > 0
	})
	// The changelog records of a's stateful tasks: what c would restore
	// without standbys.
	var aParts []int32
	if err := streams.QueryStore(a.app, "counts", func(p int32, _ *streams.KeyValueStore[string, int64]) error {
		aParts = append(aParts, p)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	restoredBefore := gathered(t, c.reg, "runnel_streams_restored_records_total")
	a.stop()
	if err := <-a.done; err != nil {
		t.Fatalf("a: %v", err)
	}
	a.done = make(chan error, 1) // stopped on purpose
	ends, err := adm.ListEndOffsets(ctx, "standby-counts-changelog")
	if err != nil {
		t.Fatal(err)
	}
	var cold int64
	for _, p := range aParts {
		o, _ := ends.Lookup("standby-counts-changelog", p)
		cold += o.Offset
	}
	for {
		ok, err := local(c.app)
		if err != nil {
			t.Fatal(err)
		}
		if ok {
			break
		}
		select {
		case err := <-c.done:
			t.Fatalf("c stopped: %v", err)
		case <-ctx.Done():
			t.Fatal("c did not take every task over")
		case <-time.After(20 * time.Millisecond):
		}
	}
	restored := gathered(t, c.reg, "runnel_streams_restored_records_total") - restoredBefore
	t.Logf("a's %d store partitions hold %d changelog records; c restored %.0f of them when it took over", len(aParts), cold, restored)
	if len(aParts) == 0 || cold == 0 {
		t.Fatalf("a had no stateful task (%v) or its changelogs are empty (%d)", aParts, cold)
	}
	if restored > float64(cold)/2 {
		t.Errorf("c restored %.0f of %d records: its standbys did not keep the state warm", restored, cold)
	}
	c.stop()
	if err := <-c.done; err != nil {
		t.Fatalf("c: %v", err)
	}
}
