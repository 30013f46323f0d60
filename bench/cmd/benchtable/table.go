package main

import (
	"bufio"
	"fmt"
	"io"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
)

// Targets from the issue.
const (
	minKfakeRatio = 1.5 // Runnel MB/s ≥ 1.5 × kfake MB/s, produce and consume
	minRawShare   = 0.5 // Runnel MB/s ≥ 50% of the raw limit, 1 KB records
	maxBrokerRSS  = 512 // MiB of VmHWM while memcheck runs

	// busyWarning is the CPU (percent of one core) other processes may
	// use during a run before the table warns that it was not measured
	// on a quiet machine.
	busyWarning = 25
)

// The scenarios the table expects, in its order.
var (
	ops   = []string{"Produce", "Consume"}
	sizes = []string{"1KB", "100B"}
	parts = []string{"1p", "8p"}
	// pairs are the ways Runnel and kfake are compared, the fair one
	// first: each broker as a process of its own, so the benchmark
	// process holds only the client, the same for both. In-process, the
	// broker shares the client's heap and garbage collector, and kfake's
	// in-memory data slows the client's collections down (README.md).
	pairs = []pair{
		{runnel: "runnel-proc", kfake: "kfake-proc", label: "process", fair: true},
		{runnel: "runnel", kfake: "kfake", label: "in-process"},
	}
)

// pair is one way of running both brokers.
type pair struct {
	runnel, kfake, label string
	// fair pairs are the ones the targets are judged on.
	fair bool
}

// results is what parse read: each benchmark's runs (more than one with
// -count) by name without the GOMAXPROCS suffix, and the failures seen.
type results struct {
	runs     map[string][]map[string]float64
	failures []string
}

// benchLine is a result line: name (its -N suffix dropped), iterations,
// then value-unit pairs.
var benchLine = regexp.MustCompile(`^(Benchmark\S+?)(?:-\d+)?\s+(\d+)\s+(\S.*)$`)

// parse reads go test -bench and memcheck output, copying it to echo.
func parse(r io.Reader, echo io.Writer) (*results, error) {
	res := &results{runs: map[string][]map[string]float64{}}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 4<<20)
	inFailure := 0 // lines of detail still to keep after a failure line
	for sc.Scan() {
		line := sc.Text()
		fmt.Fprintln(echo, line)
		trimmed := strings.TrimSpace(line)
		switch {
		case strings.Contains(line, "--- FAIL:"), strings.HasPrefix(trimmed, "FAIL"),
			strings.HasPrefix(trimmed, "panic:"), strings.HasPrefix(trimmed, "memcheck: FAIL"):
			res.failures = append(res.failures, trimmed)
			inFailure = 12
			continue
		case inFailure > 0 && line != trimmed && trimmed != "":
			res.failures = append(res.failures, "    "+trimmed)
			inFailure--
			continue
		}
		inFailure = 0
		m := benchLine.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		f := strings.Fields(m[3])
		if len(f)%2 != 0 {
			continue
		}
		vals := map[string]float64{}
		for i := 0; i < len(f); i += 2 {
			v, err := strconv.ParseFloat(f[i], 64)
			if err != nil {
				vals = nil
				break
			}
			vals[f[i+1]] = v
		}
		if vals != nil {
			res.runs[m[1]] = append(res.runs[m[1]], vals)
		}
	}
	return res, sc.Err()
}

// metric is the median of unit over the runs of name; ok is false when
// there is none.
func (r *results) metric(name, unit string) (float64, bool) {
	var vs []float64
	for _, run := range r.runs[name] {
		if v, ok := run[unit]; ok {
			vs = append(vs, v)
		}
	}
	if len(vs) == 0 {
		return 0, false
	}
	return median(vs), true
}

// median of vs, which it sorts; vs must not be empty.
func median(vs []float64) float64 {
	slices.Sort(vs)
	if len(vs)%2 == 1 {
		return vs[len(vs)/2]
	}
	return (vs[len(vs)/2-1] + vs[len(vs)/2]) / 2
}

