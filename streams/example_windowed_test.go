package streams_test

import (
	"fmt"
	"time"

	"github.com/runnel-io/runnel/streams"
	"github.com/runnel-io/runnel/streams/serde"
	"github.com/runnel-io/runnel/streams/streamstest"
)

// Clicks per user and minute, updated with every click.
func ExampleWindowedBy() {
	b := streams.NewBuilder()
	clicks := streams.From[string, string](b, "clicks").GroupByKey()
	streams.WindowedBy(clicks, streams.TumblingWindows(time.Minute).Grace(30*time.Second)).
		Count(streams.Materialized("clicks-per-minute")).
		ToStream().
		To("clicks-per-minute") // keys in Kafka's TimeWindowedSerde format
	topo, err := b.Build()
	if err != nil {
		panic(err)
	}

	d := streamstest.New(exampleTB{}, topo, streamstest.Config{})
	defer d.Close()
	in := streamstest.Input[string, string](d, "clicks", nil, nil)
	in.PipeAt("ann", "/home", time.UnixMilli(5_000))
	in.PipeAt("ann", "/cart", time.UnixMilli(61_000))
	in.PipeAt("ann", "/home", time.UnixMilli(50_000)) // late, but within grace
	in.PipeAt("bob", "/home", time.UnixMilli(95_000))
	in.PipeAt("ann", "/help", time.UnixMilli(30_000)) // too late: [0,60) closed at 90 s
	out := streamstest.Output(d, "clicks-per-minute", streams.WindowedSerdeOfSize(serde.String, time.Minute), serde.Int64)
	for _, kv := range out.ReadKeyValues() {
		fmt.Println(kv.Key, kv.Value)
	}
	fmt.Println("dropped:", d.DroppedRecords())
	// Output:
	// [ann@0/60000] 1
	// [ann@60000/120000] 1
	// [ann@0/60000] 2
	// [bob@60000/120000] 1
	// dropped: map[expired-window:1]
}

// One final count per user and minute, once the minute can change no more.
func ExampleTable_Suppress() {
	b := streams.NewBuilder()
	clicks := streams.From[string, string](b, "clicks").GroupByKey()
	streams.WindowedBy(clicks, streams.TumblingWindows(time.Minute).Grace(10*time.Second)).
		Count().
		Suppress(streams.UntilWindowCloses()).
		ToStream().
		To("final-clicks-per-minute")
	topo, err := b.Build()
	if err != nil {
		panic(err)
	}

	d := streamstest.New(exampleTB{}, topo, streamstest.Config{})
	defer d.Close()
	in := streamstest.Input[string, string](d, "clicks", nil, nil)
	out := streamstest.Output(d, "final-clicks-per-minute", streams.WindowedSerdeOfSize(serde.String, time.Minute), serde.Int64)
	for _, secs := range []int64{1, 20, 40, 65} {
		in.PipeAt("ann", "/home", time.UnixMilli(secs*1000))
	}
	fmt.Println("at 65 s:", out.ReadKeyValues())
	in.PipeAt("ann", "/home", time.UnixMilli(70_000)) // stream time 70 s = end + grace
	fmt.Println("at 70 s:", out.ReadKeyValues())
	// Output:
	// at 65 s: []
	// at 70 s: [{[ann@0/60000] 3}]
}

// Visits: clicks less than five minutes apart are one session.
func ExampleSessionWindowedBy() {
	b := streams.NewBuilder()
	clicks := streams.From[string, string](b, "clicks").GroupByKey()
	streams.SessionWindowedBy(clicks, streams.SessionWindows(5*time.Minute).Grace(time.Hour)).
		Count(streams.Materialized("visits")).
		ToStream().
		To("visits") // keys in Kafka's SessionWindowedSerde format
	topo, err := b.Build()
	if err != nil {
		panic(err)
	}

	d := streamstest.New(exampleTB{}, topo, streamstest.Config{})
	defer d.Close()
	in := streamstest.Input[string, string](d, "clicks", nil, nil)
	minute := func(m int64) time.Time { return time.UnixMilli(m * 60_000) }
	in.PipeAt("ann", "/home", minute(0))
	in.PipeAt("ann", "/cart", minute(8)) // more than 5 minutes later: a new session
	in.PipeAt("ann", "/help", minute(4)) // bridges the two: they merge
	out := streamstest.Output(d, "visits", streams.SessionWindowedSerde(serde.String), serde.Int64)
	for _, r := range out.ReadRecords() {
		if r.Tombstone {
			fmt.Println(r.Key, "deleted")
		} else {
			fmt.Println(r.Key, r.Value)
		}
	}
	fmt.Println(streamstest.SessionStore[string, int64](d, "visits", "ann"))
	// Output:
	// [ann@0/0] 1
	// [ann@480000/480000] 1
	// [ann@0/0] deleted
	// [ann@480000/480000] deleted
	// [ann@0/480000] 3
	// map[[ann@0/480000]:3]
}

// A time-windowed key is the key's bytes and the window start; a session
// key adds the end before the start.
func ExampleWindowedSerde() {
	w := streams.Windowed[string]{Key: "ann", Start: 60_000, End: 120_000}
	timed, _ := streams.WindowedSerde(serde.String).Encode(nil, w)
	session, _ := streams.SessionWindowedSerde(serde.String).Encode(nil, w)
	fmt.Printf("%q\n%q\n", timed, session)
	back, _ := streams.WindowedSerdeOfSize(serde.String, time.Minute).Decode(timed)
	fmt.Println(back)
	// Output:
	// "ann\x00\x00\x00\x00\x00\x00\xea`"
	// "ann\x00\x00\x00\x00\x00\x01\xd4\xc0\x00\x00\x00\x00\x00\x00\xea`"
	// [ann@60000/120000]
}
