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

// A task taken from a live member goes to its new member only in the next
// round, after the old one stopped it; a departed member's tasks move at once.
func TestWithholdMoving(t *testing.T) {
	// Round one: c joined; b's t3 is to move to c, a's t0 stays. d left
	// while holding t4, which goes to c at once.
	assign := map[string][]string{"a": {"t0"}, "b": {"t2"}, "c": {"t3", "t4"}}
	held := map[string][]string{"a": {"t0"}, "b": {"t2", "t3"}}
	rejoin := withholdMoving(assign, held)
	if got := fmt.Sprint(assign["a"], assign["b"], assign["c"]); got != "[t0] [t2] [t4]" {
		t.Fatalf("round one assigns %s, want [t0] [t2] [t4]", got)
	}
	if !rejoin["b"] || rejoin["a"] || rejoin["c"] {
		t.Fatalf("rejoin %v, want only b", rejoin)
	}
	// Round two: b stopped t3 and rejoined; c gets it.
	assign = map[string][]string{"a": {"t0"}, "b": {"t2"}, "c": {"t3", "t4"}}
	held = map[string][]string{"a": {"t0"}, "b": {"t2"}, "c": {"t4"}}
	if rejoin := withholdMoving(assign, held); len(rejoin) != 0 || fmt.Sprint(assign["c"]) != "[t3 t4]" {
		t.Fatalf("round two assigns c %v and asks %v to rejoin, want [t3 t4] and nobody", assign["c"], rejoin)
	}
}
