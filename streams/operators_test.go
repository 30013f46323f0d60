package streams_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/runnel-io/runnel/streams"
	"github.com/runnel-io/runnel/streams/serde"
	"github.com/runnel-io/runnel/streams/streamstest"
)

func keyValues[K, V any](o *streamstest.OutputTopic[K, V]) []string {
	var out []string
	for _, kv := range o.ReadKeyValues() {
		out = append(out, fmt.Sprintf("%v=%v", kv.Key, kv.Value))
	}
	return out
}

func wantKVs(t *testing.T, what string, got []string, want ...string) {
	t.Helper()
	if !slices.Equal(got, want) {
		t.Errorf("%s = %q, want %q", what, got, want)
	}
}

func TestStatelessOperators(t *testing.T) {
	b := streams.NewBuilder()
	var peeked, each []string
	src := streams.From[string, int64](b, "in")
	src.Filter(func(_ string, v int64) bool { return v%2 == 0 }).To("even")
	src.FilterNot(func(_ string, v int64) bool { return v%2 == 0 }).To("odd")
	streams.Stream[string, int64].Map(src, func(k string, v int64) (int64, string) { return v, k }).To("swapped")
	src.MapValues(func(v int64) string { return strings.Repeat("*", int(v)) }).To("stars")
	src.FlatMap(func(k string, v int64) []streams.KeyValue[string, int64] {
		return []streams.KeyValue[string, int64]{streams.KV(k+"-a", v), streams.KV(k+"-b", -v)}
	}).To("pairs")
	src.FlatMapValues(func(v int64) []int64 { return make([]int64, v) }).To("zeros")
	src.SelectKey(func(k string, v int64) string { return fmt.Sprintf("%s%d", k, v) }).
		Peek(func(k string, _ int64) { peeked = append(peeked, k) }).
		To("rekeyed")
	src.Foreach(func(k string, v int64) { each = append(each, fmt.Sprintf("%s:%d", k, v)) })

	d := streamstest.New(t, build(t, b), streamstest.Config{})
	in := streamstest.Input[string, int64](d, "in", nil, nil)
	in.Pipe("a", 1)
	in.Pipe("b", 2)
	in.Pipe("c", 3)

	wantKVs(t, "even", keyValues(streamstest.Output[string, int64](d, "even", nil, nil)), "b=2")
	wantKVs(t, "odd", keyValues(streamstest.Output[string, int64](d, "odd", nil, nil)), "a=1", "c=3")
	wantKVs(t, "swapped", keyValues(streamstest.Output[int64, string](d, "swapped", nil, nil)), "1=a", "2=b", "3=c")
	wantKVs(t, "stars", keyValues(streamstest.Output[string, string](d, "stars", nil, nil)), "a=*", "b=**", "c=***")
	wantKVs(t, "pairs", keyValues(streamstest.Output[string, int64](d, "pairs", nil, nil)), "a-a=1", "a-b=-1", "b-a=2", "b-b=-2", "c-a=3", "c-b=-3")
	wantKVs(t, "zeros", keyValues(streamstest.Output[string, int64](d, "zeros", nil, nil)), "a=0", "b=0", "b=0", "c=0", "c=0", "c=0")
	wantKVs(t, "rekeyed", keyValues(streamstest.Output[string, int64](d, "rekeyed", nil, nil)), "a1=1", "b2=2", "c3=3")
	wantKVs(t, "peeked", peeked, "a1", "b2", "c3")
	wantKVs(t, "foreach", each, "a:1", "b:2", "c:3")
}

func TestBranchSendsEachRecordToItsFirstMatch(t *testing.T) {
	b := streams.NewBuilder()
	br := streams.From[string, int64](b, "in").Branch(
		func(_ string, v int64) bool { return v < 0 },
		func(_ string, v int64) bool { return v < 10 },
		func(_ string, v int64) bool { return v < 100 },
	)
	br[0].To("negative")
	br[1].To("small")
	br[2].To("medium")
	d := streamstest.New(t, build(t, b), streamstest.Config{})
	in := streamstest.Input[string, int64](d, "in", nil, nil)
	for i, v := range []int64{-5, 5, 50, 500, -1} {
		in.Pipe(fmt.Sprint(i), v)
	}
	wantKVs(t, "negative", keyValues(streamstest.Output[string, int64](d, "negative", nil, nil)), "0=-5", "4=-1")
	wantKVs(t, "small", keyValues(streamstest.Output[string, int64](d, "small", nil, nil)), "1=5")
	wantKVs(t, "medium", keyValues(streamstest.Output[string, int64](d, "medium", nil, nil)), "2=50")
}

