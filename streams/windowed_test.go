package streams_test

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/runnel-io/runnel/streams"
	"github.com/runnel-io/runnel/streams/serde"
	"github.com/runnel-io/runnel/streams/streamstest"
)

const sec = int64(1000)

// at is a time sec seconds after the epoch.
func at(secs float64) time.Time { return time.UnixMilli(int64(secs * 1000)) }

type win = streams.Windowed[string]

// windowedCount builds events -> group by key -> windows -> count -> "out".
func windowedCount(t *testing.T, w streams.WindowSpec) *streams.Topology {
	t.Helper()
	b := streams.NewBuilder()
	g := streams.From[string, string](b, "events").GroupByKey()
	streams.WindowedBy(g, w).Count(streams.Materialized("counts")).ToStream().To("out")
	topo, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	return topo
}

// updates renders output records as "key@start/end=value" in order.
func updates[V any](recs []streams.Record[win, V]) []string {
	var out []string
	for _, r := range recs {
		if r.Tombstone {
			out = append(out, fmt.Sprintf("%s@%d/%d=<nil>", r.Key.Key, r.Key.Start/sec, r.Key.End/sec))
		} else {
			out = append(out, fmt.Sprintf("%s@%d/%d=%v", r.Key.Key, r.Key.Start/sec, r.Key.End/sec, r.Value))
		}
	}
	return out
}

func wantUpdates(t *testing.T, got, want []string) {
	t.Helper()
	if !slices.Equal(got, want) {
		t.Fatalf("output:\n got  %q\n want %q", got, want)
	}
}

func TestTumblingCountCountsEachKeyPerWindow(t *testing.T) {
	d := streamstest.New(t, windowedCount(t, streams.TumblingWindows(time.Minute)), streamstest.Config{})
	in := streamstest.Input[string, string](d, "events", nil, nil)
	out := streamstest.Output(d, "out", streams.WindowedSerdeOfSize(serde.String, time.Minute), serde.Int64)
	in.PipeAt("a", "x", at(0))
	in.PipeAt("a", "x", at(59.999))
	in.PipeAt("b", "x", at(10))
	in.PipeAt("a", "x", at(60))
	wantUpdates(t, updates(out.ReadRecords()), []string{"a@0/60=1", "a@0/60=2", "b@0/60=1", "a@60/120=1"})

	got := streamstest.WindowStore[string, int64](d, "counts")
	want := map[win]int64{
		{Key: "a", Start: 0, End: 60 * sec}:         2,
		{Key: "b", Start: 0, End: 60 * sec}:         1,
		{Key: "a", Start: 60 * sec, End: 120 * sec}: 1,
	}
	if !maps.Equal(got, want) {
		t.Fatalf("store = %v, want %v", got, want)
	}
	if n := len(d.DroppedRecords()); n != 0 {
		t.Fatalf("dropped %v", d.DroppedRecords())
	}
}

func TestHoppingCountPutsARecordInEveryWindowThatHoldsIt(t *testing.T) {
	d := streamstest.New(t, windowedCount(t, streams.HoppingWindows(10*time.Second, 5*time.Second)), streamstest.Config{})
	in := streamstest.Input[string, string](d, "events", nil, nil)
	out := streamstest.Output(d, "out", streams.WindowedSerdeOfSize(serde.String, 10*time.Second), serde.Int64)
	in.PipeAt("a", "x", at(2))  // [0,10) only: no window starts before 0
	in.PipeAt("a", "x", at(7))  // [0,10) and [5,15)
	in.PipeAt("a", "x", at(15)) // [10,20) and [15,25)
	wantUpdates(t, updates(out.ReadRecords()), []string{
		"a@0/10=1",
		"a@0/10=2", "a@5/15=1",
		"a@10/20=1", "a@15/25=1",
	})
}

