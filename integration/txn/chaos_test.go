package txn

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"
)

// The chaos schedule: a random pause between faults, a random downtime
// for each victim, and a bound on how long the pipeline may take to
// commit again on every unfinished partition after a fault.
const (
	minPause          = 300 * time.Millisecond
	maxPause          = 2 * time.Second
	maxMemberDowntime = time.Second
	maxBrokerDowntime = 2 * time.Second
	recoverTimeout    = time.Minute
)

// chaos SIGKILLs pipeline members and brokers at random, from a seed,
// until the pipeline is done. It runs on the test goroutine.
type chaos struct {
	t       *testing.T
	rng     *rand.Rand
	c       *cluster
	p       *pipeline
	group   string
	input   string
	ends    offsets // the input's end offsets
	members int     // members killed
	brokers int     // brokers killed
	started time.Time
}

// progress is the group's committed offsets of the input.
func (ch *chaos) progress(ctx context.Context) (offsets, error) {
	return ch.c.committed(ctx, ch.group, ch.input)
}

// run injects faults until every input partition's committed offset is
// its end offset. After each fault it waits, up to recoverTimeout, until
// the group commits again on every partition that was not done, so no
// fault follows before the pipeline recovered from the last one.
func (ch *chaos) run(ctx context.Context) {
	ch.t.Helper()
	ch.started = time.Now()
	for {
		if ch.pause(ctx) {
			return
		}
		before, err := ch.progress(ctx)
		if err != nil {
			ch.t.Fatalf("chaos: %v", err)
		}
		var what string
		if ch.rng.IntN(2) == 0 {
			what = ch.killMember(ctx)
		} else {
			what = ch.killBroker(ctx)
		}
		start := time.Now()
		ch.awaitRecovery(ctx, what, before)
		ch.t.Logf("chaos %5.1fs: %s; every unfinished partition committed again %v later",
			time.Since(ch.started).Seconds(), what, time.Since(start).Round(time.Millisecond))
	}
}

// pause waits a random time between faults; it returns true as soon as
// the pipeline is done.
func (ch *chaos) pause(ctx context.Context) bool {
	deadline := time.After(ch.duration(minPause, maxPause))
	for {
		if done, _ := ch.done(ctx); done {
			return true
		}
		select {
		case <-deadline:
			return false
		case <-ctx.Done():
			return false // the next wait reports it
		case <-time.After(pollStep):
		}
	}
}

// duration is a random duration in [lo, hi) from the seeded source.
func (ch *chaos) duration(lo, hi time.Duration) time.Duration {
	return lo + time.Duration(ch.rng.Int64N(int64(hi-lo)))
}

// downtime waits d, the time a victim stays dead.
func downtime(ctx context.Context, d time.Duration) {
	select {
	case <-ctx.Done():
	case <-time.After(d):
	}
}

// killMember SIGKILLs a random member and starts it again, with the same
// transactional id, after a random downtime.
func (ch *chaos) killMember(ctx context.Context) string {
	ch.t.Helper()
	i := ch.rng.IntN(len(ch.p.running))
	d := ch.duration(0, maxMemberDowntime)
	ch.p.kill(i)
	ch.members++
	downtime(ctx, d)
	ch.p.restart(i)
	return fmt.Sprintf("SIGKILLed %s, restarted it after %v", ch.p.cfgs[i].Name, d.Round(time.Millisecond))
}

// killBroker SIGKILLs a random node, restarts it on its data directory
// after a random downtime, and waits until it is back in the cluster
// (every partition's ISR full again) so that the next kill leaves two of
// three nodes running.
func (ch *chaos) killBroker(ctx context.Context) string {
	ch.t.Helper()
	id := int32(1 + ch.rng.IntN(nodes))
	d := ch.duration(0, maxBrokerDowntime)
	ch.c.Kill(id)
	ch.brokers++
	killed := time.Now()
	downtime(ctx, d)
	ch.c.Restart(id)
	ready := time.Since(killed)
	ch.c.waitHealthy(ctx, fmt.Sprintf("node %d back in the cluster", id))
	return fmt.Sprintf("SIGKILLed node %d, restarted it after %v (ready after %v, every ISR full after %v)",
		id, d.Round(time.Millisecond), ready.Round(time.Millisecond), time.Since(killed).Round(time.Millisecond))
}

// done reports whether the group has committed the input's end offsets,
// and the committed offsets.
func (ch *chaos) done(ctx context.Context) (bool, offsets) {
	got, err := ch.progress(ctx)
	if err != nil {
		return false, nil
	}
	for p, end := range ch.ends {
		if got[p] != end {
			return false, got
		}
	}
	return true, got
}

// awaitRecovery waits until every input partition whose committed offset
// was below its end before the fault has committed past that offset; it
// fails the test at once if a member exited on its own.
func (ch *chaos) awaitRecovery(ctx context.Context, what string, before offsets) {
	ch.t.Helper()
	ctx, cancel := context.WithTimeout(ctx, recoverTimeout)
	defer cancel()
	err := waitFor(ctx, "the pipeline to commit again after: "+what, func(ctx context.Context) string {
		if ex := ch.p.exited(); ex != "" {
			cancel() // no use waiting
			return "members exited on their own: " + ex
		}
		now, err := ch.progress(ctx)
		if err != nil {
			return err.Error()
		}
		var stuck []int32
		for p, end := range ch.ends {
			if before[p] < end && now[p] <= before[p] {
				stuck = append(stuck, p)
			}
		}
		if len(stuck) == 0 {
			return ""
		}
		return fmt.Sprintf("partitions %v have not committed past %v (now %v, ends %v)", stuck, before, now, ch.ends)
	})
	if err != nil {
		ch.t.Fatal(err)
	}
}
