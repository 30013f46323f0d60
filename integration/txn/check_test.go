package txn

import (
	"fmt"
	"maps"
	"math"
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
// the broker's read_committed filtering. fate[i] is rs[i]'s ("" for a
// control record).
func fates(rs []rec) []string {
	fate := make([]string, len(rs))
	pending := map[int64][]int{} // producer id → indexes awaiting its marker
	for i, x := range rs {
		switch {
		case x.Control != notControl:
			f := aborted
			if x.Control == commitMarker {
				f = committed
			}
			for _, j := range pending[x.ProducerID] {
				fate[j] = f
			}
			delete(pending, x.ProducerID)
		case x.Txn:
			pending[x.ProducerID] = append(pending[x.ProducerID], i)
			fate[i] = open
		default:
			fate[i] = committed
		}
	}
	return fate
}

// copies is what checkCopies counted.
type copies struct {
	Committed, Aborted, Open int // data records of the read_uncommitted read, by fate
	Markers                  int // control records in it
	Uncommitted              int // data records of the read_uncommitted read
}

// checkCopies checks the output topic, read both ways, against the n
// input values: the read_uncommitted read's markers decide which records
// committed; read_committed must return exactly those (none aborted or
// open, none skipped, the same value at each offset); they must hold
// every input value exactly once; the read_uncommitted read every value
// at least once; and no transaction may be left open. Both reads are in
// offset order per partition.
func checkCopies(n int, readCommitted, readUncommitted map[int32][]rec) (copies, *report) {
	var c copies
	r := &report{}
	inCommitted := make([]int32, n)
	inUncommitted := make([]int32, n)
	count := func(in []int32, x rec, p int32, read string) {
		if x.Number < 0 || x.Number >= n {
			r.add("strange value", "%d/%d in the %s read", p, x.Offset, read)
			return
		}
		in[x.Number]++
	}
	for p := range readCommitted {
		if _, ok := readUncommitted[p]; !ok {
			r.add("phantom", "read_committed returned records of partition %d, read_uncommitted none", p)
		}
	}
	for _, p := range slices.Sorted(maps.Keys(readUncommitted)) {
		all := readUncommitted[p]
		fate := fates(all)
		for i, x := range all {
			if x.Control != notControl {
				c.Markers++
				if x.Control != abortMarker && x.Control != commitMarker {
					r.add("bad marker", "%d/%d: control record of type %d", p, x.Offset, x.Control)
				}
				continue
			}
			c.Uncommitted++
			switch fate[i] {
			case committed:
				c.Committed++
			case aborted:
				c.Aborted++
			case open:
				c.Open++
				r.add("open", "%d/%d (value %d): no marker of producer %d follows it", p, x.Offset, x.Number, x.ProducerID)
			}
			count(inUncommitted, x, p, "read_uncommitted")
		}
		// Walk both reads in offset order: i is the next record of the
		// read_uncommitted read not yet matched.
		i := 0
		skip := func(below int64) { // committed records before offset below were not read committed
			for ; i < len(all) && all[i].Offset < below; i++ {
				if all[i].Control == notControl && fate[i] == committed {
					r.add("skipped", "read_committed did not return %d/%d (value %d), which a COMMIT marker follows", p, all[i].Offset, all[i].Number)
				}
			}
		}
		for _, x := range readCommitted[p] {
			if x.Control != notControl {
				continue
			}
			skip(x.Offset)
			switch {
			case i == len(all) || all[i].Offset != x.Offset || all[i].Control != notControl:
				r.add("phantom", "read_committed returned %d/%d (value %d), which read_uncommitted does not have", p, x.Offset, x.Number)
			case all[i].Number != x.Number:
				r.add("divergent", "%d/%d holds value %d read_committed, %d read_uncommitted", p, x.Offset, x.Number, all[i].Number)
			case fate[i] == aborted:
				r.add("aborted read committed", "read_committed returned %d/%d (value %d), which an ABORT marker follows", p, x.Offset, x.Number)
			case fate[i] == open:
				r.add("open read committed", "read_committed returned %d/%d (value %d), which no marker follows", p, x.Offset, x.Number)
			}
			if i < len(all) && all[i].Offset == x.Offset {
				i++
			}
			count(inCommitted, x, p, "read_committed")
		}
		skip(math.MaxInt64)
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
