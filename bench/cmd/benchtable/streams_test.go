package main

import (
	"io"
	"strings"
	"testing"
)

const streamsSample = `BenchmarkStreamsCount/keys-1000/runnel-alos-2         	       1	        73.00 peak-heap-MB	    300000 records/s
BenchmarkStreamsCount/keys-1000/runnel-eos-2          	       1	        67.00 peak-heap-MB	    240000 records/s
BenchmarkStreamsCount/keys-1000/goka-2                	       1	       162.0 peak-heap-MB	     60000 records/s
BenchmarkStreamsCount/keys-100000/runnel-alos-2       	       1	        67.00 peak-heap-MB	    200000 records/s
BenchmarkStreamsCount/keys-100000/runnel-eos-2        	       1	        79.00 peak-heap-MB	    100000 records/s
BenchmarkStreamsCount/keys-100000/goka-2              	       1	       156.0 peak-heap-MB	     80000 records/s
BenchmarkStreamsRestore-2                             	       1	        19.00 peak-heap-MB	   1200000 records/s	    800000 start-to-restored-records/s
`

func TestStreamsTable(t *testing.T) {
	res, err := parse(strings.NewReader(streamsSample), io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	renderStreams(&out, res)
	table := out.String()
	for _, want := range []string{
		"1000    runnel-alos  300000.0   73.0          5.00× goka      PASS",
		"1000    runnel-eos   240000.0   67.0          80.00% of alos  PASS",
		"100000  runnel-alos  200000.0   67.0          2.50× goka      MISS",
		"100000  runnel-eos   100000.0   79.0          50.00% of alos  MISS",
		"100000  goka         80000.0    156.0",
		"restore from changelog: 1200000.0 records/s while restoring (800000.0 from the app's start), peak heap 19.0 MB: PASS",
	} {
		if !strings.Contains(table, want) {
			t.Errorf("table lacks %q:\n%s", want, table)
		}
	}
	var none strings.Builder
	renderStreams(&none, &results{runs: map[string][]map[string]float64{}})
	if none.Len() != 0 {
		t.Errorf("a run without streams benchmarks printed:\n%s", none.String())
	}
}
