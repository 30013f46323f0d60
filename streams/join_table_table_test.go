package streams_test

import (
	"reflect"
	"testing"

	"github.com/runnel-io/runnel/streams"
	"github.com/runnel-io/runnel/streams/streamstest"
)

// tableJoinDriver builds left and right tables joined by join, the result
// written to "out", and returns the inputs and the output.
func tableJoinDriver(t *testing.T, join func(l, r streams.Table[string, string]) streams.Table[string, string]) (*streamstest.Driver, *streamstest.InputTopic[string, string], *streamstest.InputTopic[string, string], *streamstest.OutputTopic[string, string]) {
	t.Helper()
	b := streams.NewBuilder()
	l := streams.TableFrom[string, string](b, "left")
	r := streams.TableFrom[string, string](b, "right")
	join(l, r).ToStream().To("out")
	d := streamstest.New(t, build(t, b), streamstest.Config{})
	return d, streamstest.Input[string, string](d, "left", nil, nil),
		streamstest.Input[string, string](d, "right", nil, nil),
		streamstest.Output[string, string](d, "out", nil, nil)
}

// deleteAt pipes a tombstone for k at ms.
func deleteAt[K, V any](t *testing.T, in *streamstest.InputTopic[K, V], k K, ms int64) {
	t.Helper()
	if err := in.TryPipe(streams.Record[K, V]{Key: k, Tombstone: true, Timestamp: ms}); err != nil {
		t.Fatal(err)
	}
}

func opt(v string, ok bool) string {
	if !ok {
		return "-"
	}
	return v
}

func TestTableTableJoinUpdatesFromBothSidesAndDeletesWhenOneSideGoes(t *testing.T) {
	_, left, right, out := tableJoinDriver(t, func(l, r streams.Table[string, string]) streams.Table[string, string] {
		return l.Join(r, func(a, b string) string { return a + "/" + b })
	})
	left.PipeAt("k", "a1", atMs(1)) // right side missing: nothing
	right.PipeAt("k", "b1", atMs(2))
	left.PipeAt("k", "a2", atMs(3))
	right.PipeAt("k", "b2", atMs(4))
	deleteAt(t, right, "k", 5)
	left.PipeAt("k", "a3", atMs(6)) // right side gone: nothing
	deleteAt(t, left, "k", 7)       // no result to delete: nothing
	checkRecords(t, out.ReadRecords(),
		rec("k", "a1/b1", 2),
		rec("k", "a2/b1", 3),
		rec("k", "a2/b2", 4),
		tombstone[string, string]("k", 5))
}

func TestTableTableLeftJoinKeepsLeftKeys(t *testing.T) {
	_, left, right, out := tableJoinDriver(t, func(l, r streams.Table[string, string]) streams.Table[string, string] {
		return l.LeftJoin(r, func(a, b string, ok bool) string { return a + "/" + opt(b, ok) })
	})
	right.PipeAt("k", "b1", atMs(1)) // no left value: nothing
	left.PipeAt("k", "a1", atMs(2))
	right.PipeAt("k", "b2", atMs(3))
	deleteAt(t, right, "k", 4)
	deleteAt(t, left, "k", 5)
	checkRecords(t, out.ReadRecords(),
		rec("k", "a1/b1", 2),
		rec("k", "a1/b2", 3),
		rec("k", "a1/-", 4),
		tombstone[string, string]("k", 5))
}

func TestTableTableOuterJoinKeepsKeysOfEitherSide(t *testing.T) {
	_, left, right, out := tableJoinDriver(t, func(l, r streams.Table[string, string]) streams.Table[string, string] {
		return l.OuterJoin(r, func(a string, okA bool, b string, okB bool) string { return opt(a, okA) + "/" + opt(b, okB) })
	})
	right.PipeAt("k", "b1", atMs(1))
	left.PipeAt("k", "a1", atMs(2))
	deleteAt(t, left, "k", 3)
	deleteAt(t, right, "k", 4)
	checkRecords(t, out.ReadRecords(),
		rec("k", "-/b1", 1),
		rec("k", "a1/b1", 2),
		rec("k", "-/b1", 3),
		tombstone[string, string]("k", 4))
}

func TestTableTableJoinMaterializedAndChained(t *testing.T) {
	b := streams.NewBuilder()
	l := streams.TableFrom[string, string](b, "left")
	r := streams.TableFrom[string, string](b, "right")
	third := streams.TableFrom[string, string](b, "third")
	lr := l.Join(r, func(a, b string) string { return a + b }, streams.Materialized("lr"))
	if lr.StoreName() != "lr" {
		t.Errorf("StoreName = %q", lr.StoreName())
	}
	// Not materialized: the chained join looks lr up through its store, and
	// its own result through both sides' stores.
	all := lr.LeftJoin(third, func(ab, c string, ok bool) string { return ab + opt(c, ok) })
	all.Join(l, func(abc, a string) string { return abc + "|" + a }).ToStream().To("out")
	d := streamstest.New(t, build(t, b), streamstest.Config{})
	in := func(topic string) *streamstest.InputTopic[string, string] {
		return streamstest.Input[string, string](d, topic, nil, nil)
	}
	out := streamstest.Output[string, string](d, "out", nil, nil)
	in("third").PipeAt("k", "c", atMs(1))
	in("left").PipeAt("k", "a", atMs(2))
	in("right").PipeAt("k", "b", atMs(3))
	in("third").PipeAt("k", "C", atMs(4))
	checkRecords(t, out.ReadRecords(),
		rec("k", "abc|a", 3),
		rec("k", "abC|a", 4))
	if got := streamstest.KeyValueStore[string, string](d, "lr"); !reflect.DeepEqual(got, map[string]string{"k": "ab"}) {
		t.Errorf("store lr = %v", got)
	}
	deleteAt(t, in("right"), "k", 5)
	checkRecords(t, out.ReadRecords(), tombstone[string, string]("k", 5))
	if got := streamstest.KeyValueStore[string, string](d, "lr"); len(got) != 0 {
		t.Errorf("store lr after delete = %v", got)
	}
}
