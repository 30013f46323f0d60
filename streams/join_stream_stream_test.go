package streams_test

import (
	"errors"
	"testing"
	"time"

	"github.com/runnel-io/runnel/streams"
	"github.com/runnel-io/runnel/streams/streamstest"
)

// streamJoinDriver builds streams "left" and "right" joined by join into
// "out".
func streamJoinDriver(t *testing.T, join func(l, r streams.Stream[string, string]) streams.Stream[string, string]) (*streamstest.InputTopic[string, string], *streamstest.InputTopic[string, string], *streamstest.OutputTopic[string, string]) {
	t.Helper()
	b := streams.NewBuilder()
	l := streams.From[string, string](b, "left")
	r := streams.From[string, string](b, "right")
	join(l, r).To("out")
	d := streamstest.New(t, build(t, b), streamstest.Config{})
	return streamstest.Input[string, string](d, "left", nil, nil),
		streamstest.Input[string, string](d, "right", nil, nil),
		streamstest.Output[string, string](d, "out", nil, nil)
}

func TestStreamStreamJoinPairsRecordsWithinTheWindowInAnyOrder(t *testing.T) {
	left, right, out := streamJoinDriver(t, func(l, r streams.Stream[string, string]) streams.Stream[string, string] {
		return l.Join(r, func(_, a, b string) string { return a + "+" + b }, streams.JoinTimeDifference(10*time.Second))
	})
	left.PipeAt("a", "L1", atMs(0))
	right.PipeAt("a", "R1", atMs(5_000))
	right.PipeAt("a", "R2", atMs(20_000)) // 20s after L1: outside its window
	left.PipeAt("a", "L2", atMs(15_000))  // out of order, meets R1 and R2
	right.PipeAt("b", "R3", atMs(18_000))
	left.PipeAt("b", "L3", atMs(12_000)) // earlier than R3, still on time
	left.PipeAt("d", "x", atMs(20_000))
	left.PipeAt("d", "y", atMs(20_000)) // same key and time: both kept
	right.PipeAt("d", "r", atMs(20_001))
	checkRecords(t, out.ReadRecords(),
		rec("a", "L1+R1", 5_000),
		rec("a", "L2+R1", 15_000),
		rec("a", "L2+R2", 20_000),
		rec("b", "L3+R3", 18_000),
		rec("d", "x+r", 20_001),
		rec("d", "y+r", 20_001))
}

func TestStreamStreamJoinDropsRecordsLaterThanGrace(t *testing.T) {
	left, right, out := streamJoinDriver(t, func(l, r streams.Stream[string, string]) streams.Stream[string, string] {
		return l.Join(r, func(_, a, b string) string { return a + "+" + b },
			streams.JoinTimeDifference(10*time.Second).Grace(5*time.Second))
	})
	left.PipeAt("z", "now", atMs(100_000))
	left.PipeAt("a", "L", atMs(85_000))     // window ends at 95s, + 5s grace: on time
	right.PipeAt("a", "late", atMs(80_000)) // window ends at 90s + 5s < 100s: dropped
	right.PipeAt("a", "R", atMs(86_000))    // on time
	left.PipeAt("c", "late", atMs(84_999))  // dropped: not buffered either
	right.PipeAt("c", "R", atMs(90_000))    // so this meets nothing
	right.PipeTombstone("a")                // tombstones are dropped
	checkRecords(t, out.ReadRecords(), rec("a", "L+R", 86_000))
}

func TestStreamStreamLeftJoinEmitsUnmatchedOnlyAfterTheWindowCloses(t *testing.T) {
	left, right, out := streamJoinDriver(t, func(l, r streams.Stream[string, string]) streams.Stream[string, string] {
		return l.LeftJoin(r, func(_, a, b string, ok bool) string { return a + "+" + opt(b, ok) },
			streams.JoinTimeDifference(10*time.Second))
	})
	left.PipeAt("a", "L1", atMs(0))
	right.PipeAt("b", "Rb", atMs(15_000)) // L1 still waits: a right record at 10s could come
	left.PipeAt("a", "L2", atMs(19_000))
	checkRecords(t, out.ReadRecords())
	right.PipeAt("a", "Ra", atMs(9_000)) // out of order, meets both
	checkRecords(t, out.ReadRecords(), rec("a", "L1+Ra", 9_000), rec("a", "L2+Ra", 19_000))

	left.PipeAt("c", "L3", atMs(21_000)) // closes L1 and L2: matched, so nothing
	left.PipeAt("x", "Lx", atMs(22_000))
	right.PipeAt("y", "Ry", atMs(41_000)) // L3's window is open until 41s
	checkRecords(t, out.ReadRecords())
	right.PipeAt("y", "Ry", atMs(42_001)) // closes L3 and Lx
	checkRecords(t, out.ReadRecords(), rec("c", "L3+-", 21_000), rec("x", "Lx+-", 22_000))
}

