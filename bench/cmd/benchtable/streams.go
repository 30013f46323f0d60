package main

import (
	"fmt"
	"io"
	"text/tabwriter"
)

// The streams benchmarks (bench/streams_bench_test.go): count per key in
// Runnel Streams at least once and exactly once and in goka, per key
// count; and the restore of a store from its changelog.
var (
	streamsKeys    = []string{"1000", "100000"}
	streamsSystems = []string{"runnel-alos", "runnel-eos", "goka"}
)

// Issue 6's targets: Runnel at least once ≥ 3× goka, exactly once ≥ 75 %
// of at least once, restore ≥ 1M records/s.
const (
	minStreamsVsGoka   = 3.0
	minStreamsEOSShare = 0.75
	minRestoreRate     = 1e6
)

const streamsRestoreBench = "BenchmarkStreamsRestore"

func streamsBench(keys, system string) string {
	return fmt.Sprintf("BenchmarkStreamsCount/keys-%s/%s", keys, system)
}

// renderStreams writes the streams table (both Runnel guarantees at one commit interval, see bench/streams_bench_test.go): per key count and system
// records/s and peak heap, Runnel's ratios to goka and exactly once's to
// at least once, with verdicts; then the restore rate. It writes nothing
// when the run has no streams benchmarks.
func renderStreams(w io.Writer, r *results) {
	ran := false
	for _, k := range streamsKeys {
		for _, s := range streamsSystems {
			_, ok := r.metric(streamsBench(k, s), "records/s")
			ran = ran || ok
		}
	}
	_, haveRestore := r.metric(streamsRestoreBench, "records/s")
	if !ran && !haveRestore {
		return
	}
	var sum summary
	fmt.Fprintf(w, "\n== Streams: count per key, 8 partitions, one runnel broker process (median of runs) ==\n")
	fmt.Fprintf(w, "targets: Runnel at-least-once ≥ %.0f× goka; exactly-once ≥ %.0f%% of at-least-once; restore ≥ %.0fM records/s\n\n",
		minStreamsVsGoka, 100*minStreamsEOSShare, minRestoreRate/1e6)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "keys\tsystem\trecords/s\tpeak heap MB\tratio\ttarget\tother load")
	for _, k := range streamsKeys {
		for _, s := range streamsSystems {
			name := streamsBench(k, s)
			recs, haveRecs := r.metric(name, "records/s")
			heap, haveHeap := r.metric(name, "peak-heap-MB")
			ratio, verdict := "", ""
			switch s {
			case "runnel-alos":
				v, ok := r.ratio(name, streamsBench(k, "goka"), "records/s")
				ratio = ratioText(v, ok, "× goka")
				verdict = sum.check(ok, v >= minStreamsVsGoka)
			case "runnel-eos":
				v, ok := r.ratio(name, streamsBench(k, "runnel-alos"), "records/s")
				ratio = ratioText(v*100, ok, "% of alos")
				verdict = sum.check(ok, v >= minStreamsEOSShare)
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%.0f%%\n", k, s, num(recs, haveRecs), num(heap, haveHeap), ratio, verdict, r.otherLoad(name))
		}
	}
	tw.Flush()
	if haveRestore {
		rate, _ := r.metric(streamsRestoreBench, "records/s")
		heap, haveHeap := r.metric(streamsRestoreBench, "peak-heap-MB")
		whole, haveWhole := r.metric(streamsRestoreBench, "start-to-restored-records/s")
		fmt.Fprintf(w, "restore from changelog: %s records/s while restoring (%s from the app's start), peak heap %s MB: %s\n",
			num(rate, true), num(whole, haveWhole), num(heap, haveHeap), sum.check(true, rate >= minRestoreRate))
	}
	fmt.Fprintf(w, "Runnel commits every 100 ms with either guarantee (exactly once's default; at least once's is 30 s), goka every second (its default)\n")
	fmt.Fprintf(w, "records/s: input records counted per second, from the app's start (group join included) to the last count update;\n")
	fmt.Fprintf(w, "peak heap: the benchmark process's (app and its clients; the broker runs apart)\n")
}

func ratioText(v float64, ok bool, unit string) string {
	if !ok {
		return "-"
	}
	return fmt.Sprintf("%.2f%s", v, unit)
}