// ratio is a's unit over b's: the median of the per-run ratios when both
// have the same number of runs (run i of each comes from the same round,
// minutes apart at most, so the machine's load changes less within a pair
// than across rounds), else the ratio of the medians.
func (r *results) ratio(a, b, unit string) (float64, bool) {
	ra, rb := r.runs[a], r.runs[b]
	if len(ra) > 0 && len(ra) == len(rb) {
		var vs []float64
		for i := range ra {
			va, okA := ra[i][unit]
			vb, okB := rb[i][unit]
			if !okA || !okB || vb <= 0 {
				vs = nil
				break
			}
			vs = append(vs, va/vb)
		}
		if len(vs) > 0 {
			return median(vs), true
		}
	}
	va, okA := r.metric(a, unit)
	vb, okB := r.metric(b, unit)
	if !okA || !okB || vb <= 0 {
		return 0, false
	}
	return va / vb, true
}

// otherLoad is the most CPU that other processes used during the runs of
// names (median per name), in percent of one core.
func (r *results) otherLoad(names ...string) float64 {
	var most float64
	for _, n := range names {
		if v, ok := r.metric(n, "others-cpu-%"); ok {
			most = max(most, v)
		}
	}
	return most
}

// summary counts the verdicts of a table.
type summary struct{ passed, missed, missing int }

// check is one target's verdict: PASS, MISS, or "-" without the numbers.
func (s *summary) check(have bool, ok bool) string {
	switch {
	case !have:
		s.missing++
		return "-"
	case ok:
		s.passed++
		return "PASS"
	}
	s.missed++
	return "MISS"
}

