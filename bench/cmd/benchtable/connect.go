package main

import (
	"fmt"
	"io"
	"text/tabwriter"
)

// The Connect benchmarks (bench/connect_bench_test.go): topic →
// PostgreSQL through the whole runtime (insert with COPY, upsert) beside
// a raw COPY of the same rows, and file → topic beside a franz-go
// producer sending the same lines.
const (
	connectRawCopy  = "BenchmarkConnectPostgresSink/raw-copy"
	connectInsert   = "BenchmarkConnectPostgresSink/insert"
	connectUpsert   = "BenchmarkConnectPostgresSink/upsert"
	connectFile     = "BenchmarkConnectFileSource/connect"
	connectFilePeer = "BenchmarkConnectFileSource/kgo-producer"
)

// Issue 7's target: ≥ 100k rows/s into PostgreSQL with COPY on a 2-core
// machine.
const minConnectCopyRate = 100_000

// renderConnect writes the Connect table: records/s, CPU and the share of
// each row's peer; nothing when the run has no Connect benchmarks.
func renderConnect(w io.Writer, r *results) {
	rows := []struct {
		name, label, peer, peerLabel string
	}{
		{connectRawCopy, "raw COPY (peer)", "", ""},
		{connectInsert, "topic → PostgreSQL, insert (COPY)", connectRawCopy, "raw COPY"},
		{connectUpsert, "topic → PostgreSQL, upsert", connectRawCopy, "raw COPY"},
		{connectFilePeer, "kgo producer (peer)", "", ""},
		{connectFile, "file → topic", connectFilePeer, "kgo producer"},
	}
	ran := false
	for _, row := range rows {
		_, ok := r.metric(row.name, "records/s")
		ran = ran || ok
	}
	if !ran {
		return
	}
	var sum summary
	fmt.Fprintf(w, "\n== Connect: a standalone worker, one runnel broker process, a private PostgreSQL; ~200 B JSON records (median of runs) ==\n")
	fmt.Fprintf(w, "target: topic → PostgreSQL insert (COPY) ≥ %.0fk rows/s\n\n", minConnectCopyRate/1e3)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "pipeline\trecords/s\tMB/s\tworker cpu\tof peer\ttarget\tother load")
	for _, row := range rows {
		recs, have := r.metric(row.name, "records/s")
		mb, haveMB := r.metric(row.name, "MB/s")
		cpu, haveCPU := r.metric(row.name, "cpu-%")
		share := "-"
		if row.peer != "" {
			if v, ok := r.ratio(row.name, row.peer, "records/s"); ok {
				share = fmt.Sprintf("%.0f%% of %s", 100*v, row.peerLabel)
			}
		}
		verdict := ""
		if row.name == connectInsert {
			verdict = sum.check(have, recs >= minConnectCopyRate)
		}
		cpuText := "-"
		if haveCPU {
			cpuText = fmt.Sprintf("%.0f%%", cpu)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%.0f%%\n", row.label, num(recs, have), num(mb, haveMB), cpuText, share, verdict, r.otherLoad(row.name))
	}
	tw.Flush()
	fmt.Fprintf(w, "records/s: from the worker's start (group join included) to the last commit; worker cpu: the benchmark process (100%% = one core);\n")
	fmt.Fprintf(w, "other load: the rest of the machine (broker, PostgreSQL) during the row's runs\n")
}
