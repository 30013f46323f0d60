package main

import (
	"fmt"
	"io"
	"slices"
	"sync"
	"time"
)

// maxLatencySamples bounds the memory for percentiles: like Kafka's
// producer perf test, every k-th latency is kept so that at most this many
// are.
const maxLatencySamples = 500_000

// perfStats accumulates what the perf commands report: totals for the final
// summary and a window for the progress lines. Callers record from client
// callbacks; the reporter reads from its own goroutine.
type perfStats struct {
	start  time.Time
	stride int64 // keep every stride-th latency sample

	mu struct {
		sync.Mutex
		total   window
		win     window
		samples []time.Duration
	}
}

// window counts records, bytes and latencies over a stretch of time.
type window struct {
	start   time.Time
	records int64
	bytes   int64
	latSum  time.Duration
	latMax  time.Duration
}

// newPerfStats returns stats for a run of expected records that keeps at
// most maxSamples latencies (maxLatencySamples outside tests).
func newPerfStats(expected, maxSamples int64, now time.Time) *perfStats {
	s := &perfStats{start: now, stride: max(1, (expected+maxSamples-1)/maxSamples)}
	s.mu.total.start, s.mu.win.start = now, now
	s.mu.samples = make([]time.Duration, 0, min(expected, maxSamples))
	return s
}

// record counts one record of n bytes; lat < 0 means no latency is known.
func (s *perfStats) record(n int, lat time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.mu.total.add(n, lat)
	s.mu.win.add(n, lat)
	if lat >= 0 && (s.mu.total.records-1)%s.stride == 0 && len(s.mu.samples) < cap(s.mu.samples) {
		s.mu.samples = append(s.mu.samples, lat)
	}
}

// records returns how many records were counted.
func (s *perfStats) records() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.mu.total.records
}

func (w *window) add(n int, lat time.Duration) {
	w.records++
	w.bytes += int64(n)
	if lat >= 0 {
		w.latSum += lat
		w.latMax = max(w.latMax, lat)
	}
}

// takeWindow returns the current window and starts a new one at now.
func (s *perfStats) takeWindow(now time.Time) window {
	s.mu.Lock()
	defer s.mu.Unlock()
	w := s.mu.win
	s.mu.win = window{start: now}
	return w
}

// format renders a window like Kafka's perf tools do, ending at now.
func (w window) format(verb string, now time.Time, latency bool) string {
	secs := max(now.Sub(w.start).Seconds(), 1e-9)
	line := fmt.Sprintf("%d records %s, %.1f records/sec (%.2f MB/sec)",
		w.records, verb, float64(w.records)/secs, float64(w.bytes)/(1<<20)/secs)
	if latency && w.records > 0 {
		line += fmt.Sprintf(", %.2f ms avg latency, %.2f ms max latency",
			ms(w.latSum/time.Duration(w.records)), ms(w.latMax))
	}
	return line
}

// consumeSummary is the final line of perf consume: totals over the whole
// run, connecting (and joining a group) included, and when the first
// record arrived.
func (s *perfStats) consumeSummary(now, firstRecord time.Time) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	t := s.mu.total
	line := fmt.Sprintf("%s in %.3f s (%.2f MB total)", t.format("consumed", now, false), now.Sub(t.start).Seconds(), float64(t.bytes)/(1<<20))
	if t.records == 0 {
		return line + "."
	}
	return line + fmt.Sprintf("; first record after %d ms.", firstRecord.Sub(t.start).Milliseconds())
}

// summary is the final line of perf produce, with latency percentiles.
func (s *perfStats) summary(now time.Time) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	line := s.mu.total.format("sent", now, true)
	if len(s.mu.samples) == 0 {
		return line + "."
	}
	sorted := slices.Clone(s.mu.samples)
	slices.Sort(sorted)
	pct := func(q float64) float64 { return ms(sorted[min(int(q*float64(len(sorted))), len(sorted)-1)]) }
	return line + fmt.Sprintf(", %.2f ms p50, %.2f ms p95, %.2f ms p99, %.2f ms p99.9.",
		pct(0.50), pct(0.95), pct(0.99), pct(0.999))
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// progress prints a window of stats every interval until stop is called:
// one line rewritten in place on a terminal, periodic lines otherwise.
type progress struct {
	stop func() // idempotent; waits for the reporter goroutine and clears a terminal line
}

func startProgress(w io.Writer, s *perfStats, verb string, latency bool, interval time.Duration) progress {
	tty := isTerminal(w)
	if tty {
		interval = min(interval, 500*time.Millisecond)
	}
	quit := make(chan struct{})
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		t := time.NewTicker(interval)
		defer t.Stop()
		for {
			select {
			case <-quit:
				if tty {
					fmt.Fprint(w, "\r\x1b[K")
				}
				return
			case now := <-t.C:
				line := s.takeWindow(now).format(verb, now, latency)
				if tty {
					fmt.Fprintf(w, "\r\x1b[K%s", line)
				} else {
					fmt.Fprintln(w, line)
				}
			}
		}
	}()
	var once sync.Once
	return progress{stop: func() {
		once.Do(func() { close(quit) })
		<-finished
	}}
}
