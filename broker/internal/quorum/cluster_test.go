package quorum

import (
	"context"
	"errors"
	"fmt"
	"net"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/runnel-io/runnel/broker/internal/configs"
	"github.com/runnel-io/runnel/broker/internal/metadata"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// waitDeadline bounds every wait on a condition; an election takes a few
// seconds with the timeouts below (a follower waits 2–4 s for the leader),
// more under -race on a busy machine.
const waitDeadline = 30 * time.Second

// Every node of a test cluster runs in one -race process, on CI a loaded
// two-core machine, where a stall of a few hundred milliseconds happens. A
// leader steps down when it has not heard from a majority for its lease
// (half the shorter of the two timeouts), and the Propose then in flight
// returns ErrLeadershipLost. So the clusters use generous timeouts, 2 s
// election and fetch timeouts (a 1 s lease); only a test that measures a
// failover shortens them, with failoverTimeouts. (Not Config's zero-value
// defaults, 1 s election and 2 s fetch: raft refuses an election timeout
// shorter than the heartbeat timeout.)
const (
	testElectionTimeout  = 2 * time.Second
	testHeartbeatTimeout = 2 * time.Second
	failoverTimeout      = 300 * time.Millisecond
)

// failoverTimeouts is a cluster tune for tests that measure a failover:
// 300 ms election and fetch timeouts (a 150 ms lease). Such a test must
// tolerate a leader that steps down on a stall (propose retries).
func failoverTimeouts(cfg *Config) {
	cfg.ElectionTimeout = failoverTimeout
	cfg.HeartbeatTimeout = failoverTimeout
}

// singleVoterTimeouts is failoverTimeouts for a cluster of one voter,
// which cannot lose its lease (it is its own majority): the short
// timeouts only speed up its elections (one at every start).
var singleVoterTimeouts = failoverTimeouts

// cluster is n voters on loopback, each with its own directory, that a
// test starts and stops one by one.
type cluster struct {
	t      testing.TB
	voters []configs.Voter
	dirs   []string
	nodes  []*Quorum // nil while down
	lns    []net.Listener
	// tune adjusts each node's config before Open.
	tune func(*Config)

	mu struct {
		sync.Mutex
		// applied[i] is every image node i's watcher saw, in order.
		applied [][]*metadata.Image
	}
}

// newCluster binds n free loopback ports (kept bound, and handed to the
// first Open of each node, so no other process can take them) and starts
// every node.
func newCluster(t testing.TB, n int, tune func(*Config)) *cluster {
	t.Helper()
	c := &cluster{t: t, tune: tune, nodes: make([]*Quorum, n), lns: make([]net.Listener, n)}
	c.mu.applied = make([][]*metadata.Image, n)
	for i := range n {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		c.lns[i] = ln
		port := ln.Addr().(*net.TCPAddr).Port
		c.voters = append(c.voters, configs.Voter{ID: int32(i + 1), Host: "127.0.0.1", Port: port})
		c.dirs = append(c.dirs, filepath.Join(t.TempDir(), DirName))
	}
	t.Cleanup(func() {
		for i := range c.nodes {
			c.stop(i)
			if c.lns[i] != nil {
				c.lns[i].Close()
			}
		}
	})
	for i := range n {
		c.start(i)
	}
	return c
}

func (c *cluster) config(i int) Config {
	cfg := Config{
		NodeID:           int32(i + 1),
		Voters:           c.voters,
		Dir:              c.dirs[i],
		ElectionTimeout:  testElectionTimeout,
		HeartbeatTimeout: testHeartbeatTimeout,
	}
	if c.tune != nil {
		c.tune(&cfg)
	}
	return cfg
}

// start opens node i (again) and records what its watcher sees.
func (c *cluster) start(i int) {
	c.t.Helper()
	cfg := c.config(i)
	if len(cfg.Voters) > 0 {
		if c.lns[i] == nil {
			c.lns[i] = c.rebind(i)
		}
		cfg.Listener = c.lns[i]
	} else if c.lns[i] != nil {
		c.lns[i].Close() // a standalone node listens nowhere
	}
	c.lns[i] = nil
	q, err := Open(cfg)
	if err != nil {
		c.t.Fatalf("open node %d: %v", i+1, err)
	}
	c.nodes[i] = q
	c.mu.Lock()
	c.mu.applied[i] = nil
	c.mu.Unlock()
	q.Watch(func(_, im *metadata.Image) {
		c.mu.Lock()
		c.mu.applied[i] = append(c.mu.applied[i], im)
		c.mu.Unlock()
	})
}

// rebind binds node i's voter address again for a restart. Its port was
// released when the node stopped (Close closes the listener Open owns), and
// the other voters know the node by that address, so it cannot move; the
// bind can fail if another process took the port in between (or the
// kernel gave it out as an ephemeral port). A short retry covers a socket
// still being torn down; otherwise the test fails saying why.
func (c *cluster) rebind(i int) net.Listener {
	c.t.Helper()
	addr := c.voters[i].Addr()
	deadline := time.Now().Add(3 * time.Second)
	for {
		ln, err := net.Listen("tcp", addr)
		if err == nil {
			return ln
		}
		if time.Now().After(deadline) {
			c.t.Fatalf("restart node %d: cannot bind its controller address %s again (released when it stopped; "+
				"another process or connection took the port meanwhile, an environment problem rather than a quorum bug): %v",
				i+1, addr, err)
		}
		time.Sleep(50 * time.Millisecond) // retry interval, not a wait for an event
	}
}

func (c *cluster) stop(i int) {
	if c.nodes[i] == nil {
		return
	}
	if err := c.nodes[i].Close(); err != nil {
		c.t.Errorf("close node %d: %v", i+1, err)
	}
	c.nodes[i] = nil
}

// leader waits until a running node is the leader and every running node
// names it, and returns its index.
func (c *cluster) leader() int {
	c.t.Helper()
	l := -1
	waitFor(c.t, "a leader that every running node knows", func() bool {
		l = -1
		for i, q := range c.nodes {
			if q != nil && q.IsLeader() {
				l = i
			}
		}
		if l < 0 {
			return false
		}
		for _, q := range c.nodes {
			if q == nil {
				continue
			}
			if id, _, ok := q.Leader(); !ok || id != int32(l+1) {
				return false
			}
		}
		return true
	})
	return l
}

// follower returns a running node other than the leader and skip.
func (c *cluster) follower(leader int, skip ...int) int {
	for i, q := range c.nodes {
		if q != nil && i != leader && !contains(skip, i) {
			return i
		}
	}
	c.t.Fatal("no running follower")
	return -1
}

// converged waits until every running node's image equals want.
func (c *cluster) converged(want *metadata.Image) {
	c.t.Helper()
	waitFor(c.t, fmt.Sprintf("every running node at metadata offset %d", want.Offset), func() bool {
		for _, q := range c.nodes {
			if q != nil && !q.Image().Equal(want) {
				return false
			}
		}
		return true
	})
}

func (c *cluster) applied(i int) []*metadata.Image {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]*metadata.Image(nil), c.mu.applied[i]...)
}

