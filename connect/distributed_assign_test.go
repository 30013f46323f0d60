package connect

import (
	"fmt"
	"testing"
)

func TestStickyAssign(t *testing.T) {
	items := func(n int) []string {
		var out []string
		for i := range n {
			out = append(out, fmt.Sprint("t", i))
		}
		return out
	}
	for _, tc := range []struct {
		name    string
		members []string
		items   []string
		prev    map[string]string
		sizes   map[string]int
		kept    int // items that stay where they were
	}{
		{"even from nothing", []string{"a", "b", "c"}, items(6), nil, map[string]int{"a": 2, "b": 2, "c": 2}, 0},
		{"a newcomer takes a share", []string{"a", "b", "c"}, items(4),
			map[string]string{"t0": "a", "t1": "a", "t2": "b", "t3": "b"}, map[string]int{"a": 2, "b": 1, "c": 1}, 3},
		{"a member's items move when it is gone", []string{"a", "b"}, items(4),
			map[string]string{"t0": "a", "t1": "b", "t2": "c", "t3": "c"}, map[string]int{"a": 2, "b": 2}, 2},
		{"stable when nothing changed", []string{"a", "b"}, items(3),
			map[string]string{"t0": "a", "t1": "b", "t2": "a"}, map[string]int{"a": 2, "b": 1}, 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := stickyAssign(tc.members, tc.items, tc.prev)
			kept, total := 0, 0
			for m, its := range got {
				if len(its) != tc.sizes[m] {
					t.Errorf("%s has %d items, want %d: %v", m, len(its), tc.sizes[m], got)
				}
				for _, it := range its {
					total++
					if tc.prev[it] == m {
						kept++
					}
				}
			}
			if total != len(tc.items) || kept != tc.kept {
				t.Errorf("assigned %d of %d, kept %d (want %d): %v", total, len(tc.items), kept, tc.kept, got)
			}
		})
	}
}
