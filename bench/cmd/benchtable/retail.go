package main

import (
	"fmt"
	"io"
	"text/tabwriter"
)

// The retail demo benchmarks (bench/retail_bench_test.go): the demo's
// pipeline end to end beside its generator alone, and a sale's latency to
// its stock update beside a plain produce → read_committed round trip at
// the same rate.
const (
	retailGenerator = "BenchmarkRetailDemo/generator"
	retailPipeline  = "BenchmarkRetailDemo/pipeline"
	retailRoundTrip = "BenchmarkRetailDemo/round-trip"
	retailLatency   = "BenchmarkRetailDemo/latency"
)

// renderRetail writes the retail demo table; nothing when the run has no
// retail benchmarks. Issue 8 sets no target: it asks for the numbers.
func renderRetail(w io.Writer, r *results) {
	_, pipe := r.metric(retailPipeline, "sales/s")
	_, lat := r.metric(retailLatency, "p50-ms")
	if !pipe && !lat {
		return
	}
	fmt.Fprintf(w, "\n== Retail demo: generator → Streams app (exactly once) → dashboard, with Connect's sinks; one runnel broker process (median of runs) ==\n\n")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "throughput\tsales/s\tevents/s\tof peer\tcpu\tother load")
	for _, row := range []struct{ name, label, peer string }{
		{retailGenerator, "generator alone (peer)", ""},
		{retailPipeline, "pipeline, end to end", retailGenerator},
	} {
		sales, ok := r.metric(row.name, "sales/s")
		events, okE := r.metric(row.name, "events/s")
		cpu, okC := r.metric(row.name, "cpu-%")
		share := "-"
		if row.peer != "" {
			if v, ok := r.ratio(row.name, row.peer, "sales/s"); ok {
				share = fmt.Sprintf("%.1f%%", 100*v)
			}
		}
		cpuText := "-"
		if okC {
			cpuText = fmt.Sprintf("%.0f%%", cpu)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%.0f%%\n", row.label, num(sales, ok), num(events, okE), share, cpuText, r.otherLoad(row.name))
	}
	tw.Flush()
	fmt.Fprintln(tw)
	fmt.Fprintln(tw, "latency at 200 sales/s\tp50 ms\tp99 ms")
	for _, row := range []struct{ name, label string }{
		{retailRoundTrip, "produce → read_committed read (peer)"},
		{retailLatency, "sale → its stock update"},
	} {
		p50, ok50 := r.metric(row.name, "p50-ms")
		p99, ok99 := r.metric(row.name, "p99-ms")
		fmt.Fprintf(tw, "%s\t%s\t%s\n", row.label, num(p50, ok50), num(p99, ok99))
	}
	tw.Flush()
	fmt.Fprintf(w, "sales/s: the generator's start to the dashboard reading the last stock update; cpu: the benchmark process (app, Connect, dashboard);\n")
	fmt.Fprintf(w, "other load: the rest of the machine (the broker); latency includes the app's event-time ordering (watermarks) and 100 ms commits\n")
}
