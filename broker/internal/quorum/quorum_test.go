package quorum

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/runnel-io/runnel/broker/internal/configs"
	"github.com/runnel-io/runnel/broker/internal/metadata"
)

// A quorum of one over TCP and one without any transport (no voters
// configured): proposals apply, and a restart brings the image back.
func TestSingleNodeProposeRestart(t *testing.T) {
	for _, tcp := range []bool{true, false} {
		t.Run(fmt.Sprintf("tcp=%v", tcp), func(t *testing.T) {
			c := newCluster(t, 1, func(cfg *Config) {
				singleVoterTimeouts(cfg)
				if !tcp {
					cfg.Voters = nil
				}
			})
			q := c.nodes[0]
			ctx := ctxT(t)
			c.leader()
			if err := q.Propose(ctx, metadata.Record{SetClusterID: &metadata.SetClusterID{ID: "c1"}}, topic("a")); err != nil {
				t.Fatal(err)
			}
			if err := q.Propose(ctx, topic("b")); err != nil {
				t.Fatal(err)
			}
			im := q.Image()
			if im.ClusterID != "c1" || im.Topic("a") == nil || im.Topic("b") == nil || im.Offset != 3 {
				t.Fatalf("image after proposals: %+v", im)
			}
			if got := c.applied(0); len(got) != 2 || got[1] != im {
				t.Fatalf("watcher saw %d changes, want 2 ending in the current image", len(got))
			}
			off := q.MetadataOffset()
			c.stop(0)
			c.start(0)
			q = c.nodes[0]
			if err := q.Sync(ctx); err != nil {
				t.Fatal(err)
			}
			if !q.Image().Equal(im) {
				t.Fatalf("image after restart %+v, want %+v", q.Image(), im)
			}
			if q.MetadataOffset() <= off {
				t.Fatalf("metadata offset %d after restart and Sync, want > %d", q.MetadataOffset(), off)
			}
			if err := q.Propose(ctx, topic("a")); !errors.Is(err, metadata.ErrTopicExists) {
				t.Fatalf("re-creating a: %v, want ErrTopicExists", err)
			}
		})
	}
}

