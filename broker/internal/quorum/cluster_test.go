package quorum

import (
	"context"
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

// waitDeadline bounds every wait on a condition; elections take a few
// hundred milliseconds with the timeouts below, more under -race on a
// busy machine.
const waitDeadline = 30 * time.Second

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
		ElectionTimeout:  300 * time.Millisecond,
		HeartbeatTimeout: 300 * time.Millisecond,
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
