package main

import (
	"fmt"
	"io"
	"text/tabwriter"
)

// groupRow is one row of the consumer-group table: a benchmark name below
// Benchmark{Rebalance,Commit}/<target>/, the metric it reports and whether
// a larger value is better.
type groupRow struct {
	label, bench, unit string
	higherIsBetter     bool
}

// groupRows are the consumer-group scenarios (bench/group_bench_test.go).
func groupRows() []groupRow {
	var rows []groupRow
	for _, how := range []string{"leave", "kill"} {
		for _, n := range []int{2, 8, 32} {
			rows = append(rows, groupRow{
				label: fmt.Sprintf("reassign after %s, %d members", how, n),
				bench: fmt.Sprintf("Rebalance/%%s/%s/%dmembers", how, n),
				unit:  "ms/reassign",
			})
		}
	}
	for _, n := range []int{1, 8} {
		rows = append(rows, groupRow{
			label:          fmt.Sprintf("offset commits, %d client(s)", n),
			bench:          fmt.Sprintf("Commit/%%s/%dclients", n),
			unit:           "commits/s",
			higherIsBetter: true,
		})
	}
	return rows
}

// renderGroups writes the consumer-group table: Runnel in-process beside
// kfake, and Runnel's speed relative to kfake (above 1: Runnel is faster,
// whether the metric is a time or a rate). It writes nothing when the run
// has no group benchmarks.
func renderGroups(w io.Writer, r *results) {
	rows := groupRows()
	any := false
	for _, row := range rows {
		for _, tg := range []string{"runnel", "kfake"} {
			if _, ok := r.metric("Benchmark"+fmt.Sprintf(row.bench, tg), row.unit); ok {
				any = true
			}
		}
	}
	if !any {
		return
	}
	fmt.Fprintf(w, "\n== Consumer groups: in-process Runnel vs kfake (median of runs) ==\n")
	fmt.Fprintf(w, "reassign: from a member's LeaveGroup (leave) or SIGKILL (kill; 6 s session timeout) until the rest own every partition\n\n")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "scenario\tunit\trunnel\tkfake\trunnel speed vs kfake")
	for _, row := range rows {
		rn, haveR := r.metric("Benchmark"+fmt.Sprintf(row.bench, "runnel"), row.unit)
		kf, haveK := r.metric("Benchmark"+fmt.Sprintf(row.bench, "kfake"), row.unit)
		ratio := "-"
		if haveR && haveK && rn > 0 && kf > 0 {
			if row.higherIsBetter {
				ratio = fmt.Sprintf("%.2f×", rn/kf)
			} else {
				ratio = fmt.Sprintf("%.2f×", kf/rn)
			}
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", row.label, row.unit, num(rn, haveR), num(kf, haveK), ratio)
	}
	tw.Flush()
}
