package harness

import (
	"testing"
	"time"
)

func TestPercentile(t *testing.T) {
	var s []time.Duration
	for i := 1; i <= 1000; i++ {
		s = append(s, time.Duration(i))
	}
	for _, c := range []struct {
		q    float64
		want time.Duration
	}{{0.5, 500}, {0.99, 990}, {0.999, 999}, {1, 1000}, {0.0001, 1}} {
		if got := percentile(s, c.q); got != c.want {
			t.Errorf("percentile(1..1000, %v) = %v, want %v", c.q, got, c.want)
		}
	}
	if got := percentile(nil, 0.5); got != 0 {
		t.Errorf("percentile of no samples = %v, want 0", got)
	}
	if got := percentile([]time.Duration{7}, 0.999); got != 7 {
		t.Errorf("percentile of one sample = %v, want 7", got)
	}
}

func TestPacedSchedule(t *testing.T) {
	p := Paced{Rate: 20000, Batch: 200, Duration: 10 * time.Second}
	if p.interval() != 10*time.Millisecond || p.Records() != 200000 {
		t.Fatalf("interval %v, records %d; want 10ms, 200000", p.interval(), p.Records())
	}
}
