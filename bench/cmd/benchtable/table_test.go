package main

import (
	"io"
	"strings"
	"testing"
)

const sample = `goos: linux
goarch: amd64
pkg: github.com/runnel-io/runnel/bench
BenchmarkProduce/runnel/1KB/1p-2         	  200000	      5000 ns/op	       300.0 MB/s	    290000 records/s	   150.0 cpu-%	         0 client-warnings
BenchmarkProduce/runnel/1KB/1p-2         	  200000	      5000 ns/op	       200.0 MB/s	    190000 records/s	   150.0 cpu-%	         0 client-warnings
BenchmarkProduce/runnel/1KB/1p-2         	  200000	      5000 ns/op	       100.0 MB/s	     90000 records/s	   150.0 cpu-%	         0 client-warnings
BenchmarkProduce/runnel-proc/1KB/1p-2    	  200000	      5000 ns/op	       100.0 MB/s	     90000 records/s	    50.0 cpu-%	    12 gcs	    80.0 broker-cpu-%	 60.0 broker-VmHWM-MiB	0 client-warnings
BenchmarkProduce/kfake-proc/1KB/1p-2     	  200000	      5000 ns/op	        50.0 MB/s	     90000 records/s	    50.0 cpu-%	    10 gcs	    90.0 broker-cpu-%	 400.0 broker-VmHWM-MiB	0 client-warnings
BenchmarkProduce/kfake/1KB/1p-2          	  200000	      5000 ns/op	       100.0 MB/s	     90000 records/s	   150.0 cpu-%	  40 others-cpu-%	       0 client-warnings
BenchmarkProduce/runnel-proc/1KB/1p-2    	  200000	      5000 ns/op	       300.0 MB/s	     90000 records/s	    50.0 cpu-%	    14 gcs	    90.0 broker-cpu-%	 60.0 broker-VmHWM-MiB	0 client-warnings
BenchmarkProduce/kfake-proc/1KB/1p-2     	  200000	      5000 ns/op	       150.0 MB/s	     90000 records/s	    50.0 cpu-%	    10 gcs	    90.0 broker-cpu-%	 410.0 broker-VmHWM-MiB	0 client-warnings
BenchmarkProduce/runnel-proc/1KB/1p-2    	  200000	      5000 ns/op	       200.0 MB/s	     90000 records/s	    50.0 cpu-%	    16 gcs	    90.0 broker-cpu-%	 60.0 broker-VmHWM-MiB	0 client-warnings
BenchmarkProduce/kfake-proc/1KB/1p-2     	  200000	      5000 ns/op	       400.0 MB/s	     90000 records/s	    50.0 cpu-%	    10 gcs	    90.0 broker-cpu-%	 420.0 broker-VmHWM-MiB	0 client-warnings
BenchmarkRaw/produce/1KB-2               	 1000000	      1000 ns/op	       300.0 MB/s	   1000000 records/s	    40.0 cpu-%
BenchmarkConsume/runnel/100B/8p-2        	--- FAIL: BenchmarkConsume/runnel/100B/8p-2
    bench_test.go:200: consume 100 records: fetch t/3 at offset 7: NOT_LEADER_FOR_PARTITION
FAIL
BenchmarkMemcheck/1KB/8p 	       1	20000000000 ns/op	     10000 MB	   300.0 VmHWM-MiB	   290.0 VmRSS-max-MiB	 2100 disk-max-MiB	 500 produce-MB/s	 900 consume-MB/s	 0 client-warnings
`

func TestTable(t *testing.T) {
	res, err := parse(strings.NewReader(sample), io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if v, ok := res.metric("BenchmarkProduce/runnel/1KB/1p", "MB/s"); !ok || v != 200 {
		t.Fatalf("median MB/s = %v, %v; want 200", v, ok)
	}
	if v, ok := res.metric("BenchmarkProduce/runnel-proc/1KB/1p", "broker-cpu-%"); !ok || v != 90 {
		t.Fatalf("broker-cpu-%% = %v, %v; want 90", v, ok)
	}
	// Per round 2.0, 2.0, 0.5: the median is 2.0 (the medians' ratio
	// would be 200/150).
	if v, ok := res.ratio("BenchmarkProduce/runnel-proc/1KB/1p", "BenchmarkProduce/kfake-proc/1KB/1p", "MB/s"); !ok || v != 2 {
		t.Fatalf("per-round ratio = %v, %v; want 2", v, ok)
	}
	// Rounds that do not pair up (3 runs against 1): the medians' ratio.
	if v, ok := res.ratio("BenchmarkProduce/runnel/1KB/1p", "BenchmarkProduce/kfake/1KB/1p", "MB/s"); !ok || v != 2 {
		t.Fatalf("ratio of medians = %v, %v; want 2", v, ok)
	}
	var out strings.Builder
	sum := render(&out, res)
	table := out.String()
	for _, want := range []string{
		"produce  1KB   1p     process     200.0        150.0       300.0     2.00×         67%         PASS         PASS      0%",
		"produce  1KB   1p     in-process  200.0        100.0       300.0     2.00×         67%         PASS         PASS      40%",
		// broker CPU-s/GB: runnel-proc 0.9/0.2 = 4.5 (runs 8, 3, 4.5), kfake-proc 0.9/0.15 = 6;
		// client 0.5/0.2 and 0.5/0.15; gcs 14 and 10; VmHWM 60 and 410.
		"produce  1KB   1p     4.50           6.00          2.50           3.33          14          10         60                410",
		"Runnel vs kfake, each its own process (fair):    2 PASS, 0 MISS, 10 without numbers",
		"WARNING: other processes used up to 40% CPU",
		"peak RSS < 512 MiB: PASS",
		"NOT_LEADER_FOR_PARTITION",
		"FAILURES",
	} {
		if !strings.Contains(table, want) {
			t.Errorf("table lacks %q:\n%s", want, table)
		}
	}
	if len(res.failures) == 0 {
		t.Error("failures not detected")
	}
	// -strict counts the fair pair and memory only.
	if sum.passed != 3 || sum.missed != 0 || sum.missing != 10 {
		t.Errorf("summary %+v, want 3 passed, 0 missed, 10 missing", sum)
	}
}
