package txn

import (
	"maps"
	"slices"
	"testing"
)

// TestCheckCopies checks the checker on a made-up partition: two
// committed transactions of producer 1 around an aborted one of producer
// 2 that copied value 1 again.
func TestCheckCopies(t *testing.T) {
	data := func(o, pid int64, v int) rec {
		return rec{Offset: o, ProducerID: pid, Number: v, Txn: true, Control: notControl}
	}
	marker := func(o, pid int64, typ int8) rec {
		return rec{Offset: o, ProducerID: pid, Number: -1, Txn: true, Control: typ}
	}
	log := []rec{
		data(0, 1, 0), data(1, 1, 1), data(2, 2, 1), marker(3, 1, commitMarker),
		marker(4, 2, abortMarker), data(5, 1, 2), marker(6, 1, commitMarker),
	}
	committedRead := []rec{log[0], log[1], log[3], log[5], log[6]}
	without := func(rs []rec, o int64) []rec {
		return slices.DeleteFunc(slices.Clone(rs), func(x rec) bool { return x.Offset == o })
	}
	with := func(rs []rec, x rec) []rec {
		rs = append(slices.Clone(rs), x)
		slices.SortFunc(rs, func(a, b rec) int { return int(a.Offset - b.Offset) })
		return rs
	}
	for _, tc := range []struct {
		name        string
		committed   []rec
		uncommitted []rec
		want        []string // violation kinds
	}{
		{"correct", committedRead, log, nil},
		{"aborted copy read committed", with(committedRead, log[2]), log, []string{"aborted read committed", "duplicated"}},
		{"committed copy skipped", without(committedRead, 5), log, []string{"lost", "skipped"}},
		{"transaction left open", committedRead[:2], log[:3], []string{"lost", "lost uncommitted", "open", "open read committed"}},
		{"record only read committed", with(committedRead, data(7, 1, 2)), log, []string{"duplicated", "phantom"}},
		{"value changed", append(slices.Clone(committedRead[:1]), data(1, 1, 2), log[3], log[5], log[6]), log, []string{"divergent", "duplicated", "lost"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, r := checkCopies(3, map[int32][]rec{0: tc.committed}, map[int32][]rec{0: tc.uncommitted})
			if got := slices.Sorted(maps.Keys(r.count)); !slices.Equal(got, tc.want) {
				t.Errorf("violations %v, want kinds %v:\n%v", got, tc.want, r)
			}
		})
	}
	c, _ := checkCopies(3, map[int32][]rec{0: committedRead}, map[int32][]rec{0: log})
	if c != (copies{Committed: 3, Aborted: 1, Markers: 3, Uncommitted: 4}) {
		t.Errorf("counted %+v", c)
	}
}
