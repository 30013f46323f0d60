package main

import (
	"io"
	"strings"
	"testing"
)

const retailSample = `BenchmarkRetailDemo/generator-2         	       1	       100.0 cpu-%	        40.00 others-cpu-%	    200000 sales/s
BenchmarkRetailDemo/pipeline-2          	       1	        50.00 cpu-%	      41000 events/s	        60.00 others-cpu-%	     40000 sales/s
BenchmarkRetailDemo/round-trip-2        	       1	         6.500 p50-ms	        12.50 p99-ms
BenchmarkRetailDemo/latency-2           	       1	       180.0 p50-ms	       400.0 p99-ms
`

func TestRetailTable(t *testing.T) {
	res, err := parse(strings.NewReader(retailSample), io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	renderRetail(&out, res)
	table := out.String()
	for _, want := range []string{
		"generator alone (peer)  200000.0",
		"pipeline, end to end    40000.0   41000.0   20.0%    50%   60%",
		"produce → read_committed read (peer)  6.5     12.5",
		"sale → its stock update               180.0   400.0",
	} {
		if !strings.Contains(table, want) {
			t.Errorf("table lacks %q:\n%s", want, table)
		}
	}
	var none strings.Builder
	renderRetail(&none, &results{runs: map[string][]map[string]float64{}})
	if none.Len() != 0 {
		t.Errorf("a run without retail benchmarks printed:\n%s", none.String())
	}
}
