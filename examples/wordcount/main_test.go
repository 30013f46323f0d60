package main

import (
	"context"
	"strings"
	"testing"
	"time"
)

// TestWordCount runs the example against its embedded broker and checks
// the counts it prints.
func TestWordCount(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var out strings.Builder
	if err := run(ctx, "", text, &out); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 19 {
		t.Errorf("%d words printed, want the 19 distinct words of the text:\n%s", len(lines), out.String())
	}
	for _, want := range []string{"a 4", "the 4", "fox 2", "stream 2", "lazy 1"} {
		found := false
		for _, l := range lines {
			found = found || strings.Join(strings.Fields(l), " ") == want
		}
		if !found {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
}
