package cluster

import (
	"context"
	"fmt"
	"time"
)

// pollStep is how often waitUntil checks its condition.
const pollStep = 10 * time.Millisecond

// waitUntil polls cond every pollStep until it holds or ctx ends.
func waitUntil(ctx context.Context, what string, cond func() bool) error {
	for !cond() {
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for %s: %w", what, ctx.Err())
		case <-time.After(pollStep):
		}
	}
	return nil
}
