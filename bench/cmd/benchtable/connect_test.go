package main

import (
	"io"
	"strings"
	"testing"
)

const connectSample = `BenchmarkConnectPostgresSink/raw-copy-2         	       1	  45.00 MB/s	        10.00 cpu-%	        90.00 others-cpu-%	    240000 records/s
BenchmarkConnectPostgresSink/insert-2           	       1	  24.45 MB/s	        59.72 cpu-%	        43.80 others-cpu-%	    120000 records/s
BenchmarkConnectPostgresSink/upsert-2           	       1	  17.84 MB/s	        53.05 cpu-%	        65.84 others-cpu-%	     96000 records/s
BenchmarkConnectFileSource/kgo-producer-2       	       1	  90.00 MB/s	        80.00 cpu-%	        30.00 others-cpu-%	    500000 records/s
BenchmarkConnectFileSource/connect-2            	       1	  47.43 MB/s	       121.3 cpu-%	        15.93 others-cpu-%	    250000 records/s
`

func TestConnectTable(t *testing.T) {
	res, err := parse(strings.NewReader(connectSample), io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	renderConnect(&out, res)
	table := out.String()
	for _, want := range []string{
		"raw COPY (peer)                    240000.0",
		"topic → PostgreSQL, insert (COPY)  120000.0   24.4  60%         50% of raw COPY      PASS    44%",
		"topic → PostgreSQL, upsert         96000.0    17.8  53%         40% of raw COPY",
		"file → topic                       250000.0   47.4  121%        50% of kgo producer",
	} {
		if !strings.Contains(table, want) {
			t.Errorf("table lacks %q:\n%s", want, table)
		}
	}

	slow, err := parse(strings.NewReader(strings.Replace(connectSample, "120000 records/s", "90000 records/s", 1)), io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	out.Reset()
	renderConnect(&out, slow)
	if !strings.Contains(out.String(), "MISS") {
		t.Errorf("90k rows/s is not a MISS:\n%s", out.String())
	}

	var none strings.Builder
	renderConnect(&none, &results{runs: map[string][]map[string]float64{}})
	if none.Len() != 0 {
		t.Errorf("a run without Connect benchmarks printed:\n%s", none.String())
	}
}
