package cluster

import (
	"context"
	"fmt"
	"net"
	"slices"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/runnel-io/runnel/broker/brokertest"
)

// Isolating one node while the test's clients still reach it takes three
// pieces, each a cluster option:
//
//   - withKafkaProxies: every node advertises a proxy in front of its Kafka
//     listener, so followers (whose fetchers find leaders by Metadata)
//     reach a leader through its proxy;
//   - withQuorumProxies: every node's Raft reaches every peer through a
//     proxy of its own, P(node → peer), named by that node's
//     controller.quorum.voters;
//   - withDirectClients: the test's clients dial each node's own Kafka
//     address where Metadata gives the proxy (directTo), so a cut proxy
//     does not cut them off.
//
// Isolate(id) then cuts node id's Kafka proxy and every quorum proxy from
// or to it; Rejoin heals them.
//
// Why per-node voters work: hashicorp/raft dials voters at the addresses
// of each node's own configuration, which every node bootstraps from its
// own controller.quorum.voters (index 1, the same term everywhere, so the
// logs agree); as long as the voter set does not change (no
// configuration entry, no snapshot sent to a follower) each node keeps its
// own view.
//
// What the proxies do not cover:
//   - a node learns the Raft leader's address from the leader's RPC
//     header, which is the leader's own entry: its real controller
//     address. Forwarded proposals and controller calls (heartbeats,
//     AlterPartition) dial that address directly. An isolated node that
//     was not the leader knows no leader (raft forgets it when it stands
//     for election, after controller.quorum.fetch.timeout.ms) and so
//     calls nobody; an isolated leader still takes the others' calls
//     directly until its lease ends (half the election timeout), and can
//     commit nothing meanwhile.
//   - the isolated node's own fetchers reach the other leaders through
//     their Kafka proxies, which stay open: it is cut off as a leader
//     (nobody can fetch from it) and from the quorum, not as a follower.

// withQuorumProxies gives each node's Raft a proxy per peer (see above).
func withQuorumProxies() clusterOption { return func(c *Cluster) { c.quorumProxied = true } }

// proxiedVoters is node id's controller.quorum.voters with
// withQuorumProxies: for every peer a new proxy from id to the peer's
// controller address (closing those of a start whose ports were taken).
func (c *Cluster) proxiedVoters(id int32, controllers []string) string {
	for _, px := range c.quorumProxies[id] {
		px.Close()
	}
	pxs := map[int32]*faultProxy{}
	addrs := slices.Clone(controllers)
	for i, addr := range controllers {
		if peer := int32(i + 1); peer != id {
			pxs[peer] = startFaultProxy(c.t, addr)
			addrs[i] = pxs[peer].Addr()
		}
	}
	c.quorumProxies[id] = pxs
	return brokertest.VotersOf(addrs)
}

// withDirectClients makes the harness's own clients (admin, partition
// states) dial nodes directly; a test gives its workload c.clientOpts().
func withDirectClients() clusterOption { return func(c *Cluster) { c.direct = true } }

// clientOpts are the options every client of the test needs: with
// withDirectClients, directTo().
func (c *Cluster) clientOpts() []kgo.Opt {
	if !c.direct {
		return nil
	}
	return []kgo.Opt{c.directTo()}
}

// directTo is a kgo.Dialer that dials a node's own Kafka address where
// the client was given its advertised one (a seed, or Metadata), going
// around the node's Kafka proxy. With ids, it dials only those nodes and
// refuses every other address: a client pinned to them.
func (c *Cluster) directTo(ids ...int32) kgo.Opt {
	real := map[string]string{}
	for _, nd := range c.Nodes {
		if len(ids) == 0 || slices.Contains(ids, nd.ID) {
			real[nd.Advertised] = nd.Addr
			real[nd.Addr] = nd.Addr
		}
	}
	return kgo.Dialer(func(ctx context.Context, network, host string) (net.Conn, error) {
		addr, ok := real[host]
		if !ok {
			return nil, fmt.Errorf("directTo %v: %s is not a node this client may dial", ids, host)
		}
		var d net.Dialer
		return d.DialContext(ctx, network, addr)
	})
}

// isolationProxies are the proxies Isolate cuts for node id: its Kafka
// proxy, and the quorum proxies from it to each peer and from each peer
// to it.
func (c *Cluster) isolationProxies(id int32) []*faultProxy {
	c.t.Helper()
	if !c.proxied || !c.quorumProxied {
		c.t.Fatalf("isolating node %d needs withKafkaProxies and withQuorumProxies", id)
	}
	pxs := []*faultProxy{c.kafkaProxy(id)}
	for _, peer := range c.Nodes {
		if peer.ID != id {
			pxs = append(pxs, c.quorumProxies[id][peer.ID], c.quorumProxies[peer.ID][id])
		}
	}
	return pxs
}

// Isolate cuts node id off from the other nodes: nobody fetches from it,
// and its Raft traffic in both directions is refused. Clients that dial
// it directly still reach it.
func (c *Cluster) Isolate(id int32) {
	c.t.Helper()
	for _, px := range c.isolationProxies(id) {
		px.Cut()
	}
}

// Rejoin heals what Isolate cut.
func (c *Cluster) Rejoin(id int32) {
	c.t.Helper()
	for _, px := range c.isolationProxies(id) {
		px.Heal()
	}
}
