package txn

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"
)

// The chaos schedule: faults planned faults in pairs of a member kill
// and a broker kill, each pair in a random order, the first when the
// group has committed firstFault of the input and the last at
// lastFault, evenly between; a random pause before each and a random
// downtime for each victim; and a bound on how long the pipeline may take
// to commit again on every unfinished partition after a fault. Tied to
// progress rather than to time, the faults spread over the copy whatever
// its speed; but as each takes some 6 to 9 s (a member's session
// timeout, a broker's restart and catch-up), a fast copy can end before
// the last ones: the test requires minEach of each kind (and copies
// more records without -race: recordsFactor).
const (
	faults            = 6
	minEach           = 2
	firstFault        = 0.05
	lastFault         = 0.45
	minPause          = 300 * time.Millisecond
	maxPause          = time.Second
	maxMemberDowntime = time.Second
	maxBrokerDowntime = 2 * time.Second
	recoverTimeout    = time.Minute
)

// chaos SIGKILLs pipeline members and brokers at random, from a seed,
// while the pipeline copies. It runs on the test goroutine.
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

// run injects the planned faults, each once the group has committed its
// share of the input, and returns after the last one, or earlier if the
// pipeline is done. The first waits for a first transaction and a
// healthy cluster, so that __consumer_offsets and __transaction_state
// exist and are in sync. After each fault it waits, up to
// recoverTimeout, until the group commits again on every partition that
// was not done, so no fault follows before the pipeline recovered from
// the last one.
func (ch *chaos) run(ctx context.Context) {
	ch.t.Helper()
	first, cancel := context.WithTimeout(ctx, recoverTimeout)
	err := waitFor(first, "the pipeline's first transaction", func(ctx context.Context) string {
		if got, err := ch.progress(ctx); err != nil || got.sum() == 0 {
			return fmt.Sprintf("committed offsets %v (%v); members exited on their own: %q", got, err, ch.p.exited())
		}
		return ""
	})
	cancel()
	if err != nil {
		ch.t.Fatal(err)
	}
	ch.c.waitHealthy(ctx, "every partition, the internal topics' too, with a full ISR")
	ch.started = time.Now()
	brokerKill := make([]bool, faults)
	for i := 0; i+1 < faults; i += 2 {
		first := ch.rng.IntN(2)
		brokerKill[i+first] = true
	}
	for i, broker := range brokerKill {
		share := firstFault + (lastFault-firstFault)*float64(i)/float64(faults-1)
		if ch.await(ctx, int64(share*float64(ch.ends.sum()))) {
			return
		}
		before, err := ch.progress(ctx)
		if err != nil {
			ch.t.Fatalf("chaos: %v", err)
		}
		var what string
		if broker {
			what = ch.killBroker(ctx)
		} else {
			what = ch.killMember(ctx)
		}
		start := time.Now()
		ch.awaitRecovery(ctx, what, before)
		ch.t.Logf("chaos %5.1fs, %4.1f%% committed before: %s; every unfinished partition committed again %v later",
			time.Since(ch.started).Seconds(), 100*float64(before.sum())/float64(ch.ends.sum()), what, time.Since(start).Round(time.Millisecond))
	}
}

// await waits until the group has committed at least n records of the
// input, then a random pause; it returns true as soon as the pipeline is
// done. The pipeline runs unhindered meanwhile: the test's deadline bounds
// the wait.
func (ch *chaos) await(ctx context.Context, n int64) bool {
	ch.t.Helper()
	var pause <-chan time.Time
	for {
		done, got := ch.done(ctx)
		if done {
			return true
		}
		if pause == nil && got.sum() >= n {
			pause = time.After(ch.duration(minPause, maxPause))
		}
		select {
		case <-pause:
			return false
		case <-ctx.Done():
			ch.t.Fatalf("chaos: waiting for %d committed records: %v; committed %v", n, ctx.Err(), got)
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

// awaitDone waits until the group has committed the input's end offsets,
// up to the test's deadline.
func (ch *chaos) awaitDone(ctx context.Context) {
	ch.t.Helper()
	err := waitFor(ctx, "the group to commit the input's end offsets", func(ctx context.Context) string {
		if done, got := ch.done(ctx); !done {
			return fmt.Sprintf("committed %v, end offsets %v; members exited on their own: %q", got, ch.ends, ch.p.exited())
		}
		return ""
	})
	if err != nil {
		ch.t.Fatal(err)
	}
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
