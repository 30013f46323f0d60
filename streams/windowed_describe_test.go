package streams_test

import (
	"testing"
	"time"

	"github.com/runnel-io/runnel/streams"
)

func TestDescribeShowsWindowedAggregationAndSuppressionLikeKafka(t *testing.T) {
	b := streams.NewBuilder()
	g := streams.From[string, string](b, "events").GroupByKey()
	streams.WindowedBy(g, streams.TumblingWindows(time.Minute)).Count().
		Suppress(streams.UntilWindowCloses()).ToStream().To("finals")
	topo, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	const want = `Topologies:
   Sub-topology: 0
    Source: KSTREAM-SOURCE-0000000000 (topics: [events])
      --> KSTREAM-AGGREGATE-0000000002
    Processor: KSTREAM-AGGREGATE-0000000002 (stores: [KSTREAM-AGGREGATE-STATE-STORE-0000000001])
      --> KTABLE-SUPPRESS-0000000003
      <-- KSTREAM-SOURCE-0000000000
    Processor: KTABLE-SUPPRESS-0000000003 (stores: [KTABLE-SUPPRESS-STATE-STORE-0000000004])
      --> KTABLE-TOSTREAM-0000000005
      <-- KSTREAM-AGGREGATE-0000000002
    Processor: KTABLE-TOSTREAM-0000000005 (stores: [])
      --> KSTREAM-SINK-0000000006
      <-- KTABLE-SUPPRESS-0000000003
    Sink: KSTREAM-SINK-0000000006 (topic: finals)
      <-- KTABLE-TOSTREAM-0000000005

`
	if got := topo.Describe(); got != want {
		t.Fatalf("Describe:\n%s\nwant:\n%s", got, want)
	}
}
