package main

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
)

// renderCPU writes where the CPU and memory went in the fair pair's runs:
// per scenario, CPU-seconds per GB of record values of each broker process
// and of the benchmark process (the client alone), the client's garbage
// collections, and each broker's peak RSS. CPU per byte moves less with
// the machine's load than MB/s does. It writes nothing without runs of
// the process targets.
func renderCPU(w io.Writer, r *results) {
	var fair pair
	for _, p := range pairs {
		if p.fair {
			fair = p
		}
	}
	type row struct {
		op, size, parts string
		names           [2]string // runnel, kfake
	}
	var rows []row
	any := false
	for _, op := range ops {
		for _, size := range sizes {
			for _, p := range parts {
				rw := row{op: strings.ToLower(op), size: size, parts: p}
				for i, tg := range []string{fair.runnel, fair.kfake} {
					rw.names[i] = fmt.Sprintf("Benchmark%s/%s/%s/%s", op, tg, size, p)
					if _, ok := r.metric(rw.names[i], "broker-cpu-%"); ok {
						any = true
					}
				}
				rows = append(rows, rw)
			}
		}
	}
	if !any {
		return
	}
	fmt.Fprintf(w, "\n== Where the CPU went, %s pair: CPU-seconds per GB of record values (median of runs) ==\n", fair.label)
	fmt.Fprintf(w, "broker = the broker process; client = the benchmark process (franz-go only); gcs = the client's garbage collections per run\n\n")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "op\tsize\tparts\trunnel broker\tkfake broker\trunnel client\tkfake client\trunnel gcs\tkfake gcs\trunnel VmHWM MiB\tkfake VmHWM MiB")
	for _, rw := range rows {
		var cols []string
		for _, n := range rw.names {
			cols = append(cols, hundredths(r.perGB(n, "broker-cpu-%")))
		}
		for _, n := range rw.names {
			cols = append(cols, hundredths(r.perGB(n, "cpu-%")))
		}
		for _, n := range rw.names {
			v, ok := r.metric(n, "gcs")
			cols = append(cols, whole(v, ok))
		}
		for _, n := range rw.names {
			v, ok := r.metric(n, "broker-VmHWM-MiB")
			cols = append(cols, whole(v, ok))
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", rw.op, rw.size, rw.parts, strings.Join(cols, "\t"))
	}
	tw.Flush()
}

// perGB is the median over the runs of name of CPU-seconds per GB of
// record values, from a CPU percentage (100 = one core over the run) and
// the run's MB/s.
func (r *results) perGB(name, cpuUnit string) (float64, bool) {
	var vs []float64
	for _, run := range r.runs[name] {
		cpu, okC := run[cpuUnit]
		mb, okM := run["MB/s"]
		if okC && okM && mb > 0 {
			vs = append(vs, cpu/100/(mb/1000))
		}
	}
	if len(vs) == 0 {
		return 0, false
	}
	return median(vs), true
}

func whole(v float64, ok bool) string {
	if !ok {
		return "-"
	}
	return fmt.Sprintf("%.0f", v)
}

func hundredths(v float64, ok bool) string {
	if !ok {
		return "-"
	}
	return fmt.Sprintf("%.2f", v)
}
