package main

import (
	"fmt"
	"io"
	"text/tabwriter"
)

// The transaction benchmarks (bench/txn_bench_test.go): per target, the
// idempotent baseline and the transactional producers, in this order.
var txnModes = []string{"idempotent", "commit-100ms", "commit-10k"}

const txnBaseline = "idempotent"

func txnBench(target, mode string) string {
	return fmt.Sprintf("BenchmarkTxnProduce/%s/%s/1KB/8p", target, mode)
}

// renderTxn writes the transactions table: per target and producer MB/s,
// records/s, commits/s, records per commit and the mean EndTxn time, the producer's speed
// relative to the same target's idempotent one, and Runnel's relative to
// kfake's in the same pair and mode. Targets without results are left
// out; it writes nothing when the run has no transaction benchmarks.
func renderTxn(w io.Writer, r *results) {
	type row struct {
		pr           pair
		target, mode string
	}
	var rows []row
	for _, pr := range pairs {
		for _, tg := range []string{pr.runnel, pr.kfake} {
			ran := false
			for _, mode := range txnModes {
				_, ok := r.metric(txnBench(tg, mode), "MB/s")
				ran = ran || ok
			}
			if !ran {
				continue
			}
			for _, mode := range txnModes {
				rows = append(rows, row{pr, tg, mode})
			}
		}
	}
	if len(rows) == 0 {
		return
	}
	fmt.Fprintf(w, "\n== Transactions: produce throughput, transactional vs idempotent, 1 KB records, 8 partitions (median of runs) ==\n")
	fmt.Fprintf(w, "commit-100ms: a transaction takes records for 100 ms, then flushes and commits; commit-10k: every 10,000 records\n\n")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "target\tproducer\tMB/s\trecords/s\tcommits/s\trecords/commit\tEndTxn ms\tvs idempotent\trunnel/kfake\tother load")
	for _, rw := range rows {
		name := txnBench(rw.target, rw.mode)
		mb, haveMB := r.metric(name, "MB/s")
		recs, haveRecs := r.metric(name, "records/s")
		commits, haveCommits := r.metric(name, "commits/s")
		perCommit, havePer := r.metric(name, "records/commit")
		endTxn, haveEndTxn := r.metric(name, "endtxn-ms")
		vsIdem := "-"
		if rw.mode == txnBaseline {
			vsIdem = ""
		} else if v, ok := r.ratio(name, txnBench(rw.target, txnBaseline), "MB/s"); ok {
			vsIdem = fmt.Sprintf("%.2f×", v)
		}
		vsKfake := ""
		if rw.target == rw.pr.runnel {
			vsKfake = "-"
			if v, ok := r.ratio(name, txnBench(rw.pr.kfake, rw.mode), "MB/s"); ok {
				vsKfake = fmt.Sprintf("%.2f×", v)
			}
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%.0f%%\n", rw.target, rw.mode, num(mb, haveMB), num(recs, haveRecs),
			num(commits, haveCommits), num(perCommit, havePer), num(endTxn, haveEndTxn), vsIdem, vsKfake, r.otherLoad(name))
	}
	tw.Flush()
	fmt.Fprintf(w, "vs idempotent: the producer's MB/s over the same target's idempotent MB/s; runnel/kfake: over kfake's in the same pair\n")
	fmt.Fprintf(w, "(both medians of the per-round ratios; in each round a target runs its three producers back to back)\n")
}
