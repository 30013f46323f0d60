package harness

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"
)

// ErrStalled is the cause of a context canceled by Watch because the load
// stopped making progress.
var ErrStalled = errors.New("harness: no progress")

// StallTimeout is how long a driver waits without progress before it gives
// up: $RUNNEL_BENCH_STALL (a Go duration), else 30s. Long enough for any
// fsync; short enough that a hung broker fails a run instead of hanging it.
func StallTimeout() time.Duration {
	if v := os.Getenv("RUNNEL_BENCH_STALL"); v != "" {
		if d, err := time.ParseDuration(v); err == nil && d > 0 {
			return d
		}
	}
	return 30 * time.Second
}

// Watch returns a context that is canceled when ctx is, when progress()
// has not changed for stall (cause wraps ErrStalled and says what
// describe() returns), or when health() returns an error (that error is
// the cause; health may be nil). Call the CancelFunc when done.
func Watch(ctx context.Context, stall time.Duration, progress func() int64, describe func() string, health func() error) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancelCause(ctx)
	go func() {
		tick := time.NewTicker(250 * time.Millisecond)
		defer tick.Stop()
		last, lastChange := progress(), time.Now()
		for {
			select {
			case <-ctx.Done():
				return
			case now := <-tick.C:
				if health != nil {
					if err := health(); err != nil {
						cancel(err)
						return
					}
				}
				if p := progress(); p != last {
					last, lastChange = p, now
				} else if now.Sub(lastChange) >= stall {
					cancel(fmt.Errorf("%w for %v: %s", ErrStalled, stall, describe()))
					return
				}
			}
		}
	}()
	return ctx, func() { cancel(nil) }
}

// cause is the error to report for a failed wait on ctx: its cause when
// Watch canceled it, else err.
func cause(ctx context.Context, err error) error {
	if c := context.Cause(ctx); c != nil && !errors.Is(c, context.Canceled) {
		return c
	}
	return err
}
