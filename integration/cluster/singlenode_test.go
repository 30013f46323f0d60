package cluster

import (
	"context"
	"testing"
	"time"
)

// waitLoaded waits for cond while ps writes; on a timeout it fails the
// test with the producers' counts.
func waitLoaded(t *testing.T, ctx context.Context, ps *producerSet, what string, cond func() bool) {
	t.Helper()
	if err := waitUntil(ctx, what, cond); err != nil {
		sent, acked, failed, errs := ps.Counts()
		t.Fatalf("%v (sent %d, acked %d, failed %d, client errors %v)", err, sent, acked, failed, errs)
	}
}

// TestSingleNodeKillNoLoss is the machinery's proof on what works today:
// one node, RF=1, a topic of four partitions, four idempotent acks=all
// producers, a consumer of every partition and a consumer group of two
// members, and a watcher of the group's committed offsets. The broker is
// SIGKILLed and restarted three times under that load; then every
// acknowledged record must be stored once at its acknowledged offset, no
// consumer may have seen an offset hold another value or go backwards,
// and the group's committed offsets must never have gone backwards.
func TestSingleNodeKillNoLoss(t *testing.T) {
	const (
		topic      = "kill-no-loss"
		group      = "kill-no-loss-readers"
		partitions = 4
		kills      = 3
		// perRound: acknowledgements between two kills.
		perRound = 1000
	)
	all := []int32{0, 1, 2, 3}
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	c := startCluster(t, 1, map[string]string{"group.initial.rebalance.delay.ms": "0"})
	c.createTopic(ctx, topic, partitions, 1, nil)
	seeds := c.Seeds()

	ps := startProducers(ctx, seeds, topic, 4, produceLimits{Interval: time.Millisecond})
	defer ps.Stop()
	cs, err := startConsumers(ctx, seeds, topic, consumeConfig{Partitions: partitions, Assigned: 1, Group: group, Members: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Stop()
	cw, err := watchCommits(ctx, seeds, group, topic)
	if err != nil {
		t.Fatal(err)
	}
	defer cw.Stop()

	wait := func(what string, cond func() bool) { t.Helper(); waitLoaded(t, ctx, ps, what, cond) }
	for i := range kills {
		_, before, _, _ := ps.Counts()
		round := time.Now()
		wait("load on every partition and group commits", func() bool {
			_, acked, _, _ := ps.Counts()
			return acked >= before+perRound && ps.ackedSince(round, all) && len(cw.Highest()) == partitions
		})
		polled, _ := cw.Polls()

		c.Kill(1)
		killed := time.Now()
		c.Restart(1)
		restarted := time.Since(killed)
		wait("an acknowledgement on every partition after the restart", func() bool { return ps.ackedSince(killed, all) })
		wait("a commit poll answered after the restart", func() bool { n, _ := cw.Polls(); return n > polled })
		t.Logf("kill %d: restarted in %v; failover %v %v", i+1, restarted.Round(time.Millisecond), ps.failoverTimes(killed, all), ps.failoverTimes(killed, all).Per)
	}

	ps.Stop()
	ends := c.endOffsets(ctx, topic)
	wait("the consumers to read up to the high watermarks", func() bool { return cs.caughtUp(ends) })
	wait("the group to commit the high watermarks", func() bool {
		h := cw.Highest()
		for p, end := range ends {
			if h[p] != end {
				return false
			}
		}
		return true
	})
	cs.Stop()
	cw.Stop()

	final, finalBackwards, err := readBack(ctx, c.Seeds(), topic)
	if err != nil {
		t.Fatal(err)
	}
	requireCorrect(t, history{
		Acked:        ps.Acked(),
		Reads:        cs.Reads(),
		NonMonotonic: append(cs.NonMonotonic(), finalBackwards...),
		Final:        final,
	})
	for _, b := range cw.Backwards() {
		t.Error(b)
	}
	sent, acked, failed, _ := ps.Counts()
	if sent != acked+failed {
		t.Errorf("%d records sent, but %d acknowledged and %d failed", sent, acked, failed)
	}
	answered, unanswered := cw.Polls()
	t.Logf("%d records sent, %d acknowledged, %d failed, %d in the final read (high watermarks %v); consumers read %d (%d fetch errors); %d commit polls (%d failed)",
		sent, acked, failed, len(final), ends, len(cs.Reads()), cs.FetchErrors(), answered, unanswered)
}

// TestSingleNodeClientsCutOff cuts every client off the node with the
// fault proxy in front of its listener (advertised, so clients cannot go
// around it) while producers and a consumer run, then heals: in-flight
// produces whose answers were lost are retried, and the idempotent
// producers' retries must not be stored twice.
func TestSingleNodeClientsCutOff(t *testing.T) {
	const (
		topic      = "cut-off"
		partitions = 4
	)
	all := []int32{0, 1, 2, 3}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	c := startCluster(t, 1, nil, withKafkaProxies())
	c.createTopic(ctx, topic, partitions, 1, nil)
	ps := startProducers(ctx, c.Seeds(), topic, 2, produceLimits{Interval: time.Millisecond})
	defer ps.Stop()
	cs, err := startConsumers(ctx, c.Seeds(), topic, consumeConfig{Partitions: partitions, Assigned: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Stop()
	px := c.kafkaProxy(1)

	for round := range 2 {
		start := time.Now()
		waitLoaded(t, ctx, ps, "load on every partition", func() bool { return ps.ackedSince(start, all) })
		refused := px.Refused()
		px.Cut()
		cut := time.Now()
		waitLoaded(t, ctx, ps, "clients to be refused", func() bool { return px.Refused() >= refused+2 })
		px.Heal()
		healed := time.Now()
		waitLoaded(t, ctx, ps, "an acknowledgement on every partition after the heal", func() bool { return ps.ackedSince(healed, all) })
		t.Logf("cut %d: %v long, %d connections refused; after the heal %v",
			round+1, healed.Sub(cut).Round(time.Millisecond), px.Refused()-refused, ps.failoverTimes(healed, all))
	}

	ps.Stop()
	ends := c.endOffsets(ctx, topic)
	waitLoaded(t, ctx, ps, "the consumer to read up to the high watermarks", func() bool { return cs.caughtUp(ends) })
	cs.Stop()
	final, finalBackwards, err := readBack(ctx, c.Seeds(), topic)
	if err != nil {
		t.Fatal(err)
	}
	requireCorrect(t, history{Acked: ps.Acked(), Reads: cs.Reads(), NonMonotonic: append(cs.NonMonotonic(), finalBackwards...), Final: final})
	sent, acked, failed, _ := ps.Counts()
	t.Logf("%d records sent, %d acknowledged, %d failed, %d in the final read; %d connections through the proxy",
		sent, acked, failed, len(final), px.Accepted())
}