// Three voters elect one leader; proposals made concurrently on every node
// apply on every node in one order, and each proposer sees its change as
// soon as Propose returns.
func TestThreeNodesApplyInOneOrder(t *testing.T) {
	c := newCluster(t, 3, nil)
	leader := c.leader()
	ctx := ctxT(t)
	const perNode = 5
	var wg sync.WaitGroup
	errs := make(chan error, 3*perNode)
	for i, q := range c.nodes {
		wg.Go(func() {
			for j := range perNode {
				name := fmt.Sprintf("n%d-t%d", i+1, j)
				if err := propose(ctx, t, q, topic(name)); err != nil {
					errs <- fmt.Errorf("node %d: %w", i+1, err)
					return
				}
				if q.Image().Topic(name) == nil {
					errs <- fmt.Errorf("node %d: %s not in its image after Propose", i+1, name)
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	// Should the leadership have moved, the first leader may lag: a
	// commit after every proposal brings it up to date.
	if err := syncRetry(ctx, t, c.nodes[leader]); err != nil {
		t.Fatal(err)
	}
	want := c.nodes[leader].Image()
	if len(want.Topics) != 3*perNode {
		t.Fatalf("leader has %d topics, want %d", len(want.Topics), 3*perNode)
	}
	c.converged(want)
	order := func(i int) []string {
		var names []string
		for _, im := range c.applied(i) {
			names = append(names, fmt.Sprint(im.Offset, im.TopicNames()))
		}
		return names
	}
	for i := range c.nodes {
		if got := order(i); !slices.Equal(got, order(leader)) {
			t.Errorf("node %d applied\n%v\nleader applied\n%v", i+1, got, order(leader))
		}
	}
}

// Closing the leader elects another; proposals continue from both
// survivors; the old leader comes back and catches up from the log.
func TestLeaderFailoverAndCatchUpFromLog(t *testing.T) {
	c := newCluster(t, 3, failoverTimeouts)
	ctx := ctxT(t)
	old := c.leader()
	if err := propose(ctx, t, c.nodes[c.follower(old)], topic("before")); err != nil {
		t.Fatal(err)
	}
	changes := make([]chan bool, len(c.nodes))
	for i, q := range c.nodes {
		changes[i] = make(chan bool, 8)
		q.OnLeadership(func(l bool) { changes[i] <- l })
	}
	// Registered after the election, the leader is told at once (before
	// OnLeadership returns). Nothing arrives if the leadership moved
	// since c.leader(), on a stall longer than the lease.
	select {
	case l := <-changes[old]:
		if !l {
			t.Fatal("the leader's first leadership callback said false")
		}
	case <-time.After(5 * time.Second):
		t.Fatalf("node %d, the leader every node named, was not told it leads when its callback was registered "+
			"(did the leadership move in between?)", old+1)
	}
	stopped := time.Now()
	c.stop(old)
	next := c.leader()
	if next == old {
		t.Fatal("a closed node is the leader")
	}
	select {
	case l := <-changes[next]:
		if !l {
			t.Fatal("the new leader was told false")
		}
	case <-time.After(waitDeadline):
		t.Fatal("the new leader's callback was not called")
	}
	for i, q := range c.nodes {
		if q != nil {
			if err := propose(ctx, t, q, topic("after-"+strconv.Itoa(i))); err != nil {
				t.Fatalf("node %d after failover: %v", i+1, err)
			}
			if stopped != (time.Time{}) {
				t.Logf("failover: %v from closing the leader to the first commit (fetch/election timeouts %v)", time.Since(stopped), failoverTimeout)
				stopped = time.Time{}
			}
		}
	}
	c.start(old)
	if err := syncRetry(ctx, t, c.nodes[next]); err != nil { // in case the leadership moved again
		t.Fatal(err)
	}
	want := c.nodes[next].Image()
	c.converged(want)
	if len(want.Topics) != 3 {
		t.Fatalf("topics %v", want.TopicNames())
	}
	// The returning node replays the log, not a snapshot: it saw every
	// change one by one.
	if got := c.applied(old); len(got) != 3 {
		t.Fatalf("returning node applied %d changes, want 3 (one per entry)", len(got))
	}
}

// A follower that missed more than the log keeps gets a snapshot from the
// leader, and restores its own snapshot when it restarts.
func TestCatchUpFromSnapshot(t *testing.T) {
	c := newCluster(t, 3, func(cfg *Config) {
		cfg.SnapshotThreshold = 4
		cfg.TrailingLogs = 2
		cfg.SnapshotInterval = 20 * time.Millisecond
	})
	ctx := ctxT(t)
	leader := c.leader()
	down := c.follower(leader)
	c.stop(down)
	for i := range 20 {
		if err := propose(ctx, t, c.nodes[leader], topic("t"+strconv.Itoa(i))); err != nil {
			t.Fatal(err)
		}
	}
	waitFor(t, "the leader to snapshot and compact its log", func() bool {
		first, err := c.nodes[leader].store.FirstIndex()
		return err == nil && first > 10
	})
	c.start(down)
	if err := syncRetry(ctx, t, c.nodes[leader]); err != nil {
		t.Fatal(err)
	}
	want := c.nodes[leader].Image()
	c.converged(want)
	got := c.applied(down)
	// Replaying the log would reach offset 1 first; a snapshot restore
	// jumps to the snapshot's offset in one change.
	if len(got) == 0 || got[0].Offset <= 1 {
		t.Fatalf("returning node's changes reached offsets %v, want a snapshot restore first", offsets(got))
	}
	restored := got[0].Offset
	if c.nodes[down].MetadataOffset() == 0 {
		t.Fatal("metadata offset 0 after catching up")
	}
	// Its own snapshot (taken on install) is restored by Open, before any
	// leader is known.
	c.stop(down)
	c.start(down)
	if c.nodes[down].Image().Offset < restored {
		t.Fatalf("image right after reopen at offset %d, want the snapshot's", c.nodes[down].Image().Offset)
	}
	if err := syncRetry(ctx, t, c.nodes[down]); err != nil {
		t.Fatal(err)
	}
	if !c.nodes[down].Image().Equal(want) {
		t.Fatal("image after reopen and Sync differs from the leader's")
	}
}

func offsets(ims []*metadata.Image) []int64 {
	var o []int64
	for _, im := range ims {
		o = append(o, im.Offset)
	}
	return o
}

// Restarting every node keeps the image.
func TestRestartAllKeepsImage(t *testing.T) {
	c := newCluster(t, 3, nil)
	ctx := ctxT(t)
	c.leader()
	for i, q := range c.nodes {
		if err := propose(ctx, t, q, topic("t"+strconv.Itoa(i))); err != nil {
			t.Fatal(err)
		}
	}
	want := c.nodes[2].Image() // the last proposer has applied all three
	c.converged(want)
	for i := range c.nodes {
		c.stop(i)
	}
	for i := range c.nodes {
		c.start(i)
	}
	for i, q := range c.nodes {
		if err := syncRetry(ctx, t, q); err != nil {
			t.Fatalf("node %d: %v", i+1, err)
		}
		if !q.Image().Equal(want) {
			t.Fatalf("node %d after restart: %+v, want %+v", i+1, q.Image(), want)
		}
	}
}

// A proposal the image refuses returns the image's error on the follower
// that proposed it, and changes nothing anywhere.
func TestValidationErrorOnFollower(t *testing.T) {
	c := newCluster(t, 3, nil)
	ctx := ctxT(t)
	leader := c.leader()
	f1, f2 := c.follower(leader), c.follower(leader, c.follower(leader))
	if err := propose(ctx, t, c.nodes[f1], topic("a")); err != nil {
		t.Fatal(err)
	}
	want := c.nodes[f1].Image()
	off := c.nodes[f2].MetadataOffset()
	err := propose(ctx, t, c.nodes[f2], topic("b"), topic("a"))
	if !errors.Is(err, metadata.ErrTopicExists) {
		t.Fatalf("duplicate topic from a follower: %v, want metadata.ErrTopicExists", err)
	}
	err = propose(ctx, t, c.nodes[f2], metadata.Record{DeleteTopic: &metadata.DeleteTopic{Name: "missing"}})
	if !errors.Is(err, metadata.ErrUnknownTopic) {
		t.Fatalf("deleting a missing topic from a follower: %v, want metadata.ErrUnknownTopic", err)
	}
	if err := syncRetry(ctx, t, c.nodes[f2]); err != nil {
		t.Fatal(err)
	}
	c.converged(want)
	if c.nodes[f2].MetadataOffset() < off+3 {
		t.Fatalf("metadata offset %d, want at least %d (refused entries use their index)", c.nodes[f2].MetadataOffset(), off+3)
	}
}

// With two of three voters down nothing commits: a proposal fails when its
// context ends, on the remaining follower and on a remaining leader, and
// the image does not change.
func TestNoQuorum(t *testing.T) {
	for _, keep := range []string{"follower", "leader"} {
		t.Run(keep, func(t *testing.T) {
			c := newCluster(t, 3, nil)
			ctx := ctxT(t)
			leader := c.leader()
			if err := propose(ctx, t, c.nodes[leader], topic("a")); err != nil {
				t.Fatal(err)
			}
			c.converged(c.nodes[leader].Image())
			kept := leader
			if keep == "follower" {
				kept = c.follower(leader)
			}
			q := c.nodes[kept]
			// Registered while the quorum is whole: a leader is told true
			// at once. Once two nodes are down its lease can end during
			// the second Close, and then no true would come.
			changes := make(chan bool, 8)
			q.OnLeadership(func(l bool) { changes <- l })
			if keep == "leader" {
				select {
				case l := <-changes:
					if !l {
						t.Fatal("the leader's first leadership callback said false")
					}
				default:
					t.Fatalf("node %d, the leader every node named, was not told it leads when its callback was registered "+
						"(did the leadership move in between?)", kept+1)
				}
			}
			for i := range c.nodes {
				if i != kept {
					c.stop(i)
				}
			}
			before := q.Image()
			pctx, cancel := context.WithTimeout(ctx, 2*time.Second)
			defer cancel()
			err := q.Propose(pctx, topic("b"))
			switch keep {
			case "follower":
				if !errors.Is(err, ErrNoQuorum) || !errors.Is(err, context.DeadlineExceeded) {
					t.Fatalf("propose without quorum: %v, want ErrNoQuorum wrapping the deadline", err)
				}
			case "leader":
				// The leader appends the entry, then steps down when its
				// lease ends without a majority.
				if !errors.Is(err, ErrLeadershipLost) && !errors.Is(err, ErrNotCommitted) {
					t.Fatalf("propose on a leader without quorum: %v, want ErrLeadershipLost or ErrNotCommitted", err)
				}
			}
			t.Logf("error: %v", err)
			if q.Image() != before {
				t.Fatal("the image changed without a quorum")
			}
			if keep == "leader" {
				// It was told it led (above), and then that it stepped
				// down.
				select {
				case l := <-changes:
					if l {
						t.Fatal("leadership callback true, want false (stepped down)")
					}
				case <-time.After(waitDeadline):
					t.Fatal("no leadership callback false: the leader without a quorum did not step down")
				}
			}
		})
	}
}

func TestConfigValidation(t *testing.T) {
	v := func(id int32, port int) configs.Voter { return configs.Voter{ID: id, Host: "127.0.0.1", Port: port} }
	dir := filepath.Join(t.TempDir(), DirName)
	for _, tc := range []struct {
		name string
		cfg  Config
		want string
	}{
		{"no dir", Config{NodeID: 1}, "no directory"},
		{"duplicate id", Config{NodeID: 1, Dir: dir, Voters: []configs.Voter{v(1, 1), v(1, 2)}}, "voter id 1 appears twice"},
		{"duplicate address", Config{NodeID: 1, Dir: dir, Voters: []configs.Voter{v(1, 1), v(2, 1)}}, "voters 1 and 2 both use 127.0.0.1:1"},
		{"not a voter", Config{NodeID: 3, Dir: dir, Voters: []configs.Voter{v(1, 1), v(2, 2)}}, "node.id 3 is not one of controller.quorum.voters"},
	} {
		_, err := Open(tc.cfg)
		if !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want ErrConfig saying %q", tc.name, err, tc.want)
		}
	}
}

// Five voters tolerate two down: with the leader and another voter
// closed, a proposal from a remaining follower commits on the three left.
func TestFiveVotersToleratesTwoDown(t *testing.T) {
	c := newCluster(t, 5, nil)
	ctx := ctxT(t)
	leader := c.leader()
	other := c.follower(leader)
	c.stop(leader)
	c.stop(other)
	q := c.nodes[c.follower(c.leader())]
	if err := propose(ctx, t, q, topic("a")); err != nil {
		t.Fatal(err)
	}
	c.converged(q.Image())
}

// TestDefaultTimeoutsOpen opens a node with Kafka's default timeouts
// (election 1s, fetch 2s): hashicorp/raft needs the election timeout at
// least as long as the heartbeat timeout, so Open must reconcile them.
func TestDefaultTimeoutsOpen(t *testing.T) {
	c := newCluster(t, 1, func(cfg *Config) {
		cfg.Voters = nil
		cfg.ElectionTimeout, cfg.HeartbeatTimeout = 0, 0
	})
	c.leader()
	if err := c.nodes[0].Propose(ctxT(t), topic("a")); err != nil {
		t.Fatal(err)
	}
}

// HandOver makes another voter the leader before this one stops, and the
// quorum commits through it at once; on a follower it does nothing.
func TestHandOver(t *testing.T) {
	c := newCluster(t, 3, nil)
	ctx := ctxT(t)
	leader := c.leader()
	if err := c.nodes[c.follower(leader)].HandOver(); err != nil {
		t.Fatalf("HandOver on a follower: %v", err)
	}
	if !c.nodes[leader].IsLeader() {
		t.Fatal("HandOver on a follower moved the leadership")
	}
	start := time.Now()
	if err := c.nodes[leader].HandOver(); err != nil {
		t.Fatalf("HandOver: %v", err)
	}
	if c.nodes[leader].IsLeader() {
		t.Fatal("still the leader after HandOver")
	}
	c.stop(leader)
	if err := propose(ctx, t, c.nodes[c.leader()], topic("after")); err != nil {
		t.Fatal(err)
	}
	t.Logf("handed over and committed in %v", time.Since(start))
}
