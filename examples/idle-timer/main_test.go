package main

import (
	"context"
	"strings"
	"testing"
	"time"
)

// TestIdleTimer runs the example against its embedded broker: the users
// who sent one event are reported idle by the timer; alice, who stays
// active, is not.
func TestIdleTimer(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var out strings.Builder
	if err := run(ctx, "", 2*time.Second, &out); err != nil {
		t.Fatal(err)
	}
	for _, u := range []string{"bob", "carol", "dave"} {
		if !strings.Contains(out.String(), u+": idle for ") {
			t.Errorf("output lacks %s's idle notice:\n%s", u, out.String())
		}
	}
	if strings.Contains(out.String(), "alice") {
		t.Errorf("alice was active, yet reported idle:\n%s", out.String())
	}
}
