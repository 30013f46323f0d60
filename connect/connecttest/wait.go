package connecttest

import (
	"testing"
	"time"
)

// WaitFor polls cond every 20 ms until it holds; it fails the test,
// naming what, when d has passed first.
func WaitFor(t testing.TB, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", d, what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
