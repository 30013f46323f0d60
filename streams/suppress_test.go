package streams_test

import (
	"errors"
	"testing"
	"time"

	"github.com/runnel-io/runnel/streams"
	"github.com/runnel-io/runnel/streams/serde"
	"github.com/runnel-io/runnel/streams/streamstest"
)

// suppressedCount writes every update to "updates" and the finals to
// "finals".
func suppressedCount(t *testing.T, w streams.WindowSpec) *streams.Topology {
	t.Helper()
	b := streams.NewBuilder()
	g := streams.From[string, string](b, "events").GroupByKey()
	counts := streams.WindowedBy(g, w).Count(streams.Materialized("counts"))
	counts.ToStream().To("updates")
	counts.Suppress(streams.UntilWindowCloses()).ToStream().To("finals")
	topo, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	return topo
}

func TestSuppressEmitsOneFinalPerWindowOnlyAfterGrace(t *testing.T) {
	d := streamstest.New(t, suppressedCount(t, streams.TumblingWindows(time.Minute).Grace(10*time.Second)), streamstest.Config{})
	in := streamstest.Input[string, string](d, "events", nil, nil)
	finals := streamstest.Output(d, "finals", streams.WindowedSerdeOfSize(serde.String, time.Minute), serde.Int64)
	in.PipeAt("a", "x", at(0))
	in.PipeAt("a", "x", at(20))
	in.PipeAt("b", "x", at(30))
	in.PipeAt("a", "x", at(65)) // [0,60) has ended but is in grace
	in.PipeAt("b", "x", at(55)) // an update in grace
	in.PipeAt("c", "x", at(69.999))
	if got := updates(finals.ReadRecords()); len(got) != 0 {
		t.Fatalf("finals before [0,60) closed: %q", got)
	}
	in.PipeAt("c", "x", at(70)) // stream time 70 = 60 + grace: [0,60) closes
	wantUpdates(t, updates(finals.ReadRecords()), []string{"a@0/60=2", "b@0/60=2"})
	in.PipeAt("a", "x", at(5))   // late: dropped by the count, not a second final
	in.PipeAt("a", "x", at(100)) // more stream time: nothing more to close
	wantUpdates(t, updates(finals.ReadRecords()), nil)
	in.PipeAt("a", "x", at(200)) // closes [60,120)
	wantUpdates(t, updates(finals.ReadRecords()), []string{"a@60/120=2", "c@60/120=2"})
	if got := d.DroppedRecords()["expired-window"]; got != 1 {
		t.Fatalf("expired-window drops = %d, want 1", got)
	}
	if recs := d.Records("finals"); recs[0].Timestamp.UnixMilli() != 20*sec {
		t.Fatalf("a final's timestamp = %d, want its last update's, %d", recs[0].Timestamp.UnixMilli(), 20*sec)
	}
	if n := len(d.Records("test-app-counts-changelog")); n == 0 {
		t.Fatal("the window store wrote no changelog")
	}
}

func TestSuppressEmitsWhenARecordTheCountSkipsMovesStreamTime(t *testing.T) {
	d := streamstest.New(t, suppressedCount(t, streams.TumblingWindows(time.Minute)), streamstest.Config{})
	in := streamstest.Input[string, string](d, "events", nil, nil)
	finals := streamstest.Output(d, "finals", streams.WindowedSerdeOfSize(serde.String, time.Minute), serde.Int64)
	in.PipeAt("a", "x", at(10))
	in.Advance(2 * time.Minute)
	in.PipeTombstone("a") // skipped by the count, but stream time moves to 120
	wantUpdates(t, updates(finals.ReadRecords()), []string{"a@0/60=1"})
}

func TestSuppressSkipsSessionTombstonesAndEmitsTheMergedSession(t *testing.T) {
	b := streams.NewBuilder()
	g := streams.From[string, string](b, "events").GroupByKey()
	streams.SessionWindowedBy(g, streams.SessionWindows(5*time.Second).Grace(5*time.Second)).
		Count().Suppress(streams.UntilWindowCloses(), streams.Named("final-sessions")).ToStream().To("finals")
	topo, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	d := streamstest.New(t, topo, streamstest.Config{})
	in := streamstest.Input[string, string](d, "events", nil, nil)
	finals := streamstest.Output(d, "finals", streams.SessionWindowedSerde(serde.String), serde.Int64)
	in.PipeAt("a", "x", at(0))
	in.PipeAt("a", "x", at(8))
	in.PipeAt("a", "x", at(4)) // merges [0,0] and [8,8]: two tombstones, then [0,8]
	in.PipeAt("b", "x", at(17.999))
	wantUpdates(t, updates(finals.ReadRecords()), nil) // [0,8] closes at 8+5+5 = 18
	in.PipeAt("b", "x", at(18))
	wantUpdates(t, updates(finals.ReadRecords()), []string{"a@0/8=3"})
	if got := d.Records("test-app-final-sessions-store-changelog"); len(got) == 0 {
		t.Fatal("the suppression buffer wrote no changelog")
	}
}

func TestSuppressAfterFilterAndMapValuesKeepsTheWindows(t *testing.T) {
	b := streams.NewBuilder()
	g := streams.From[string, string](b, "events").GroupByKey()
	streams.WindowedBy(g, streams.TumblingWindows(time.Minute)).Count().
		Filter(func(_ streams.Windowed[string], n int64) bool { return n > 1 }).
		MapValues(func(n int64) string { return "n=" + string(rune('0'+n)) }).
		Suppress(streams.UntilWindowCloses()).ToStream().To("finals")
	topo, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	d := streamstest.New(t, topo, streamstest.Config{})
	in := streamstest.Input[string, string](d, "events", nil, nil)
	finals := streamstest.Output(d, "finals", streams.WindowedSerdeOfSize(serde.String, time.Minute), serde.String)
	in.PipeAt("a", "x", at(1))
	in.PipeAt("a", "x", at(2))
	in.PipeAt("b", "x", at(3)) // count 1: filtered out
	in.PipeAt("c", "x", at(60))
	wantUpdates(t, updates(finals.ReadRecords()), []string{"a@0/60=n=2"})
}

func TestSuppressNeedsAWindowedTable(t *testing.T) {
	b := streams.NewBuilder()
	streams.From[string, string](b, "events").GroupByKey().Count().Suppress(streams.UntilWindowCloses())
	if _, err := b.Build(); !errors.Is(err, streams.ErrTopology) {
		t.Fatalf("Build = %v, want ErrTopology", err)
	}
	b = streams.NewBuilder()
	g := streams.From[string, string](b, "events").GroupByKey()
	streams.WindowedBy(g, streams.TumblingWindows(time.Minute)).Count().Suppress(streams.Suppressed{})
	if _, err := b.Build(); !errors.Is(err, streams.ErrTopology) {
		t.Fatalf("Build with an empty Suppressed = %v, want ErrTopology", err)
	}
}
