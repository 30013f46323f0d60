package main

import (
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

func TestPerfProduceConsume(t *testing.T) {
	c := newCLI(t)
	num := `[0-9]+(\.[0-9]+)?`
	produceSummary := regexp.MustCompile(`^500 records sent, ` + num + ` records/sec \(` + num + ` MB/sec\), ` + num + ` ms avg latency, ` + num +
		` ms max latency, ` + num + ` ms p50, ` + num + ` ms p95, ` + num + ` ms p99, ` + num + ` ms p99\.9\.\n$`)

	out, _, err := c.run("", "perf", "produce", "--topic", "bench", "--num-records", "500", "--record-size", "100")
	if err == nil || !strings.Contains(err.Error(), "--partitions-hint") {
		t.Fatalf("missing topic without --partitions-hint: %v (stdout %q)", err, out)
	}
	for _, compression := range []string{"none", "zstd"} {
		out := c.ok("", "perf", "produce", "--topic", "bench", "--num-records", "500", "--record-size", "100",
			"--partitions-hint", "3", "--compression", compression)
		if !produceSummary.MatchString(out) {
			t.Errorf("perf produce --compression %s summary: %q", compression, out)
		}
	}
	// acks=1 with a throughput cap: 100 records at 2000/s take at least 49ms.
	start := time.Now()
	out = c.ok("", "perf", "produce", "--topic", "bench", "--num-records", "100", "--record-size", "10", "--acks", "1", "--throughput", "2000")
	if !strings.HasPrefix(out, "100 records sent") {
		t.Errorf("throttled summary: %q", out)
	}
	if d := time.Since(start); d < 49*time.Millisecond {
		t.Errorf("--throughput 2000 sent 100 records in %s, want at least 49ms", d)
	}

	// Every record landed: 1100 records of the sizes asked for.
	var total int64
	rows := table(c.ok("", "topic", "describe", "bench"))
	for _, row := range rows[3:] {
		n, _ := strconv.ParseInt(row[5], 10, 64)
		total += n
	}
	if total != 1100 {
		t.Errorf("the topic holds %d records, want 1100:\n%q", total, rows)
	}

	consumeSummary := regexp.MustCompile(`^1100 records consumed, ` + num + ` records/sec \(` + num + ` MB/sec\) in ` + num +
		` s \(0\.10 MB total\); first record after [0-9]+ ms\.\n$`)
	out = c.ok("", "perf", "consume", "--topic", "bench", "--messages", "1100")
	if !consumeSummary.MatchString(out) {
		t.Errorf("perf consume summary: %q", out)
	}
	// More than the topic holds: fail after --timeout with the count.
	err = c.fail("", "perf", "consume", "--topic", "bench", "--messages", "1200", "--timeout", "300ms")
	if !strings.Contains(err.Error(), "consumed 1100 of 1200") {
		t.Errorf("perf consume past the end: %v", err)
	}
	// With a consumer group (Runnel's broker: issue 3).
	out = c.ok("", "perf", "consume", "--topic", "bench", "--messages", "1100", "--group", "perf")
	if !consumeSummary.MatchString(out) {
		t.Errorf("perf consume --group summary: %q", out)
	}
}

func TestPerfFlagErrors(t *testing.T) {
	c := newCLI(t)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"perf", "produce", "--num-records", "1"}, `required flag(s) "topic" not set`},
		{[]string{"perf", "produce", "--topic", "x", "--num-records", "0"}, "want a positive count"},
		{[]string{"perf", "produce", "--topic", "x", "--num-records", "1", "--throughput", "0"}, "--throughput 0"},
		{[]string{"perf", "consume", "--topic", "x"}, `required flag(s) "messages" not set`},
		{[]string{"perf", "consume", "--topic", "x", "--messages", "1"}, `topic "x" does not exist`},
	} {
		if err := c.fail("", tc.args...); !strings.Contains(err.Error(), tc.want) {
			t.Errorf("runnel %s: got %q, want %q", strings.Join(tc.args, " "), err, tc.want)
		}
	}
}

func TestPerfStats(t *testing.T) {
	t0 := time.Unix(1000, 0)
	s := newPerfStats(1000, maxLatencySamples, t0)
	for i := 1; i <= 1000; i++ {
		s.record(1<<10, time.Duration(i)*time.Millisecond)
	}
	want := "1000 records sent, 500.0 records/sec (0.49 MB/sec), 500.50 ms avg latency, 1000.00 ms max latency, " +
		"501.00 ms p50, 951.00 ms p95, 991.00 ms p99, 1000.00 ms p99.9."
	if got := s.summary(t0.Add(2 * time.Second)); got != want {
		t.Errorf("summary:\ngot  %s\nwant %s", got, want)
	}
	w := s.takeWindow(t0.Add(time.Second))
	if w.records != 1000 || s.takeWindow(t0.Add(2*time.Second)).records != 0 {
		t.Error("takeWindow did not start a new window")
	}

	// Past maxSamples only every stride-th latency is kept: here 1, 4, 7, 10.
	s = newPerfStats(10, 4, t0)
	for i := 1; i <= 10; i++ {
		s.record(1, time.Duration(i))
	}
	if want := []time.Duration{1, 4, 7, 10}; !slices.Equal(s.mu.samples, want) {
		t.Errorf("kept samples %v, want %v", s.mu.samples, want)
	}
}

func TestParseFrom(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want fromSpec
	}{
		{"beginning", fromSpec{kind: fromStart}},
		{"earliest", fromSpec{kind: fromStart}},
		{"END", fromSpec{kind: fromEnd}},
		{"latest", fromSpec{kind: fromEnd}},
		{"0", fromSpec{kind: fromOffset, n: 0}},
		{"1714564800000", fromSpec{kind: fromOffset, n: 1714564800000}}, // a bare number is an offset
		{"-5", fromSpec{kind: fromRelative, n: 5}},
		{"@1714564800000", fromSpec{kind: fromTime, n: 1714564800000}},
		{"s@1714564800000", fromSpec{kind: fromTime, n: 1714564800000}},
		{"2024-05-01T12:00:00Z", fromSpec{kind: fromTime, n: 1714564800000}},
		{"2024-05-01T14:00:00.250+02:00", fromSpec{kind: fromTime, n: 1714564800250}},
	} {
		got, err := parseFrom(tc.in)
		if err != nil || got != tc.want {
			t.Errorf("parseFrom(%q) = %+v, %v; want %+v", tc.in, got, err, tc.want)
		}
	}
	for _, bad := range []string{"", "yesterday", "@", "@-1", "s@x", "2024-05-01", "1.5"} {
		if _, err := parseFrom(bad); err == nil {
			t.Errorf("parseFrom(%q) succeeded, want an error", bad)
		}
	}
}
