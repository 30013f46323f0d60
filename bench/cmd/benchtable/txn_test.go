package main

import (
	"io"
	"strings"
	"testing"
)

const txnSample = `BenchmarkTxnProduce/runnel/idempotent/1KB/8p-2      	  100000	     10000 ns/op	 200.00 MB/s	 195312 records/s	  10 others-cpu-%
BenchmarkTxnProduce/runnel/commit-100ms/1KB/8p-2    	  100000	     10000 ns/op	 100.00 MB/s	  97656 records/s	 5.0 commits/s	 19531 records/commit	 30.0 endtxn-ms	  20 others-cpu-%
BenchmarkTxnProduce/runnel/commit-10k/1KB/8p-2      	  100000	     10000 ns/op	 150.00 MB/s	 146484 records/s	 14.6 commits/s	 10000 records/commit	  10 others-cpu-%
BenchmarkTxnProduce/kfake/idempotent/1KB/8p-2       	  100000	     10000 ns/op	 100.00 MB/s	  97656 records/s	  10 others-cpu-%
BenchmarkTxnProduce/kfake/commit-100ms/1KB/8p-2     	  100000	     10000 ns/op	  50.00 MB/s	  48828 records/s	 2.0 commits/s	 24414 records/commit	  10 others-cpu-%
BenchmarkTxnProduce/runnel/idempotent/1KB/8p-2      	  100000	     10000 ns/op	 100.00 MB/s	  97656 records/s	  10 others-cpu-%
BenchmarkTxnProduce/runnel/commit-100ms/1KB/8p-2    	  100000	     10000 ns/op	  80.00 MB/s	  78125 records/s	 4.0 commits/s	 19531 records/commit	 40.0 endtxn-ms	  20 others-cpu-%
BenchmarkTxnProduce/runnel/commit-10k/1KB/8p-2      	  100000	     10000 ns/op	  50.00 MB/s	  48828 records/s	  4.8 commits/s	 10000 records/commit	  10 others-cpu-%
BenchmarkTxnProduce/kfake/idempotent/1KB/8p-2       	  100000	     10000 ns/op	 100.00 MB/s	  97656 records/s	  10 others-cpu-%
BenchmarkTxnProduce/kfake/commit-100ms/1KB/8p-2     	  100000	     10000 ns/op	  50.00 MB/s	  48828 records/s	 2.0 commits/s	 24414 records/commit	  10 others-cpu-%
`

func TestTxnTable(t *testing.T) {
	res, err := parse(strings.NewReader(txnSample), io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	renderTxn(&out, res)
	table := out.String()
	for _, want := range []string{
		// medians 150, 90 and 100; per-round ratios 0.5 and 0.8, 0.75 and 0.5.
		"runnel  idempotent    150.0  146484.0   -          -               -                         1.50×         10%",
		"runnel  commit-100ms  90.0   87890.5    4.5        19531.0         35.0       0.65×          1.80×         20%",
		"runnel  commit-10k    100.0  97656.0    9.7        10000.0         -          0.62×          -             10%",
		"kfake   commit-100ms  50.0   48828.0    2.0        24414.0         -          0.50×                        10%",
		"kfake   commit-10k    -      -          -          -               -          -                            0%",
	} {
		if !strings.Contains(table, want) {
			t.Errorf("table lacks %q:\n%s", want, table)
		}
	}
	if strings.Contains(table, "runnel-proc") {
		t.Errorf("a target that did not run has rows:\n%s", table)
	}
	out.Reset()
	renderTxn(&out, &results{runs: map[string][]map[string]float64{}})
	if out.Len() != 0 {
		t.Errorf("a run without transaction benchmarks prints %q", out.String())
	}
}