func TestWindowedCountDropsRecordsAfterWindowEndPlusGrace(t *testing.T) {
	d := streamstest.New(t, windowedCount(t, streams.TumblingWindows(time.Minute).Grace(10*time.Second)), streamstest.Config{})
	in := streamstest.Input[string, string](d, "events", nil, nil)
	out := streamstest.Output(d, "out", streams.WindowedSerdeOfSize(serde.String, time.Minute), serde.Int64)
	in.PipeAt("a", "x", at(0))
	in.PipeAt("b", "x", at(69.999)) // stream time 69.999: [0,60) is open until 70
	in.PipeAt("a", "x", at(30))     // in grace
	in.PipeAt("b", "x", at(70))     // stream time 70: [0,60) closes
	in.PipeAt("a", "x", at(59))     // late: dropped
	in.PipeAt("a", "x", at(1))      // late: dropped
	wantUpdates(t, updates(out.ReadRecords()), []string{"a@0/60=1", "b@60/120=1", "a@0/60=2", "b@60/120=2"})
	if got := d.DroppedRecords(); !maps.Equal(got, map[string]int{"expired-window": 2}) {
		t.Fatalf("dropped = %v, want 2 expired-window", got)
	}
	if got := streamstest.WindowStore[string, int64](d, "counts")[win{Key: "a", Start: 0, End: 60 * sec}]; got != 2 {
		t.Fatalf("count of a in [0,60) = %d, want 2", got)
	}
}

func TestHoppingCountDropsOnlyTheClosedWindowsOfALateRecord(t *testing.T) {
	d := streamstest.New(t, windowedCount(t, streams.HoppingWindows(10*time.Second, 5*time.Second)), streamstest.Config{})
	in := streamstest.Input[string, string](d, "events", nil, nil)
	out := streamstest.Output(d, "out", streams.WindowedSerdeOfSize(serde.String, 10*time.Second), serde.Int64)
	in.PipeAt("a", "x", at(12)) // stream time 12: [0,10) is closed, [5,15) open
	in.PipeAt("a", "x", at(7))
	wantUpdates(t, updates(out.ReadRecords()), []string{"a@5/15=1", "a@10/20=1", "a@5/15=2"})
	if got := d.DroppedRecords()["expired-window"]; got != 1 {
		t.Fatalf("expired-window drops = %d, want 1 (the one closed window)", got)
	}
}

func TestWindowedCountUpdatesOutOfOrderRecordsWithinGrace(t *testing.T) {
	d := streamstest.New(t, windowedCount(t, streams.TumblingWindows(time.Minute).Grace(time.Minute)), streamstest.Config{})
	in := streamstest.Input[string, string](d, "events", nil, nil)
	out := streamstest.Output(d, "out", streams.WindowedSerdeOfSize(serde.String, time.Minute), serde.Int64)
	in.PipeAt("a", "x", at(150)) // [120,180)
	in.PipeAt("a", "x", at(90))  // [60,120): out of order, in grace
	in.PipeAt("a", "x", at(100))
	in.PipeAt("a", "x", at(10)) // [0,60): closed at 120
	wantUpdates(t, updates(out.ReadRecords()), []string{"a@120/180=1", "a@60/120=1", "a@60/120=2"})
	if got := d.DroppedRecords()["expired-window"]; got != 1 {
		t.Fatalf("expired-window drops = %d, want 1", got)
	}
}

func TestWindowedAggregateSkipsTombstones(t *testing.T) {
	d := streamstest.New(t, windowedCount(t, streams.TumblingWindows(time.Minute)), streamstest.Config{})
	in := streamstest.Input[string, string](d, "events", nil, nil)
	out := streamstest.Output(d, "out", streams.WindowedSerdeOfSize(serde.String, time.Minute), serde.Int64)
	in.PipeAt("a", "x", at(1))
	in.PipeTombstone("a")
	wantUpdates(t, updates(out.ReadRecords()), []string{"a@0/60=1"})
}

