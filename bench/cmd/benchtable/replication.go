package main

import (
	"fmt"
	"io"
	"text/tabwriter"
)

// The replication benchmarks (bench/replication_bench_test.go).
const (
	replRF1     = "BenchmarkReplication/rf1/1KB/8p"
	replRF3     = "BenchmarkReplication/rf3/1KB/8p"
	replLatency = "BenchmarkReplicationLatency/rf3/1KB/8p"
	// latencyRate is the latency run's target, records per second; a run
	// that achieved less than latencyKept of it is flagged.
	latencyRate = 20000
	latencyKept = 0.99
)

// renderReplication writes the replication table: RF=1 and RF=3 produce
// MB/s on the same three-node cluster with their ratio, and the RF=3
// end-to-end latency at latencyRate. It writes nothing when the run has
// neither.
func renderReplication(w io.Writer, r *results) {
	rf1, have1 := r.metric(replRF1, "MB/s")
	rf3, have3 := r.metric(replRF3, "MB/s")
	_, haveLat := r.metric(replLatency, "p50-ms")
	if !have1 && !have3 && !haveLat {
		return
	}
	fmt.Fprintf(w, "\n== Replication: 3 runnel broker processes, 1 KB records, 8 partitions, acks=all (median of runs) ==\n")
	fmt.Fprintf(w, "produce: one franz-go client (idempotent, linger 10 ms), RF=1 vs RF=3 (min.insync.replicas=2), back to back on the same cluster\n\n")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "RF=1 MB/s\tRF=3 MB/s\tRF=3/RF=1\tother load")
	ratio := "-"
	if v, ok := r.ratio(replRF3, replRF1, "MB/s"); ok {
		ratio = fmt.Sprintf("%.2f×", v)
	}
	fmt.Fprintf(tw, "%s\t%s\t%s\t%.0f%%\n", num(rf1, have1), num(rf3, have3), ratio, r.otherLoad(replRF1, replRF3))
	tw.Flush()
	fmt.Fprintf(w, "RF=3/RF=1: median of the per-round ratios\n")

	fmt.Fprintf(w, "\nLatency at %d records/s, RF=3: from the time a record's batch was due to be sent until the consumer had it\n\n", latencyRate)
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "p50 ms\tp99 ms\tp99.9 ms\tmax ms\tachieved records/s\tproducer behind at most, ms\tother load")
	var cols []any
	for _, unit := range []string{"p50-ms", "p99-ms", "p99.9-ms", "max-ms", "records/s", "behind-max-ms"} {
		v, ok := r.metric(replLatency, unit)
		cols = append(cols, num(v, ok))
	}
	cols = append(cols, r.otherLoad(replLatency))
	fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%.0f%%\n", cols...)
	tw.Flush()
	if rate, ok := r.metric(replLatency, "records/s"); ok && rate < latencyKept*latencyRate {
		fmt.Fprintf(w, "WARNING: the producer achieved %.0f records/s, not %d: the machine could not keep the rate, so these latencies are not at the target load\n", rate, latencyRate)
	}
}
