package cluster

import (
	"context"
	"testing"
	"time"
)

// TestCoordinatorDiesOffsetsNeverGoBackwards: a consumer group of two
// members commits (every 500 ms) while producers write; the node that
// coordinates the group (FindCoordinator) is SIGKILLed. Its
// __consumer_offsets partition (RF=3) must move to another node, the
// group must go on committing there, and the committed offsets a watcher
// polls must never go backwards; after the restart the group commits the
// high watermarks and the usual check holds.
func TestCoordinatorDiesOffsetsNeverGoBackwards(t *testing.T) {
	const (
		topic      = "coordinator"
		group      = "coordinator-readers"
		partitions = 4
	)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	c := startRF3(t, ctx, topic, partitions)
	ps := startProducers(ctx, c.Seeds(), topic, 4, produceLimits{Interval: 10 * time.Millisecond})
	t.Cleanup(ps.Stop)
	cs, err := startConsumers(ctx, c.Seeds(), topic, consumeConfig{Partitions: partitions, Assigned: 1, Group: group, Members: 2})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cs.Stop)
	cw, err := watchCommits(ctx, c.Seeds(), group, topic)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cw.Stop)

	within(t, ctx, ps, "commits of every partition", func() bool { return len(cw.Highest()) == partitions })
	coord := c.coordinator(ctx, group)
	before := cw.Highest()
	c.Kill(coord)
	killed := time.Now()
	within(t, ctx, ps, "the group to commit past its offsets of the kill on every partition", func() bool {
		h := cw.Highest()
		for p, o := range before {
			if h[p] <= o {
				return false
			}
		}
		return true
	})
	moved := time.Since(killed)
	now := c.coordinator(ctx, group)
	c.Restart(coord)
	c.waitFullISR(ctx, topic)
	t.Logf("coordinator %d killed; commits advanced on every partition %v later, coordinator %d", coord, moved.Round(time.Millisecond), now)

	ps.Stop()
	ends := c.endOffsets(ctx, topic)
	within(t, ctx, ps, "the group to commit the high watermarks", func() bool {
		h := cw.Highest()
		for p, end := range ends {
			if h[p] != end {
				return false
			}
		}
		return true
	})
	cw.Stop()
	for _, b := range cw.Backwards() {
		t.Error(b)
	}
	answered, failed := cw.Polls()
	t.Logf("%d commit polls answered, %d failed", answered, failed)
	finishRF3(t, ctx, c, topic, ps, cs)
}

// coordinator returns the node coordinating group, asking until one is
// named (up to stepTimeout).
func (c *Cluster) coordinator(ctx context.Context, group string) int32 {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(ctx, stepTimeout)
	defer cancel()
	var id int32 = -1
	var last error
	err := waitUntil(ctx, "a coordinator of "+group, func() bool {
		resp := c.admin().FindGroupCoordinators(ctx, group)
		r, ok := resp[group]
		if !ok || r.Err != nil {
			last = r.Err
			return false
		}
		id = r.NodeID
		return id > 0 && c.Running(id)
	})
	if err != nil {
		c.t.Fatalf("%v (last error %v)", err, last)
	}
	return id
}