func TestMergeAndToFunc(t *testing.T) {
	b := streams.NewBuilder()
	x := streams.From[string, string](b, "x")
	y := streams.From[string, string](b, "y")
	z := streams.From[string, string](b, "z")
	x.Merge([]streams.Stream[string, string]{y, z}).
		ToFunc(func(k, _ string) string { return "out-" + k })
	d := streamstest.New(t, build(t, b), streamstest.Config{})
	streamstest.Input[string, string](d, "x", nil, nil).Pipe("a", "from x")
	streamstest.Input[string, string](d, "y", nil, nil).Pipe("b", "from y")
	streamstest.Input[string, string](d, "z", nil, nil).Pipe("a", "from z")
	wantKVs(t, "out-a", keyValues(streamstest.Output[string, string](d, "out-a", nil, nil)), "a=from x", "a=from z")
	wantKVs(t, "out-b", keyValues(streamstest.Output[string, string](d, "out-b", nil, nil)), "b=from y")
}

// TestRepartitionPartitionsByNewKey: after SelectKey, Repartition writes
// through "<app>-<name>-repartition" with the partition count asked for,
// each record in its new key's partition, and reads it back.
func TestRepartitionPartitionsByNewKey(t *testing.T) {
	b := streams.NewBuilder()
	streams.From[string, string](b, "in").
		SelectKey(func(_, v string) string { return v }).
		Repartition(streams.Named("by-value"), streams.Partitions(3)).
		To("out")
	topo := build(t, b)
	d := streamstest.New(t, topo, streamstest.Config{Partitions: map[string]int32{"test-app-by-value-repartition": 3}})
	in := streamstest.Input[string, string](d, "in", nil, nil)
	for i := range 30 {
		in.Pipe(fmt.Sprint(i), fmt.Sprintf("v%d", i%6))
	}
	parts := map[string]int32{}
	for _, r := range d.Records("test-app-by-value-repartition") {
		if p, ok := parts[string(r.Key)]; ok && p != r.Partition {
			t.Errorf("key %s in partitions %d and %d", r.Key, p, r.Partition)
		}
		parts[string(r.Key)] = r.Partition
	}
	used := map[int32]bool{}
	for _, p := range parts {
		used[p] = true
	}
	if len(parts) != 6 || len(used) < 2 {
		t.Errorf("keys by partition %v: want 6 keys spread over the 3 partitions", parts)
	}
	if got := len(streamstest.Output[string, string](d, "out", nil, nil).ReadRecords()); got != 30 {
		t.Errorf("out has %d records, want 30", got)
	}
	if desc := topo.Describe(); !strings.Contains(desc, "by-value-repartition") {
		t.Errorf("Describe lacks the repartition topic:\n%s", desc)
	}
}

