package cluster

import (
	"testing"

	"github.com/runnel-io/runnel/broker/brokertest"
)

// Cluster is n `runnel broker` processes on loopback
// (brokertest.Processes: Node, Kill, Stop, Signal, Restart, Seeds ...)
// and the fault proxies a test asked for. Its methods are for the test
// goroutine; Seeds and Running may be called from any goroutine.
type Cluster struct {
	*brokertest.Processes
	t testing.TB

	proxied       bool // withKafkaProxies
	quorumProxied bool // withQuorumProxies
	direct        bool // withDirectClients

	// kafkaProxies, with withKafkaProxies: per node, the proxy in front
	// of its Kafka listener, which it advertises.
	kafkaProxies map[int32]*faultProxy
	// quorumProxies, with withQuorumProxies: per node and per peer, the
	// proxy this node's Raft dials that peer through (in front of the
	// peer's ControllerAddr); this node's controller.quorum.voters names
	// them.
	quorumProxies map[int32]map[int32]*faultProxy
}

// clusterOption changes how startCluster runs its nodes.
type clusterOption func(*Cluster)

// withKafkaProxies puts a faultProxy in front of every node's Kafka
// listener and advertises the proxy's address, so clients (and, with
// replication, followers fetching from a leader) reach each node through
// its kafkaProxy. The controller (Raft) port is not proxied.
func withKafkaProxies() clusterOption { return func(c *Cluster) { c.proxied = true } }

// startCluster starts n nodes with node.id 1..n and the given extra
// settings (Kafka names, e.g. "min.insync.replicas": "2"), and returns once
// every node answers /readyz and accepts Kafka connections (see
// brokertest.StartProcesses). For n > 1 each node is a voter of
// controller.quorum.voters. Nodes are killed when the test ends; if it
// failed, the tail of each node's log is printed.
func startCluster(t testing.TB, n int, settings map[string]string, opts ...clusterOption) *Cluster {
	t.Helper()
	c := &Cluster{t: t, kafkaProxies: map[int32]*faultProxy{}, quorumProxies: map[int32]map[int32]*faultProxy{}}
	for _, o := range opts {
		o(c)
	}
	po := brokertest.ProcessOptions{Binary: brokertest.BuildRunnel(t), Nodes: n, Settings: settings}
	if c.proxied {
		po.Advertise = c.advertiseProxy
	}
	if c.quorumProxied {
		po.Voters = c.proxiedVoters
	}
	c.Processes = brokertest.StartProcesses(t, po)
	return c
}

// advertiseProxy starts node id's Kafka proxy in front of addr (closing
// the one of a start whose ports were taken) and returns its address.
func (c *Cluster) advertiseProxy(id int32, addr string) string {
	if px := c.kafkaProxies[id]; px != nil {
		px.Close()
	}
	px := startFaultProxy(c.t, addr)
	c.kafkaProxies[id] = px
	return px.Addr()
}

// kafkaProxy is node id's Kafka proxy (withKafkaProxies).
func (c *Cluster) kafkaProxy(id int32) *faultProxy {
	c.t.Helper()
	px := c.kafkaProxies[id]
	if px == nil {
		c.t.Fatalf("node %d has no Kafka proxy: start the cluster withKafkaProxies", id)
	}
	return px
}