func TestStreamStreamOuterJoinEmitsUnmatchedOfBothSidesInTimeOrder(t *testing.T) {
	left, right, out := streamJoinDriver(t, func(l, r streams.Stream[string, string]) streams.Stream[string, string] {
		return l.OuterJoin(r, func(_, a string, okA bool, b string, okB bool) string { return opt(a, okA) + "+" + opt(b, okB) },
			streams.JoinTimeDifference(10*time.Second))
	})
	right.PipeAt("a", "R1", atMs(0))
	left.PipeAt("b", "Lb", atMs(5_000))
	checkRecords(t, out.ReadRecords())
	left.PipeAt("z", "Lz", atMs(30_000))
	checkRecords(t, out.ReadRecords(), rec("a", "-+R1", 0), rec("b", "Lb+-", 5_000))
	right.PipeAt("z", "Rz", atMs(31_000))
	left.PipeAt("q", "Lq", atMs(60_000)) // Lz met Rz: nothing more
	checkRecords(t, out.ReadRecords(), rec("z", "Lz+Rz", 31_000))
}

func TestStreamStreamJoinWithAsymmetricWindows(t *testing.T) {
	// Right records join from 1s before to 3s after a left record.
	left, right, out := streamJoinDriver(t, func(l, r streams.Stream[string, string]) streams.Stream[string, string] {
		return l.Join(r, func(_, a, b string) string { return a + "+" + b },
			streams.JoinTimeDifference(0).Before(time.Second).After(3*time.Second).Grace(time.Minute))
	})
	left.PipeAt("k", "L", atMs(10_000))
	for _, ms := range []int64{8_999, 9_000, 13_000, 13_001} {
		right.PipeAt("k", "R", atMs(ms))
	}
	checkRecords(t, out.ReadRecords(), rec("k", "L+R", 10_000), rec("k", "L+R", 13_000))
}

func TestStreamStreamJoinRejectsEmptyWindows(t *testing.T) {
	b := streams.NewBuilder()
	l := streams.From[string, string](b, "left")
	r := streams.From[string, string](b, "right")
	l.Join(r, func(_, a, b string) string { return a + b }, streams.JoinTimeDifference(time.Second).Before(-2*time.Second))
	if _, err := b.Build(); !errors.Is(err, streams.ErrTopology) {
		t.Fatalf("Build = %v, want ErrTopology", err)
	}
}

func TestStreamStreamJoinRepartitionsBothSidesAndLogsItsStores(t *testing.T) {
	b := streams.NewBuilder()
	l := streams.From[string, string](b, "left").SelectKey(func(_, v string) string { return v })
	r := streams.From[string, string](b, "right").SelectKey(func(_, v string) string { return v })
	l.Join(r, func(k, _, _ string) string { return k }, streams.JoinTimeDifference(time.Minute),
		streams.Named("pair"), streams.Materialized("pairs")).To("out")
	d := streamstest.New(t, build(t, b), streamstest.Config{Partitions: map[string]int32{"left": 2, "right": 2}})
	streamstest.Input[string, string](d, "left", nil, nil).PipeAt("x", "k1", atMs(1))
	streamstest.Input[string, string](d, "right", nil, nil).PipeAt("y", "k1", atMs(2))
	checkRecords(t, streamstest.Output[string, string](d, "out", nil, nil).ReadRecords(), rec("k1", "k1", 2))
	for _, topic := range []string{"test-app-pair-left-repartition", "test-app-pair-right-repartition",
		"test-app-pairs-this-join-store-changelog", "test-app-pairs-other-join-store-changelog"} {
		if n := len(d.Records(topic)); n != 1 {
			t.Errorf("%s: %d records, want 1", topic, n)
		}
	}
}
