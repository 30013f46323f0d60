package main

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"
)

// reference computes the final counts from views as Kafka Streams
// defines them: stream time is the largest event time seen so far; a view
// counts unless its window's end plus grace is at or before stream time;
// a window's count is final once stream time reaches its end plus grace.
func reference(start time.Time) []string {
	type win struct {
		user  string
		start time.Duration
	}
	counts := map[win]int{}
	var streamTime time.Duration
	for _, v := range views {
		streamTime = max(streamTime, v.at)
		w := win{v.user, v.at.Truncate(window)}
		if w.start+window+grace <= streamTime {
			continue // too late
		}
		counts[w]++
	}
	var out []string
	for w, n := range counts {
		if w.start+window+grace <= streamTime {
			out = append(out, fmt.Sprintf("%s %s %d", w.user, start.Add(w.start).Format("15:04:05"), n))
		}
	}
	sort.Strings(out)
	return out
}

// TestPageViews runs the example against its embedded broker and checks
// its final counts against the reference computed from the same input.
func TestPageViews(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var out strings.Builder
	start := time.Now().UTC().Truncate(time.Hour)
	if err := run(ctx, "", start, &out); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, line := range strings.Split(strings.TrimSpace(out.String()), "\n") {
		var user, span string
		var n int
		if _, err := fmt.Sscanf(line, "%s %s %d views", &user, &span, &n); err != nil {
			t.Fatalf("line %q: %v", line, err)
		}
		got = append(got, fmt.Sprintf("%s %s %d", user, span[:8], n))
	}
	sort.Strings(got)
	want := reference(start)
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("final counts:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if len(want) != expectedWindows {
		t.Errorf("reference has %d windows, the example waits for %d", len(want), expectedWindows)
	}
}
