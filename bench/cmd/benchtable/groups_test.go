package main

import (
	"io"
	"strings"
	"testing"
)

const groupSample = `BenchmarkRebalance/runnel/leave/2members-2   	       3	 495473252 ns/op	       250.0 ms/reassign
BenchmarkRebalance/kfake/leave/2members-2    	       3	 495473252 ns/op	       500.0 ms/reassign
BenchmarkCommit/runnel/8clients-2            	    1000	    143140 ns/op	      1000 commits/s
BenchmarkCommit/kfake/8clients-2             	    1000	    143140 ns/op	      4000 commits/s
`

func TestGroupTable(t *testing.T) {
	res, err := parse(strings.NewReader(groupSample), io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	renderGroups(&out, res)
	table := out.String()
	for _, want := range []string{
		"reassign after leave, 2 members   ms/reassign  250.0   500.0   2.00×",
		"offset commits, 8 client(s)       commits/s    1000.0  4000.0  0.25×",
		"reassign after kill, 32 members   ms/reassign  -       -       -",
	} {
		if !strings.Contains(table, want) {
			t.Errorf("table lacks %q:\n%s", want, table)
		}
	}
	out.Reset()
	renderGroups(&out, &results{runs: map[string][]map[string]float64{}})
	if out.Len() != 0 {
		t.Errorf("a run without group benchmarks prints %q", out.String())
	}
}