func TestWindowedAggregateAndReduceFoldValuesPerWindow(t *testing.T) {
	b := streams.NewBuilder()
	g := streams.From[string, int64](b, "amounts").GroupByKey()
	w := streams.WindowedBy(g, streams.TumblingWindows(time.Minute))
	w.Aggregate(func() string { return "" }, func(_ string, v int64, agg string) string { return agg + fmt.Sprint(v) },
		streams.Materialized("digits"), streams.ValueSerde(serde.String)).ToStream().To("digits")
	w.Reduce(func(agg, v int64) int64 { return max(agg, v) }, streams.Materialized("max")).ToStream().To("max")
	topo, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	d := streamstest.New(t, topo, streamstest.Config{})
	in := streamstest.Input[string, int64](d, "amounts", nil, nil)
	in.PipeAt("a", 3, at(1))
	in.PipeAt("a", 9, at(2))
	in.PipeAt("a", 4, at(3))
	in.PipeAt("a", 5, at(61))
	ks := streams.WindowedSerdeOfSize(serde.String, time.Minute)
	wantUpdates(t, updates(streamstest.Output(d, "digits", ks, serde.String).ReadRecords()),
		[]string{"a@0/60=3", "a@0/60=39", "a@0/60=394", "a@60/120=5"})
	wantUpdates(t, updates(streamstest.Output(d, "max", ks, serde.Int64).ReadRecords()),
		[]string{"a@0/60=3", "a@0/60=9", "a@0/60=9", "a@60/120=5"})
}

func TestWindowedCountUsesTheTimestampExtractor(t *testing.T) {
	b := streams.NewBuilder()
	g := streams.From[string, int64](b, "events",
		streams.TimestampExtractor(func(r streams.Record[string, int64]) int64 { return r.Value })).GroupByKey()
	streams.WindowedBy(g, streams.TumblingWindows(time.Minute)).Count().ToStream().To("out")
	topo, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	d := streamstest.New(t, topo, streamstest.Config{})
	in := streamstest.Input[string, int64](d, "events", nil, nil)
	in.PipeAt("a", 5*sec, at(0)) // event time 5 s, whatever the record's timestamp
	in.PipeAt("a", 61*sec, at(0))
	in.PipeAt("a", 6*sec, at(0)) // late by event time
	out := streamstest.Output(d, "out", streams.WindowedSerdeOfSize(serde.String, time.Minute), serde.Int64)
	wantUpdates(t, updates(out.ReadRecords()), []string{"a@0/60=1", "a@60/120=1"})
}

func TestWindowedCountRepartitionsAfterAKeyChange(t *testing.T) {
	b := streams.NewBuilder()
	g := streams.From[string, string](b, "events").GroupBy(func(_, v string) string { return v })
	streams.WindowedBy(g, streams.TumblingWindows(time.Minute)).Count(streams.Materialized("by-value")).ToStream().To("out")
	topo, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	d := streamstest.New(t, topo, streamstest.Config{Partitions: map[string]int32{"events": 3}})
	in := streamstest.Input[string, string](d, "events", nil, nil)
	for i := range 6 {
		in.PipeAt(fmt.Sprint("k", i), "v", at(float64(i)))
	}
	if n := len(d.Records("test-app-by-value-repartition")); n != 6 {
		t.Fatalf("repartition topic has %d records, want 6", n)
	}
	got := streamstest.WindowStore[string, int64](d, "by-value")
	if got[win{Key: "v", Start: 0, End: 60 * sec}] != 6 || len(got) != 1 {
		t.Fatalf("store = %v", got)
	}
}

func TestWindowSpecsAreValidatedAtBuild(t *testing.T) {
	for name, w := range map[string]streams.WindowSpec{
		"zero size":       streams.TumblingWindows(0),
		"sub-ms size":     streams.TumblingWindows(time.Microsecond),
		"advance > size":  streams.HoppingWindows(time.Second, 2*time.Second),
		"zero advance":    streams.HoppingWindows(time.Second, 0),
		"negative grace":  streams.TumblingWindows(time.Second).Grace(-time.Second),
		"short retention": streams.TumblingWindows(time.Minute).Grace(time.Second), // 1m < 1m1s
	} {
		t.Run(name, func(t *testing.T) {
			b := streams.NewBuilder()
			g := streams.From[string, string](b, "events").GroupByKey()
			streams.WindowedBy(g, w).Count(streams.Retention(time.Minute))
			if _, err := b.Build(); !errors.Is(err, streams.ErrTopology) {
				t.Fatalf("Build = %v, want ErrTopology", err)
			}
		})
	}
	b := streams.NewBuilder()
	g := streams.From[string, string](b, "events").GroupByKey()
	streams.SessionWindowedBy(g, streams.SessionWindows(0)).Count()
	if _, err := b.Build(); !errors.Is(err, streams.ErrTopology) {
		t.Fatalf("session gap 0: Build = %v, want ErrTopology", err)
	}
}