func TestReduceAndAggregate(t *testing.T) {
	type stats struct{ N, Sum, Max int64 }
	b := streams.NewBuilder()
	src := streams.From[string, int64](b, "in")
	src.GroupByKey().Reduce(func(a, v int64) int64 { return a + v }, streams.Materialized("sums")).ToStream().To("sums")
	src.GroupBy(func(k string, _ int64) string { return k[:1] }, streams.Named("by-letter")).
		Aggregate(func() stats { return stats{} }, func(_ string, v int64, a stats) stats {
			return stats{N: a.N + 1, Sum: a.Sum + v, Max: max(a.Max, v)}
		}, streams.Materialized("stats")).
		ToStream().To("stats")
	d := streamstest.New(t, build(t, b), streamstest.Config{})
	in := streamstest.Input[string, int64](d, "in", nil, nil)
	in.Pipe("a1", 5)
	in.Pipe("a2", 7)
	in.Pipe("a1", 1)
	in.PipeTombstone("a1") // skipped by aggregations, as in Kafka Streams
	in.Pipe("b1", 3)
	wantKVs(t, "sums", keyValues(streamstest.Output[string, int64](d, "sums", nil, nil)), "a1=5", "a2=7", "a1=6", "b1=3")
	got := streamstest.KeyValueStore[string, stats](d, "stats")
	if got["a"] != (stats{3, 13, 7}) || got["b"] != (stats{1, 3, 3}) || len(got) != 2 {
		t.Errorf("stats store = %v", got)
	}
	if n := len(d.Records("test-app-by-letter-repartition")); n != 5 {
		t.Errorf("repartition topic has %d records, want 5 (tombstones go through)", n)
	}
}

// TestTableOpsWithTombstones: a table read from a topic, filtered and
// mapped: updates flow through, a tombstone deletes the key in the store
// and downstream, and an update that no longer passes the filter becomes
// a deletion downstream.
func TestTableOpsWithTombstones(t *testing.T) {
	b := streams.NewBuilder()
	tbl := streams.TableFrom[string, int64](b, "prices", streams.Materialized("prices-store"))
	tbl.Filter(func(_ string, v int64) bool { return v >= 10 }).
		MapValues(func(v int64) string { return fmt.Sprintf("$%d", v) }).
		ToStream().To("expensive")
	d := streamstest.New(t, build(t, b), streamstest.Config{})
	in := streamstest.Input[string, int64](d, "prices", nil, nil)
	in.Pipe("apple", 12)
	in.Pipe("pear", 3)   // filtered out: nothing downstream knew of it
	in.Pipe("apple", 15) // update
	in.Pipe("apple", 4)  // no longer passes: a deletion downstream
	in.Pipe("plum", 20)
	in.PipeTombstone("plum")
	in.PipeTombstone("kiwi") // deleting an absent key changes nothing

	var got []string
	for _, r := range streamstest.Output[string, string](d, "expensive", nil, nil).ReadRecords() {
		if r.Tombstone {
			got = append(got, r.Key+"=<deleted>")
		} else {
			got = append(got, r.Key+"="+r.Value)
		}
	}
	wantKVs(t, "expensive", got, "apple=$12", "apple=$15", "apple=<deleted>", "plum=$20", "plum=<deleted>")
	store := streamstest.KeyValueStore[string, int64](d, "prices-store")
	if len(store) != 2 || store["apple"] != 4 || store["pear"] != 3 {
		t.Errorf("store = %v, want apple=4 pear=3", store)
	}
	// The changelog holds the deletion as a tombstone.
	var tomb bool
	for _, r := range d.Records("test-app-prices-store-changelog") {
		tomb = tomb || (string(r.Key) == "plum" && r.Value == nil)
	}
	if !tomb {
		t.Error("changelog lacks plum's tombstone")
	}
}

// sessionTimer is a processor-API example: it counts records per key in a
// store and, on punctuation, emits and clears the counts.
type sessionTimer struct {
	ctx   *streams.ProcessorContext[string, string]
	store *streams.KeyValueStore[string, int64]
	fired []string
}

func (p *sessionTimer) Init(ctx *streams.ProcessorContext[string, string]) error {
	p.ctx = ctx
	var err error
	if p.store, err = streams.GetKeyValueStore[string, int64](ctx, "pending"); err != nil {
		return err
	}
	ctx.Schedule(10*time.Second, streams.WallClockTime, func(ts int64) error { return p.flush("wall", ts) })
	ctx.Schedule(time.Minute, streams.StreamTime, func(ts int64) error { return p.flush("stream", ts) })
	return nil
}

func (p *sessionTimer) Process(r streams.Record[string, string]) error {
	n, _, err := p.store.Get(r.Key)
	if err != nil {
		return err
	}
	return p.store.Put(r.Key, n+1)
}

