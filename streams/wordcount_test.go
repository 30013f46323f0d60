package streams_test

import (
	"strings"
	"testing"

	"github.com/runnel-io/runnel/streams"
	"github.com/runnel-io/runnel/streams/streamstest"
)

func wordCount(t *testing.T) *streams.Topology {
	t.Helper()
	b := streams.NewBuilder()
	streams.From[string, string](b, "lines").
		FlatMapValues(func(line string) []string { return strings.Fields(strings.ToLower(line)) }).
		GroupBy(func(_, word string) string { return word }).
		Count(streams.Materialized("counts")).
		ToStream().
		To("word-counts")
	topo, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	return topo
}

func TestWordCount(t *testing.T) {
	d := streamstest.New(t, wordCount(t), streamstest.Config{Partitions: map[string]int32{"lines": 2}})
	in := streamstest.Input[string, string](d, "lines", nil, nil)
	out := streamstest.Output[string, int64](d, "word-counts", nil, nil)
	in.Pipe("a", "the cat and the hat")
	in.Pipe("b", "The end")
	for _, topic := range []string{"lines", "test-app-counts-repartition", "test-app-counts-changelog", "word-counts"} {
		t.Logf("%s: %d records", topic, len(d.Records(topic)))
	}
	got := streamstest.LatestByKey(out.ReadRecords())
	want := map[string]int64{"the": 3, "cat": 1, "and": 1, "hat": 1, "end": 1}
	if len(got) != len(want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("count of %q = %d, want %d", k, got[k], v)
		}
	}
	store := streamstest.KeyValueStore[string, int64](d, "counts")
	if store["the"] != 3 || len(store) != 5 {
		t.Errorf("store = %v", store)
	}
	t.Log("\n" + wordCount(t).Describe())
}