func contains(s []int, v int) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

func waitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(waitDeadline)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond) // polling interval, not a wait for an event
	}
}

// propose is q.Propose for tests in which a stall is not what they test:
// when the leader steps down on a stall (see failoverTimeouts), Propose
// returns ErrLeadershipLost without retrying, since the entry may still
// commit; propose tries again. If a retry is then refused with
// ErrTopicExists and every topic recs create is in this node's image, the
// lost attempt did commit, and that is success.
func propose(ctx context.Context, t testing.TB, q *Quorum, recs ...metadata.Record) error {
	t.Helper()
	lost := false
	for {
		err := q.Propose(ctx, recs...)
		if errors.Is(err, ErrLeadershipLost) && ctx.Err() == nil {
			t.Logf("node %d: %v; proposing again", q.cfg.NodeID, err)
			lost = true
			time.Sleep(10 * time.Millisecond) // a pause before retrying, like Propose's own backoff
			continue
		}
		if lost && errors.Is(err, metadata.ErrTopicExists) {
			// A follower's refused proposal returns before it applies
			// here: catch up first.
			if serr := syncRetry(ctx, t, q); serr != nil {
				return serr
			}
			if createsOnly(q.Image(), recs) {
				return nil
			}
		}
		return err
	}
}

// createsOnly reports whether recs only create topics, all in im.
func createsOnly(im *metadata.Image, recs []metadata.Record) bool {
	for _, r := range recs {
		if r.CreateTopic == nil || im.Topic(r.CreateTopic.Name) == nil {
			return false
		}
	}
	return len(recs) > 0
}

// syncRetry is q.Sync, tried again after ErrLeadershipLost (its entry
// changes nothing, so committing it twice does no harm).
func syncRetry(ctx context.Context, t testing.TB, q *Quorum) error {
	t.Helper()
	for {
		err := q.Sync(ctx)
		if !errors.Is(err, ErrLeadershipLost) || ctx.Err() != nil {
			return err
		}
		t.Logf("node %d: sync: %v; trying again", q.cfg.NodeID, err)
		time.Sleep(10 * time.Millisecond) // a pause before retrying, like Propose's own backoff
	}
}

func ctxT(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), waitDeadline)
	t.Cleanup(cancel)
	return ctx
}

func topic(name string) metadata.Record {
	id := [16]byte{}
	copy(id[:], name)
	return metadata.Record{CreateTopic: &metadata.Topic{Name: name, ID: id,
		Partitions: []metadata.Partition{{Leader: 1, Replicas: []int32{1}, ISR: []int32{1}}}}}
}
