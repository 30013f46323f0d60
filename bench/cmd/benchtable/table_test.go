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
BenchmarkProduce/runnel-proc/1KB/1p-2    	  200000	      5000 ns/op	       100.0 MB/s	     90000 records/s	    50.0 cpu-%	    80.0 broker-cpu-%	 60.0 broker-VmHWM-MiB	0 client-warnings
BenchmarkProduce/kfake/1KB/1p-2          	  200000	      5000 ns/op	       100.0 MB/s	     90000 records/s	   150.0 cpu-%	  40 others-cpu-%	       0 client-warnings
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
	if v, ok := res.metric("BenchmarkProduce/runnel-proc/1KB/1p", "broker-cpu-%"); !ok || v != 80 {
		t.Fatalf("broker-cpu-%% = %v, %v; want 80", v, ok)
	}
	var out strings.Builder
	sum := render(&out, res)
	table := out.String()
	for _, want := range []string{
		"produce  1KB   1p     in-process  200.0        100.0       300.0     2.00×         67%         PASS         PASS      40%",
		"produce  1KB   1p     process     100.0        100.0       300.0     1.00×         33%         MISS         MISS      40%",
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
	if sum.passed != 3 || sum.missed != 2 {
		t.Errorf("summary %+v, want 3 passed and 2 missed", sum)
	}
}
