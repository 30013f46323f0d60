package streams_test

import (
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/runnel-io/runnel/streams"
	"github.com/runnel-io/runnel/streams/streamstest"
)

func build(t *testing.T, b *streams.Builder) *streams.Topology {
	t.Helper()
	topo, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	return topo
}

// checkRecords compares key, value, timestamp and tombstone of records.
func checkRecords[K comparable, V comparable](t *testing.T, got []streams.Record[K, V], want ...streams.Record[K, V]) {
	t.Helper()
	type rec struct {
		K  K
		V  V
		TS int64
		TB bool
	}
	var g, w []rec
	for _, r := range got {
		g = append(g, rec{r.Key, r.Value, r.Timestamp, r.Tombstone})
	}
	for _, r := range want {
		w = append(w, rec{r.Key, r.Value, r.Timestamp, r.Tombstone})
	}
	if !reflect.DeepEqual(g, w) {
		t.Errorf("records:\n got  %+v\n want %+v", g, w)
	}
}

func rec[K, V any](k K, v V, ts int64) streams.Record[K, V] {
	return streams.Record[K, V]{Key: k, Value: v, Timestamp: ts}
}

func tombstone[K, V any](k K, ts int64) streams.Record[K, V] {
	return streams.Record[K, V]{Key: k, Timestamp: ts, Tombstone: true}
}

func atMs(ms int64) time.Time { return time.UnixMilli(ms) }

func TestStreamTableJoinEmitsForStreamRecordsWhoseKeyTheTableHolds(t *testing.T) {
	b := streams.NewBuilder()
	customers := streams.TableFrom[string, string](b, "customers", streams.Materialized("customers"))
	streams.From[string, string](b, "orders").
		JoinTable(customers, func(id, order, name string) string { return name + " ordered " + order }).
		To("enriched")
	d := streamstest.New(t, build(t, b), streamstest.Config{})
	orders := streamstest.Input[string, string](d, "orders", nil, nil)
	custIn := streamstest.Input[string, string](d, "customers", nil, nil)
	out := streamstest.Output[string, string](d, "enriched", nil, nil)

	orders.PipeAt("c1", "tea", atMs(1)) // no customer yet: nothing
	custIn.PipeAt("c1", "alice", atMs(2))
	checkRecords(t, out.ReadRecords()) // a table update alone emits nothing
	orders.PipeAt("c1", "cake", atMs(3))
	orders.PipeAt("c2", "jam", atMs(4)) // unknown customer
	custIn.PipeAt("c1", "alice b.", atMs(5))
	orders.PipeAt("c1", "milk", atMs(6))
	custIn.PipeTombstone("c1")
	orders.PipeAt("c1", "salt", atMs(7)) // deleted customer: nothing
	checkRecords(t, out.ReadRecords(),
		rec("c1", "alice ordered cake", 3),
		rec("c1", "alice b. ordered milk", 6))
}

func TestStreamTableLeftJoinKeepsRecordsWithoutTableValue(t *testing.T) {
	b := streams.NewBuilder()
	customers := streams.TableFrom[string, string](b, "customers")
	streams.From[string, string](b, "orders").
		LeftJoinTable(customers, func(id, order, name string, ok bool) string {
			if !ok {
				name = "<unknown>"
			}
			return name + ":" + order
		}).
		To("enriched")
	d := streamstest.New(t, build(t, b), streamstest.Config{})
	orders := streamstest.Input[string, string](d, "orders", nil, nil)
	custIn := streamstest.Input[string, string](d, "customers", nil, nil)
	out := streamstest.Output[string, string](d, "enriched", nil, nil)

	orders.PipeAt("c1", "tea", atMs(1))
	custIn.PipeAt("c1", "alice", atMs(2))
	orders.PipeAt("c1", "cake", atMs(3))
	custIn.PipeTombstone("c1")
	orders.PipeAt("c1", "salt", atMs(4))
	orders.PipeTombstone("c1") // a stream tombstone joins nothing
	checkRecords(t, out.ReadRecords(),
		rec("c1", "<unknown>:tea", 1),
		rec("c1", "alice:cake", 3),
		rec("c1", "<unknown>:salt", 4))
}

func TestStreamTableJoinRepartitionsAStreamWhoseKeyChanged(t *testing.T) {
	b := streams.NewBuilder()
	customers := streams.TableFrom[string, string](b, "customers")
	// Orders are keyed by order id; the value is the customer id.
	streams.From[string, string](b, "orders").
		SelectKey(func(_, customer string) string { return customer }, streams.Named("by-customer")).
		JoinTable(customers, func(customer, _, name string) string { return name }).
		To("names")
	topo := build(t, b)
	parts := map[string]int32{"orders": 3, "customers": 2, "names": 1}
	d := streamstest.New(t, topo, streamstest.Config{Partitions: parts})
	custIn := streamstest.Input[string, string](d, "customers", nil, nil)
	orders := streamstest.Input[string, string](d, "orders", nil, nil)
	out := streamstest.Output[string, string](d, "names", nil, nil)

	want := map[string]string{}
	for i := range 10 {
		c := fmt.Sprintf("c%d", i)
		custIn.PipeAt(c, "name-"+c, atMs(int64(i)))
		want[c] = "name-" + c
	}
	for i := range 10 {
		orders.PipeAt(fmt.Sprintf("o%d", i), fmt.Sprintf("c%d", i), atMs(100))
	}
	got := streamstest.LatestByKey(out.ReadRecords())
	if !reflect.DeepEqual(got, want) {
		t.Errorf("joined %v, want %v", got, want)
	}
	// The repartition topic takes the table's partition count, not the
	// orders topic's.
	topic := "test-app-by-customer-repartition"
	seen := map[int32]bool{}
	for _, r := range d.Records(topic) {
		seen[r.Partition] = true
		if r.Partition >= 2 {
			t.Errorf("%s: record in partition %d, want < 2", topic, r.Partition)
		}
	}
	if len(d.Records(topic)) != 10 || len(seen) != 2 {
		t.Errorf("%s: %d records in partitions %v, want 10 in both of 2", topic, len(d.Records(topic)), seen)
	}
}

func TestStreamTableJoinReadsATableDerivedFromTheSameStream(t *testing.T) {
	// Each purchase meets the count of purchases so far, its own included:
	// the count's store and the join run in one task.
	b := streams.NewBuilder()
	purchases := streams.From[string, string](b, "purchases")
	counts := purchases.GroupByKey().Count(streams.Materialized("counts"))
	purchases.JoinTable(counts, func(_, item string, n int64) string { return fmt.Sprintf("%s#%d", item, n) }).To("out")
	d := streamstest.New(t, build(t, b), streamstest.Config{})
	in := streamstest.Input[string, string](d, "purchases", nil, nil)
	out := streamstest.Output[string, string](d, "out", nil, nil)
	in.PipeAt("u", "a", atMs(1))
	in.PipeAt("u", "b", atMs(2))
	checkRecords(t, out.ReadRecords(), rec("u", "a#1", 1), rec("u", "b#2", 2))
}
