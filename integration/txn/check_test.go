package txn

import (
	"fmt"
	"maps"
	"slices"
	"strings"
)

// Fates of a transactional record, as its partition's markers decide.
const (
	open      = "open"      // no marker of its producer followed it
	committed = "committed" // a COMMIT marker did (or it is not transactional)
	aborted   = "aborted"   // an ABORT marker did
)

// report collects the violations of a check, counting each kind and
// keeping the first few examples.
type report struct {
	count    map[string]int
	examples []string
}

// examplesPerKind is how many violations of a kind a report keeps.
const examplesPerKind = 5

func (r *report) add(kind, format string, args ...any) {
	if r.count == nil {
		r.count = map[string]int{}
	}
	r.count[kind]++
	if r.count[kind] <= examplesPerKind {
		r.examples = append(r.examples, kind+": "+fmt.Sprintf(format, args...))
	}
}

func (r *report) ok() bool { return len(r.count) == 0 }

func (r *report) String() string {
	var kinds []string
	for _, k := range slices.Sorted(maps.Keys(r.count)) {
		kinds = append(kinds, fmt.Sprintf("%s ×%d", k, r.count[k]))
	}
	return strings.Join(kinds, ", ") + "\n  " + strings.Join(r.examples, "\n  ")
}

// fates walks one partition's read_uncommitted read in offset order and
// decides each data record's fate by the next control record of its
// producer id (the partition's transaction markers), independently of
// the broker's read_committed filtering. It returns the fate of each
// data record's offset and the number of markers.
func fates(rs []rec) (map[int64]string, int) {
	out := map[int64]string{}
	pending := map[int64][]int64{} // producer id → offsets awaiting its marker
	markers := 0
	for _, r := range rs {
		switch {
		case r.Control != notControl:
			markers++
			fate := aborted
			if r.Control == commitMarker {
				fate = committed
			}
			for _, o := range pending[r.ProducerID] {
				out[o] = fate
			}
			delete(pending, r.ProducerID)
		case r.Txn:
			pending[r.ProducerID] = append(pending[r.ProducerID], r.Offset)
			out[r.Offset] = open
		default:
			out[r.Offset] = committed
		}
	}
	return out, markers
}

// copies is what checkCopies counted.
type copies struct {
	Committed, Aborted, Open int // data records of the read_uncommitted read, by fate
	Markers                  int // control records in it
	Uncommitted              int // data records of the read_uncommitted read
}

// checkCopies checks the output topic, read both ways, against the n
// input values: the read_uncommitted read's markers decide which records
// committed; read_committed must return exactly those (none aborted, none
// skipped, the same value at each offset); they must hold every input
// value exactly once; the read_uncommitted read every value at least
// once; and no transaction may be left open.
func checkCopies(n int, readCommitted, readUncommitted map[int32][]rec) (copies, *report) {
	var c copies
	r := &report{}
	inCommitted := make([]int32, n)
	inUncommitted := make([]int32, n)
	for _, p := range slices.Sorted(maps.Keys(readUncommitted)) {
		all := readUncommitted[p]
		fate, markers := fates(all)
		c.Markers += markers
		values := map[int64]int{} // offset → number, data records only
		for _, x := range all {
			if x.Control != notControl {
				if x.Control != abortMarker && x.Control != commitMarker {
					r.add("bad marker", "%d/%d: control record of type %d", p, x.Offset, x.Control)
				}
				continue
			}
			c.Uncommitted++
			values[x.Offset] = x.Number
			switch fate[x.Offset] {
			case committed:
				c.Committed++
			case aborted:
				c.Aborted++
			case open:
				c.Open++
				r.add("open", "%d/%d (value %d): no marker of producer %d follows it", p, x.Offset, x.Number, x.ProducerID)
			}
			if x.Number < 0 || x.Number >= n {
				r.add("strange value", "%d/%d in the read_uncommitted read", p, x.Offset)
				continue
			}
			inUncommitted[x.Number]++
		}
		seen := map[int64]bool{}
		for _, x := range readCommitted[p] {
			if x.Control != notControl {
				continue
			}
			seen[x.Offset] = true
			want, ok := values[x.Offset]
			switch {
			case !ok:
				r.add("phantom", "read_committed returned %d/%d (value %d), which read_uncommitted does not have", p, x.Offset, x.Number)
			case want != x.Number:
				r.add("divergent", "%d/%d holds value %d read_committed, %d read_uncommitted", p, x.Offset, x.Number, want)
			case fate[x.Offset] == aborted:
				r.add("aborted read committed", "read_committed returned %d/%d (value %d), which an ABORT marker follows", p, x.Offset, x.Number)
			case fate[x.Offset] == open:
				r.add("open read committed", "read_committed returned %d/%d (value %d), which no marker follows", p, x.Offset, x.Number)
			}
			if x.Number < 0 || x.Number >= n {
				r.add("strange value", "%d/%d in the read_committed read", p, x.Offset)
				continue
			}
			inCommitted[x.Number]++
		}
		for _, o := range slices.Sorted(maps.Keys(fate)) {
			if fate[o] == committed && !seen[o] {
				r.add("skipped", "read_committed did not return %d/%d (value %d), which a COMMIT marker follows", p, o, values[o])
			}
		}
	}
	for p := range readCommitted {
		if _, ok := readUncommitted[p]; !ok {
			r.add("phantom", "read_committed returned records of partition %d, read_uncommitted none", p)
		}
	}
	for i := range n {
		switch {
		case inCommitted[i] == 0:
			r.add("lost", "value %d is not in the read_committed read", i)
		case inCommitted[i] > 1:
			r.add("duplicated", "value %d is %d times in the read_committed read", i, inCommitted[i])
		}
		if inUncommitted[i] == 0 {
			r.add("lost uncommitted", "value %d is not in the read_uncommitted read", i)
		}
	}
	return c, r
}
