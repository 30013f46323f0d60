package cluster

import (
	"context"
	"net"
	"slices"
	"strings"
	"testing"
	"time"
)

// The process harness on its own: three processes start on distinct
// ports, stop cleanly on SIGTERM, die on SIGKILL and come back on the same
// ports, also when a port is taken for a while. (Until the quorum is wired
// the three nodes are three single-node clusters; the test needs no more.)
func TestHarnessProcesses(t *testing.T) {
	c := startCluster(t, 3, nil)
	var ports []string
	for _, nd := range c.nodes {
		ports = append(ports, nd.Addr, nd.ControllerAddr, nd.HTTPAddr)
	}
	if slices.Sort(ports); len(slices.Compact(ports)) != 9 {
		t.Fatalf("ports not distinct: %v", ports)
	}
	if !strings.Contains(strings.Join(c.args(c.Node(2)), " "), "--controller.quorum.voters=1@"+c.Node(1).ControllerAddr+",2@") {
		t.Fatalf("node 2's command line lacks the voters: %v", c.args(c.Node(2)))
	}

	c.Stop(2)
	c.Kill(3)
	if got := c.Seeds(); !slices.Equal(got, []string{c.Node(1).Addr}) {
		t.Fatalf("seeds with nodes 2 and 3 down: %v", got)
	}
	if !slices.Equal(c.Addrs(), []string{c.Node(1).Addr, c.Node(2).Addr, c.Node(3).Addr}) {
		t.Fatalf("addrs: %v", c.Addrs())
	}
	c.Restart(2)

	// Someone else holds node 3's Kafka port: Restart retries until it is free.
	ln, err := net.Listen("tcp", c.Node(3).Addr)
	if err != nil {
		t.Fatal(err)
	}
	restarted := make(chan error, 1)
	go func() { restarted <- c.restart(c.Node(3)) }()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	err = waitUntil(ctx, "node 3 to fail on its taken port", func() bool {
		return strings.Contains(lastLines(c.Node(3).LogPath, 50), "address already in use")
	})
	ln.Close()
	if err != nil {
		t.Fatal(err)
	}
	if err := <-restarted; err != nil {
		t.Fatal(err)
	}
	if !c.Running(3) || len(c.Seeds()) != 3 {
		t.Fatalf("after the restarts: node 3 running %v, seeds %v", c.Running(3), c.Seeds())
	}
}