func (p *sessionTimer) flush(clock string, ts int64) error {
	p.fired = append(p.fired, fmt.Sprintf("%s@%d", clock, ts))
	var keys []string
	for kv, err := range p.store.All() {
		if err != nil {
			return err
		}
		keys = append(keys, kv.Key)
		if err := p.ctx.Forward(streams.Record[string, string]{Key: kv.Key, Value: fmt.Sprintf("%s:%d", clock, kv.Value), Timestamp: ts}); err != nil {
			return err
		}
	}
	for _, k := range keys {
		if err := p.store.Delete(k); err != nil {
			return err
		}
	}
	return nil
}

func (p *sessionTimer) Close() error { return nil }

func TestProcessorStoresAndPunctuation(t *testing.T) {
	b := streams.NewBuilder()
	b.AddStore(streams.NewKeyValueStore[string, int64](b, "pending"))
	var proc *sessionTimer
	streams.From[string, string](b, "clicks").
		Process(func() streams.Processor[string, string, string, string] {
			proc = &sessionTimer{}
			return proc
		}, streams.ConnectStores("pending")).
		To("flushed")
	d := streamstest.New(t, build(t, b), streamstest.Config{})
	in := streamstest.Input[string, string](d, "clicks", nil, nil)
	out := streamstest.Output[string, string](d, "flushed", nil, nil)

	// The first record fires the stream-time punctuation after it is
	// processed, as in Kafka Streams.
	in.PipeAt("u1", "x", time.UnixMilli(1_000))
	wantKVs(t, "first record", keyValues(out), "u1=stream:1")
	in.PipeAt("u1", "x", time.UnixMilli(2_000))
	in.PipeAt("u2", "x", time.UnixMilli(3_000))
	wantKVs(t, "before the clocks move on", keyValues(out))
	d.AdvanceWallClock(9 * time.Second)
	wantKVs(t, "wall clock short of 10 s", keyValues(out))
	d.AdvanceWallClock(time.Second)
	wantKVs(t, "at 10 s of wall clock", keyValues(out), "u1=wall:1", "u2=wall:1")
	in.PipeAt("u3", "x", time.UnixMilli(30_000))
	in.PipeAt("u3", "x", time.UnixMilli(61_000)) // stream time passes 1 s + 1 min
	wantKVs(t, "after a minute of stream time", keyValues(out), "u3=stream:2")
	if !slices.Equal(proc.fired, []string{"stream@1000", "wall@10000", "stream@61000"}) {
		t.Errorf("punctuations = %v", proc.fired)
	}
	if store := streamstest.KeyValueStore[string, int64](d, "pending"); len(store) != 0 {
		t.Errorf("store after flush = %v", store)
	}
}

func TestBadRecordHandlersOnTheDriver(t *testing.T) {
	topo := func() *streams.Topology {
		b := streams.NewBuilder()
		streams.From[string, int64](b, "in").To("out")
		return build(t, b)
	}
	good, _ := serde.Int64.Encode(nil, 7)

	d := streamstest.New(t, topo(), streamstest.Config{})
	in := streamstest.Input[string, int64](d, "in", nil, nil)
	if err := in.PipeRaw([]byte("k"), []byte("not8"), time.UnixMilli(1)); err == nil || !strings.Contains(err.Error(), "offset 0") {
		t.Errorf("fail handler: %v, want an error naming the record", err)
	}

	d = streamstest.New(t, topo(), streamstest.Config{OnBadRecord: streams.DeadLetterTopic("dlq")})
	in = streamstest.Input[string, int64](d, "in", nil, nil)
	if err := in.PipeRaw([]byte("k"), []byte("not8"), time.UnixMilli(1)); err != nil {
		t.Fatal(err)
	}
	if err := in.PipeRaw([]byte("k"), good, time.UnixMilli(2)); err != nil {
		t.Fatal(err)
	}
	if dl := d.Records("dlq"); len(dl) != 1 || string(dl[0].Value) != "not8" {
		t.Errorf("dead letters = %v", dl)
	}
	wantKVs(t, "out", keyValues(streamstest.Output[string, int64](d, "out", nil, nil)), "k=7")
}
