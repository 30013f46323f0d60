// Command benchtable reads the output of `go test -bench` for Runnel's
// benchmarks (package bench) and of cmd/memcheck on stdin, passes it
// through, and then prints a table: per scenario Runnel's MB/s beside
// kfake's and the raw limit's, the ratios, and PASS or MISS against the
// targets (Runnel ≥ 1.5× kfake; Runnel ≥ 50% of raw with 1 KB records;
// broker peak RSS < 512 MiB while memcheck's bytes flow through).
//
// Runnel and kfake are paired two ways: each broker as a process of its own
// (runnel-proc vs kfake-proc), the fair pair the targets are judged on, and
// both inside the benchmark process (runnel vs kfake), still shown. For the
// process pair it also prints CPU-seconds per GB of each broker and of the
// client, the client's garbage collections and each broker's peak RSS.
// Then the consumer-group table and the replication table: RF=1 and RF=3
// produce MB/s on one three-node cluster with their ratio, and RF=3
// end-to-end latency percentiles at 20,000 records/s. Last the
// transactions table: per target, idempotent and transactional produce
// MB/s (committing every 100 ms and every 10,000 records) and their ratios.
//
// It exits 1 when the input shows a failure (a benchmark that failed, a
// panic, a memcheck error), so `make bench` fails loudly; with -strict also
// when a target of the fair pair or the memory check is missed or has no
// result.
//
// Usage:
//
//	{ go test -run '^$' -bench . ./bench; go run ./bench/cmd/memcheck; } 2>&1 | go run ./bench/cmd/benchtable
package main

import (
	"bufio"
	"flag"
	"fmt"
	"io"
	"os"
)

func main() {
	quiet := flag.Bool("quiet", false, "do not pass the input through to stdout")
	strict := flag.Bool("strict", false, "exit 1 when a target is missed or a scenario has no result")
	flag.Parse()
	var echo io.Writer = os.Stdout
	if *quiet {
		echo = io.Discard
	}
	res, err := parse(os.Stdin, echo)
	if err != nil {
		fmt.Fprintln(os.Stderr, "benchtable:", err)
		os.Exit(2)
	}
	w := bufio.NewWriter(os.Stdout)
	sum := render(w, res)
	w.Flush()
	switch {
	case len(res.failures) > 0:
		os.Exit(1)
	case *strict && (sum.missed > 0 || sum.missing > 0):
		os.Exit(1)
	}
}
