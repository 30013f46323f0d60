package main

import (
	"io"
	"strings"
	"testing"
)

const replSample = `BenchmarkReplication/rf1/1KB/8p-2   	  244536	      4953 ns/op	 200.00 MB/s	  76.72 broker-cpu-%	  10 others-cpu-%
BenchmarkReplication/rf3/1KB/8p-2   	   67080	     15343 ns/op	  50.00 MB/s	  90.28 broker-cpu-%	  30 others-cpu-%
BenchmarkReplication/rf1/1KB/8p-2   	  244536	      4953 ns/op	 100.00 MB/s	  76.72 broker-cpu-%	  10 others-cpu-%
BenchmarkReplication/rf3/1KB/8p-2   	   67080	     15343 ns/op	  50.00 MB/s	  90.28 broker-cpu-%	  30 others-cpu-%
BenchmarkReplicationLatency/rf3/1KB/8p-2  	       1	10184511306 ns/op	  4.5 behind-max-ms	 300.1 max-ms	 12.5 p50-ms	 80.25 p99-ms	 200.0 p99.9-ms	 19000 records/s	 40 others-cpu-%
`

func TestReplicationTable(t *testing.T) {
	res, err := parse(strings.NewReader(replSample), io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	renderReplication(&out, res)
	table := out.String()
	for _, want := range []string{
		// medians 150 and 50; per-round ratios 0.25 and 0.5.
		"150.0      50.0       0.38×      30%",
		"12.5    80.2    200.0     300.1   19000.0             4.5                          40%",
		"WARNING: the producer achieved 19000 records/s, not 20000",
	} {
		if !strings.Contains(table, want) {
			t.Errorf("table lacks %q:\n%s", want, table)
		}
	}
	out.Reset()
	renderReplication(&out, &results{runs: map[string][]map[string]float64{}})
	if out.Len() != 0 {
		t.Errorf("a run without replication benchmarks prints %q", out.String())
	}
}
