package cluster

import (
	"maps"
	"slices"
	"testing"
	"time"
)

// The checker on synthetic histories: a clean one passes, and each kind of
// fault is found, and only it.
func TestCheckSyntheticHistories(t *testing.T) {
	v := encodeValue
	ack := func(p int32, o int64, val string) ackedRecord {
		return ackedRecord{Topic: "t", Partition: p, Offset: o, Value: val}
	}
	rd := func(who string, p int32, o int64, val string) readRecord {
		return readRecord{Consumer: who, Session: 1, Partition: p, Offset: o, Value: val}
	}
	fin := func(p int32, o int64, val string) readRecord { return rd("final read", p, o, val) }
	clean := history{
		Acked: []ackedRecord{ack(0, 0, v(0, 0)), ack(1, 0, v(0, 1)), ack(0, 1, v(1, 0)), ack(0, 2, v(0, 2))},
		Reads: []readRecord{rd("c", 0, 0, v(0, 0)), rd("c", 0, 1, v(1, 0)), rd("c", 1, 0, v(0, 1))},
		Final: []readRecord{fin(0, 0, v(0, 0)), fin(0, 1, v(1, 0)), fin(0, 2, v(0, 2)), fin(0, 3, v(2, 0)), fin(1, 0, v(0, 1))},
	}
	with := func(change func(h *history)) history {
		h := history{
			Acked: slices.Clone(clean.Acked),
			Reads: slices.Clone(clean.Reads),
			Final: slices.Clone(clean.Final),
		}
		change(&h)
		return h
	}
	for _, tc := range []struct {
		name string
		h    history
		want []string
	}{
		{"clean", clean, nil},
		{"clean, a failed write stored", with(func(h *history) { h.Final = append(h.Final, fin(1, 1, v(3, 0))) }), nil},
		{"lost: an acknowledged write truncated away", with(func(h *history) { h.Final = h.Final[:len(h.Final)-1] }), []string{lost}},
		{"duplicated: a retry stored twice", with(func(h *history) { h.Final = append(h.Final, fin(1, 1, v(0, 1))) }), []string{duplicated}},
		{"divergent: a consumer read a value later replaced", with(func(h *history) {
			h.Reads = append(h.Reads, rd("c", 0, 3, v(9, 9)))
		}), []string{divergent}},
		{"divergent: acknowledged at another value's offset", with(func(h *history) {
			h.Acked = append(h.Acked, ack(0, 3, v(9, 9)))
			h.Final = append(h.Final, fin(1, 1, v(9, 9)))
		}), []string{divergent, duplicated}},
		{"reordered: a producer's sequence goes back", with(func(h *history) {
			h.Final = append(h.Final, fin(1, 1, v(5, 7)), fin(1, 2, v(5, 3)))
		}), []string{reordered}},
		{"backwards: a consumer re-read within a session", with(func(h *history) {
			h.NonMonotonic = []nonMonotonic{{Consumer: "c", Session: 1, Partition: 0, Prev: 1, Got: 0}}
		}), []string{backwards}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := map[string]bool{}
			for _, vi := range check(tc.h) {
				got[vi.Kind] = true
				t.Log(vi)
			}
			if kinds := slices.Sorted(maps.Keys(got)); !slices.Equal(kinds, tc.want) {
				t.Fatalf("violations of kinds %v, want %v", kinds, tc.want)
			}
		})
	}
}

func TestFailoverTimes(t *testing.T) {
	kill := time.Now()
	ps := &producerSet{}
	for _, a := range []struct {
		p     int32
		after time.Duration
	}{{0, -time.Second}, {0, 300 * time.Millisecond}, {0, 100 * time.Millisecond}, {1, 200 * time.Millisecond}, {2, 900 * time.Millisecond}} {
		ps.mu.acked = append(ps.mu.acked, ackedRecord{Partition: a.p, At: kill.Add(a.after)})
	}
	f := ps.failoverTimes(kill, []int32{0, 1, 2, 3})
	if f.Median != 200*time.Millisecond || f.Max != 900*time.Millisecond || !slices.Equal(f.Missing, []int32{3}) || f.Per[0] != 100*time.Millisecond {
		t.Fatalf("failover %v %v, want median 200ms, max 900ms, partition 0 100ms, missing [3]", f, f.Per)
	}
	if ps.ackedSince(kill, []int32{0, 1, 2, 3}) || !ps.ackedSince(kill, []int32{0, 1, 2}) {
		t.Fatal("ackedSince disagrees with the acknowledgements")
	}
}