// render writes the tables and returns the verdict counts that decide
// -strict: the fair pair's and the memory check's.
func render(w io.Writer, r *results) summary {
	fmt.Fprintf(w, "\n== Runnel throughput: MB/s = 10^6 bytes of record values per second (median of runs) ==\n")
	fmt.Fprintf(w, "targets: Runnel ≥ %.1f× kfake (produce and consume); Runnel ≥ %.0f%% of raw (1 KB records)\n", minKfakeRatio, 100*minRawShare)
	fmt.Fprintf(w, "pair: process = runnel broker vs kfakebroker, each its own process (the fair comparison: the client is alone in the benchmark process);\n")
	fmt.Fprintf(w, "      in-process = both inside the benchmark process (the broker's heap paces the client's garbage collector)\n\n")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "op\tsize\tparts\tpair\trunnel MB/s\tkfake MB/s\traw MB/s\trunnel/kfake\trunnel/raw\t≥1.5× kfake\t≥50% raw\tother load")
	verdicts := make([]summary, len(pairs))
	busy := 0.0
	for _, op := range ops {
		for _, size := range sizes {
			rawName := "BenchmarkRaw/" + strings.ToLower(op) + "/" + size
			raw, haveRaw := r.metric(rawName, "MB/s")
			for _, p := range parts {
				for i, pr := range pairs {
					name := fmt.Sprintf("Benchmark%s/%s/%s/%s", op, pr.runnel, size, p)
					kfakeName := fmt.Sprintf("Benchmark%s/%s/%s/%s", op, pr.kfake, size, p)
					mb, have := r.metric(name, "MB/s")
					kfake, haveKfake := r.metric(kfakeName, "MB/s")
					kr, haveKr := r.ratio(name, kfakeName, "MB/s")
					load := r.otherLoad(name, kfakeName, rawName)
					busy = max(busy, load)
					s := &verdicts[i]
					kRatio, rawShare := "-", "-"
					if haveKr {
						kRatio = fmt.Sprintf("%.2f×", kr)
					}
					if have && haveRaw && raw > 0 {
						rawShare = fmt.Sprintf("%.0f%%", 100*mb/raw)
					}
					kVerdict := s.check(haveKr, kr >= minKfakeRatio)
					rawVerdict := "n/a"
					if size == "1KB" {
						rawVerdict = s.check(have && haveRaw, raw > 0 && mb/raw >= minRawShare)
					}
					fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%.0f%%\n",
						strings.ToLower(op), size, p, pr.label,
						num(mb, have), num(kfake, haveKfake), num(raw, haveRaw),
						kRatio, rawShare, kVerdict, rawVerdict, load)
				}
			}
		}
	}
	tw.Flush()
	fmt.Fprintf(w, "runnel/kfake: median of the per-round ratios (each corner runs its targets back to back in every round)\n")
	fmt.Fprintf(w, "other load: CPU used by other processes during the row's runs (the most of runnel, kfake, raw; 100%% = one core)\n")
	if busy >= busyWarning {
		fmt.Fprintf(w, "WARNING: other processes used up to %.0f%% CPU during some runs: those numbers and ratios are not trustworthy; rerun on a quiet machine\n", busy)
	}
	renderCPU(w, r)

	fmt.Fprintf(w, "\n== Broker memory: `runnel broker` process while bytes flow through (produce, then consume) ==\n")
	var mem summary
	names := memcheckNames(r)
	if len(names) == 0 {
		fmt.Fprintf(w, "no memcheck result (go run ./bench/cmd/memcheck)\n")
		mem.check(false, false)
	}
	for _, name := range names {
		hwm, _ := r.metric(name, "VmHWM-MiB")
		rss, _ := r.metric(name, "VmRSS-max-MiB")
		disk, _ := r.metric(name, "disk-max-MiB")
		mb, _ := r.metric(name, "MB")
		pr, _ := r.metric(name, "produce-MB/s")
		co, _ := r.metric(name, "consume-MB/s")
		warn, _ := r.metric(name, "client-warnings")
		fmt.Fprintf(w, "%s: %.2f GB through (produce %.0f MB/s, consume %.0f MB/s); peak RSS (VmHWM) %.0f MiB, max sampled VmRSS %.0f MiB; data dir peak %.0f MiB; client warnings %.0f\n",
			strings.TrimPrefix(name, "BenchmarkMemcheck/"), mb/1000, pr, co, hwm, rss, disk, warn)
		fmt.Fprintf(w, "peak RSS < %d MiB: %s\n", maxBrokerRSS, mem.check(true, hwm < maxBrokerRSS))
	}

	renderGroups(w, r)
	renderReplication(w, r)
	renderTxn(w, r)
	renderStreams(w, r)
	renderConnect(w, r)
	renderRetail(w, r)

	fmt.Fprintf(w, "\n== Summary ==\n")
	var fair summary
	for i, pr := range pairs {
		v := verdicts[i]
		what := "Runnel vs kfake, both in the benchmark process:"
		if pr.fair {
			what = "Runnel vs kfake, each its own process (fair):"
			fair.passed += v.passed
			fair.missed += v.missed
			fair.missing += v.missing
		}
		fmt.Fprintf(w, "%-48s %d PASS, %d MISS, %d without numbers\n", what, v.passed, v.missed, v.missing)
	}
	fmt.Fprintf(w, "%-48s %d PASS, %d MISS, %d without numbers\n", "broker memory:", mem.passed, mem.missed, mem.missing)
	if len(r.failures) > 0 {
		fmt.Fprintf(w, "\nFAILURES in the run (the numbers above are incomplete):\n")
		for _, f := range r.failures {
			fmt.Fprintln(w, "  "+f)
		}
	}
	return summary{
		passed:  fair.passed + mem.passed,
		missed:  fair.missed + mem.missed,
		missing: fair.missing + mem.missing,
	}
}

func memcheckNames(r *results) []string {
	var names []string
	for name := range r.runs {
		if strings.HasPrefix(name, "BenchmarkMemcheck/") {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	return names
}

func num(v float64, ok bool) string {
	if !ok {
		return "-"
	}
	return fmt.Sprintf("%.1f", v)
}
