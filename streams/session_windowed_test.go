package streams_test

import (
	"maps"
	"testing"
	"time"

	"github.com/runnel-io/runnel/streams"
	"github.com/runnel-io/runnel/streams/serde"
	"github.com/runnel-io/runnel/streams/streamstest"
)

func sessionCount(t *testing.T, s streams.SessionWindowSpec) *streams.Topology {
	t.Helper()
	b := streams.NewBuilder()
	g := streams.From[string, string](b, "events").GroupByKey()
	streams.SessionWindowedBy(g, s).Count(streams.Materialized("sessions")).ToStream().To("out")
	topo, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	return topo
}

func TestSessionWindowsMergeRecordsWithinTheGapAndSplitThoseBeyond(t *testing.T) {
	// Grace keeps sessions open for the out-of-order records that bridge them.
	d := streamstest.New(t, sessionCount(t, streams.SessionWindows(5*time.Second).Grace(time.Minute)), streamstest.Config{})
	in := streamstest.Input[string, string](d, "events", nil, nil)
	out := streamstest.Output(d, "out", streams.SessionWindowedSerde(serde.String), serde.Int64)
	in.PipeAt("a", "x", at(0))
	in.PipeAt("a", "x", at(3))  // within the gap: extends [0,0] to [0,3]
	in.PipeAt("a", "x", at(20)) // beyond it: a session of its own
	in.PipeAt("b", "x", at(2))  // another key
	wantUpdates(t, updates(out.ReadRecords()), []string{
		"a@0/0=1",
		"a@0/0=<nil>", "a@0/3=2",
		"a@20/20=1",
		"b@2/2=1",
	})
	in.PipeAt("a", "x", at(11)) // 11-3 > 5 and 20-11 > 5: a third session
	in.PipeAt("a", "x", at(7))  // bridges [0,3] and [11,11]
	wantUpdates(t, updates(out.ReadRecords()), []string{
		"a@11/11=1",
		"a@0/3=<nil>", "a@11/11=<nil>", "a@0/11=4",
	})
	got := streamstest.SessionStore[string, int64](d, "sessions", "a", "b")
	want := map[win]int64{
		{Key: "a", Start: 0, End: 11 * sec}:        4,
		{Key: "a", Start: 20 * sec, End: 20 * sec}: 1,
		{Key: "b", Start: 2 * sec, End: 2 * sec}:   1,
	}
	if !maps.Equal(got, want) {
		t.Fatalf("store = %v, want %v", got, want)
	}
	// Session records carry the session's end as timestamp, as Kafka's.
	recs := d.Records("out")
	if last := recs[len(recs)-1]; last.Timestamp.UnixMilli() != 11*sec {
		t.Fatalf("timestamp of the merged session's record = %d, want its end %d", last.Timestamp.UnixMilli(), 11*sec)
	}
}

func TestSessionWindowsDropRecordsWhoseSessionHasClosed(t *testing.T) {
	d := streamstest.New(t, sessionCount(t, streams.SessionWindows(5*time.Second).Grace(2*time.Second)), streamstest.Config{})
	in := streamstest.Input[string, string](d, "events", nil, nil)
	out := streamstest.Output(d, "out", streams.SessionWindowedSerde(serde.String), serde.Int64)
	in.PipeAt("a", "x", at(0))
	in.PipeAt("b", "x", at(6.999)) // [0,0] closes at 0+5+2 = 7
	in.PipeAt("a", "x", at(1))     // still open: merges
	in.PipeAt("b", "x", at(8))     // stream time 8: [0,1] closes at 8
	in.PipeAt("a", "x", at(0.5))   // falls in a closed session: dropped
	in.PipeAt("a", "x", at(0.9))   // the same
	wantUpdates(t, updates(out.ReadRecords()), []string{
		"a@0/0=1", "b@6/6=1", "a@0/0=<nil>", "a@0/1=2", "b@6/6=<nil>", "b@6/8=2",
	})
	if got := d.DroppedRecords(); !maps.Equal(got, map[string]int{"expired-window": 2}) {
		t.Fatalf("dropped = %v, want 2 expired-window", got)
	}
}

func TestSessionAggregateMergesAggregatesWithTheMerger(t *testing.T) {
	b := streams.NewBuilder()
	g := streams.From[string, string](b, "events").GroupByKey()
	s := streams.SessionWindowedBy(g, streams.SessionWindows(5*time.Second).Grace(time.Minute))
	s.Aggregate(func() string { return "" },
		func(_ string, v string, agg string) string { return agg + v },
		func(_ string, a, b string) string { return a + "+" + b },
		streams.ValueSerde(serde.String)).ToStream().To("joined")
	s.Reduce(func(agg, v string) string { return agg + v }, streams.Materialized("reduced")).ToStream().To("reduced")
	topo, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	d := streamstest.New(t, topo, streamstest.Config{})
	in := streamstest.Input[string, string](d, "events", nil, nil)
	in.PipeAt("a", "x", at(0))
	in.PipeAt("a", "y", at(10))
	in.PipeAt("a", "z", at(5)) // merges [0,0] "x" and [10,10] "y"
	ks := streams.SessionWindowedSerde(serde.String)
	wantUpdates(t, updates(streamstest.Output(d, "joined", ks, serde.String).ReadRecords()), []string{
		"a@0/0=x", "a@10/10=y", "a@0/0=<nil>", "a@10/10=<nil>", "a@0/10=+x+yz",
	})
	wantUpdates(t, updates(streamstest.Output(d, "reduced", ks, serde.String).ReadRecords()), []string{
		"a@0/0=x", "a@10/10=y", "a@0/0=<nil>", "a@10/10=<nil>", "a@0/10=xyz",
	})
}

func TestSessionCountSkipsTombstones(t *testing.T) {
	d := streamstest.New(t, sessionCount(t, streams.SessionWindows(5*time.Second)), streamstest.Config{})
	in := streamstest.Input[string, string](d, "events", nil, nil)
	out := streamstest.Output(d, "out", streams.SessionWindowedSerde(serde.String), serde.Int64)
	in.PipeAt("a", "x", at(0))
	in.PipeTombstone("a")
	wantUpdates(t, updates(out.ReadRecords()), []string{"a@0/0=1"})
}

func TestSessionWindowsDoNotMergeIntoAClosedSession(t *testing.T) {
	d := streamstest.New(t, sessionCount(t, streams.SessionWindows(5*time.Second)), streamstest.Config{})
	in := streamstest.Input[string, string](d, "events", nil, nil)
	out := streamstest.Output(d, "out", streams.SessionWindowedSerde(serde.String), serde.Int64)
	in.PipeAt("a", "x", at(0))
	in.PipeAt("a", "x", at(9))   // stream time 9: [0,0] closed at 5
	in.PipeAt("a", "x", at(4.5)) // within the gap of both, but [0,0] is final
	wantUpdates(t, updates(out.ReadRecords()), []string{
		"a@0/0=1", "a@9/9=1", "a@9/9=<nil>", "a@4/9=2",
	})
	if n := len(d.DroppedRecords()); n != 0 {
		t.Fatalf("dropped %v", d.DroppedRecords())
	}
}
