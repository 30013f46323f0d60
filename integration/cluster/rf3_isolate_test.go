package cluster

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// ackGrace: an acknowledgement the isolated node sent just before the cut
// may still reach its client just after it.
const ackGrace = 200 * time.Millisecond

// tailLen is how many acks=1 records a test sends the isolated leader.
const tailLen = 20

// TestIsolatedLeaderStopsAcknowledging is the fault scenario 2: a
// leader is cut off from the metadata quorum and from the other replicas
// (Isolate: its Kafka proxy, which followers fetch through, and its Raft
// traffic both ways) while the test's clients still reach it directly. It
// runs twice on one cluster: first the node leading the most partitions
// among those that are not the active controller, then the active
// controller.
//
// While it is isolated:
//   - it must not acknowledge an acks=all write: no batch of the acks=all
//     producers is acknowledged by it (OnProduceBatchWritten names the
//     node) from ackGrace after the cut until the rejoin, and none of the
//     partitions it led gets an acknowledgement from ackGrace after the
//     cut until a new leader exists (before then, only it could have
//     answered);
//   - the two others fence it (broker.session.timeout.ms without
//     heartbeats), elect new leaders for its partitions, and the
//     producers' acknowledgements resume there (failover times);
//   - acks=1 writes sent to it directly (a client pinned to it, on a
//     partition it led) may be acknowledged: acks=1 is the leader alone.
//
// After the rejoin it must truncate that divergent tail (its log says so,
// and no node's segment files hold those records), return to every ISR,
// and the history check must pass (an acks=all write it had acknowledged
// alone would have been truncated too: a lost acknowledged record); the
// acks=1 records it took must be in no consumer's read and not in the
// final read.
func TestIsolatedLeaderStopsAcknowledging(t *testing.T) {
	const (
		topic      = "isolated"
		partitions = 6
	)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c := startRF3(t, ctx, topic, partitions, withKafkaProxies(), withQuorumProxies(), withDirectClients())
	ps, cs := rf3Workload(t, ctx, c, topic, partitions)

	v := c.viewers()
	// Raft goes through the quorum proxies: the active controller's to
	// both its peers carry its connections.
	_, ctrl := c.waitAgreed(ctx, v, topic)
	for peer, px := range c.quorumProxies[ctrl] {
		if px.Forwarded() == 0 {
			t.Fatalf("no connection through the quorum proxy from the active controller %d to node %d", ctrl, peer)
		}
	}
	var runs []isolation
	for round, controller := range []bool{false, true} {
		leaders, ctrl := c.waitAgreed(ctx, v, topic)
		x := busiest(leaders, []int32{ctrl})
		switch {
		case controller && len(ledBy(leaders, ctrl)) > 0:
			x = ctrl
		case controller:
			t.Logf("the active controller %d leads no partition (leaders %v): isolating node %d instead", ctrl, leaders, x)
		}
		if len(ledBy(leaders, x)) == 0 {
			t.Fatalf("node %d (active controller %d) leads no partition of %s: leaders %v", x, ctrl, topic, leaders)
		}
		r := isolateLeader(t, ctx, c, v, topic, ps, round, x)
		r.Controller = x == ctrl
		t.Log(r)
		runs = append(runs, r)
	}

	final := finishRF3(t, ctx, c, topic, ps, cs)
	seen := map[string]string{}
	for _, r := range final {
		seen[r.Value] = "the final read"
	}
	for _, r := range cs.Reads() {
		seen[r.Value] = "consumer " + r.Consumer
	}
	var fs []failover
	for _, r := range runs {
		fs = append(fs, r.Failover)
		for o, v := range r.Tail {
			if where, ok := seen[v]; ok {
				t.Errorf("acks=1 record %q node %d took at %d/%d while isolated is in %s", v, r.Node, r.TailPartition, o, where)
			}
		}
	}
	t.Logf("failover over %d isolations: %v", len(runs), combine(fs...))
}

// isolation is what one isolated leader did.
type isolation struct {
	Node       int32
	Controller bool    // it was the active controller when cut off
	Led        []int32 // the partitions it led
	// Elected: from the cut until Metadata of one of the others named a
	// new leader, per partition it led (the longest).
	Elected  time.Duration
	Failover failover // from the cut to the first acks=all acknowledgement by another node
	// EarlyAcks: acks=all records it acknowledged within ackGrace of the
	// cut; LateAcks: after that, until the rejoin (must be 0); WindowAcks:
	// acknowledgements (by anyone) on its partitions from ackGrace after the
	// cut until a new leader existed (must be 0).
	EarlyAcks, LateAcks, WindowAcks int
	// Tail: the acks=1 records it acknowledged while isolated, by offset,
	// on TailPartition; TailRefused: the error of the first it refused.
	Tail          map[int64]string
	TailPartition int32
	TailRefused   error
	Refused       int64         // connections the cut proxies refused while it was isolated
	Rejoined      time.Duration // from the rejoin to a full ISR everywhere
	Truncated     time.Duration // from the rejoin until no node held the tail
}

func (r isolation) String() string {
	tail := fmt.Sprintf("took all %d acks=1 records on partition %d", len(r.Tail), r.TailPartition)
	if r.TailRefused != nil {
		tail = fmt.Sprintf("took %d acks=1 records on partition %d, then refused: %v", len(r.Tail), r.TailPartition, r.TailRefused)
	}
	return fmt.Sprintf("isolated node %d (active controller: %v), leader of %v: new leaders in the others' Metadata after %v; failover %v %v; "+
		"acks=all acknowledged by it within %v of the cut %d, after that %d; acknowledgements on its partitions before their new leader %d; "+
		"it %s; the cut proxies refused %d connections; after the rejoin: full ISR in %v, its tail gone from every node in %v",
		r.Node, r.Controller, r.Led, r.Elected.Round(time.Millisecond), r.Failover, r.Failover.Per,
		ackGrace, r.EarlyAcks, r.LateAcks, r.WindowAcks, tail, r.Refused, r.Rejoined.Round(time.Millisecond), r.Truncated.Round(time.Millisecond))
}

// isolateLeader isolates node x under the workload of ps, sends it acks=1
// records, waits for the failover of the partitions it led, rejoins it and
// waits for its divergent tail to be truncated and for a full ISR.
func isolateLeader(t *testing.T, ctx context.Context, c *Cluster, v viewers, topic string, ps *producerSet, round int, x int32) isolation {
	t.Helper()
	leaders, _ := c.waitAgreed(ctx, v, topic)
	r := isolation{Node: x, Led: ledBy(leaders, x)}
	r.TailPartition = r.Led[0]
	var others []int32
	for _, nd := range c.Nodes {
		if nd.ID != x {
			others = append(others, nd.ID)
		}
	}
	loaded := time.Now()
	all := allPartitions(int32(len(leaders)))
	within(t, ctx, ps, "load on every partition", func() bool { return ps.ackedSince(loaded, all) })

	// A client pinned to x, acks=1, uncompressed (diskBatches reads the
	// values), on a partition x leads.
	one, err := kgo.NewClient(kgo.SeedBrokers(c.Node(x).Addr), c.directTo(x), kgo.ClientID(fmt.Sprintf("acks-1-to-%d", x)),
		kgo.DefaultProduceTopic(topic), kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.RequiredAcks(kgo.LeaderAck()), kgo.DisableIdempotentWrite(),
		kgo.ProducerBatchCompression(kgo.NoCompression()), kgo.ProducerLinger(0),
		kgo.RecordDeliveryTimeout(2*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer one.Close()
	pctx, pcancel := context.WithTimeout(ctx, stepTimeout)
	defer pcancel()
	if err := one.ProduceSync(pctx, &kgo.Record{Partition: r.TailPartition, Value: []byte(fmt.Sprintf("round-%d-node-%d-warm-up", round, x))}).FirstErr(); err != nil {
		t.Fatalf("acks=1 warm-up to node %d: %v", x, err)
	}
	truncations := countTruncations(t, c.Node(x).LogPath, topic, r.TailPartition)

	for _, px := range c.isolationProxies(x) {
		r.Refused -= px.Refused()
	}
	c.Isolate(x)
	cut := time.Now()
	r.Tail = map[int64]string{}
	for i := range tailLen {
		v := fmt.Sprintf("round-%d-node-%d-acks1-%02d", round, x, i)
		rec, err := one.ProduceSync(pctx, &kgo.Record{Partition: r.TailPartition, Value: []byte(v)}).First()
		if err != nil {
			r.TailRefused = err
			break
		}
		r.Tail[rec.Offset] = v
	}
	one.Close()

	elected, before := c.waitNewLeaders(ctx, v, topic, x, others, r.Led)
	for _, p := range r.Led {
		r.Elected = max(r.Elected, elected[p].Sub(cut))
	}
	within(t, ctx, ps, fmt.Sprintf("acknowledgements by other nodes on every partition isolated node %d led", x), func() bool {
		return len(ps.failoverAway(cut, r.Led, x).Missing) == 0
	})
	r.Failover = ps.failoverAway(cut, r.Led, x)

	for _, px := range c.isolationProxies(x) {
		r.Refused += px.Refused()
	}
	c.Rejoin(x)
	rejoined := time.Now()
	for _, b := range ps.Batches() {
		switch {
		case b.Node != x || b.At.Before(cut) || b.At.After(rejoined):
		case b.At.Before(cut.Add(ackGrace)):
			r.EarlyAcks += b.Records
		default:
			r.LateAcks += b.Records
			t.Errorf("isolated node %d acknowledged %d acks=all records of partition %d %v after the cut",
				x, b.Records, b.Partition, b.At.Sub(cut).Round(time.Millisecond))
		}
	}
	for _, a := range ps.Acked() {
		if slices.Contains(r.Led, a.Partition) && a.At.After(cut.Add(ackGrace)) && a.At.Before(before[a.Partition]) {
			r.WindowAcks++
			t.Errorf("%q acknowledged at %d/%d %v after node %d was isolated, before its partition had a new leader (%v after the cut)",
				a.Value, a.Partition, a.Offset, a.At.Sub(cut).Round(time.Millisecond), x, before[a.Partition].Sub(cut).Round(time.Millisecond))
		}
	}

	c.waitAgreed(ctx, v, topic)
	r.Rejoined = time.Since(rejoined)
	if len(r.Tail) > 0 {
		tctx, tcancel := context.WithTimeout(ctx, stepTimeout)
		defer tcancel()
		var last string
		err := waitUntil(tctx, fmt.Sprintf("node %d to truncate its acks=1 tail", x), func() bool {
			if n := countTruncations(t, c.Node(x).LogPath, topic, r.TailPartition); n == truncations {
				last = "its log does not say it truncated partition " + fmt.Sprint(r.TailPartition)
				return false
			}
			for _, id := range []int32{x, others[0], others[1]} {
				bs, err := c.diskBatches(id, topic, r.TailPartition)
				if err != nil {
					last = err.Error()
					return false
				}
				for _, b := range bs {
					for o, v := range r.Tail {
						if b.Values[o] == v {
							last = fmt.Sprintf("node %d still holds %q at %d", id, v, o)
							return false
						}
					}
				}
			}
			return true
		})
		if err != nil {
			t.Fatalf("%v: %s", err, last)
		}
		r.Truncated = time.Since(rejoined)
	}
	return r
}

// countTruncations counts the lines of a node's log saying it truncated a
// divergent tail of topic-partition.
func countTruncations(t *testing.T, logPath, topic string, partition int32) int {
	t.Helper()
	b, err := os.ReadFile(logPath)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, line := range strings.Split(string(b), "\n") {
		if strings.Contains(line, "truncating a divergent tail") && strings.Contains(line, "topic="+topic+" ") &&
			strings.Contains(line, fmt.Sprintf("partition=%d ", partition)) {
			n++
		}
	}
	return n
}

// viewers holds one client per node that asks that node alone: its own
// view of the cluster, which an isolated node's stale answers cannot mix
// into (a client that asks any node may get them).
type viewers map[int32]*kgo.Client

// nodeView is one node's answer to Metadata for a topic.
type nodeView struct {
	Controller int32
	Parts      map[int32]viewPart
}

type viewPart struct {
	Leader, Epoch int32 // -1, -1: no leader
	ISR, Replicas []int32
}

// viewers returns a viewer client per node, closed when the test ends.
func (c *Cluster) viewers() viewers {
	c.t.Helper()
	v := viewers{}
	for _, nd := range c.Nodes {
		cl, err := kgo.NewClient(kgo.SeedBrokers(nd.Addr), c.directTo(nd.ID), kgo.ClientID(fmt.Sprintf("view-of-%d", nd.ID)))
		if err != nil {
			c.t.Fatal(err)
		}
		c.t.Cleanup(cl.Close)
		v[nd.ID] = cl
	}
	return v
}

// view asks node id alone for topic's partitions and the controller.
func (v viewers) view(ctx context.Context, id int32, topic string) (nodeView, error) {
	req := kmsg.NewPtrMetadataRequest()
	rt := kmsg.NewMetadataRequestTopic()
	rt.Topic = kmsg.StringPtr(topic)
	req.Topics = append(req.Topics, rt)
	rctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	resp, err := v[id].SeedBrokers()[0].Request(rctx, req)
	if err != nil {
		return nodeView{}, err
	}
	mr := resp.(*kmsg.MetadataResponse)
	out := nodeView{Controller: mr.ControllerID, Parts: map[int32]viewPart{}}
	for _, td := range mr.Topics {
		for _, pd := range td.Partitions {
			vp := viewPart{Leader: -1, Epoch: -1, ISR: slices.Sorted(slices.Values(pd.ISR)), Replicas: slices.Sorted(slices.Values(pd.Replicas))}
			if pd.ErrorCode == 0 {
				vp.Leader, vp.Epoch = pd.Leader, pd.LeaderEpoch
			}
			out.Parts[pd.Partition] = vp
		}
	}
	return out, nil
}

// waitAgreed polls every node until all of them name the same active
// controller, and the same leader and leader epoch for every partition of
// topic with every replica in its ISR; it returns the leaders and the
// controller.
func (c *Cluster) waitAgreed(ctx context.Context, v viewers, topic string) (map[int32]int32, int32) {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(ctx, stepTimeout)
	defer cancel()
	var ref nodeView
	var last string
	err := waitUntil(ctx, "every node to agree on a full ISR of "+topic, func() bool {
		for i, nd := range c.Nodes {
			nv, err := v.view(ctx, nd.ID, topic)
			if err != nil {
				last = fmt.Sprintf("node %d: %v", nd.ID, err)
				return false
			}
			last = fmt.Sprintf("node %d sees controller %d, partitions %v", nd.ID, nv.Controller, nv.Parts)
			if i == 0 {
				ref = nv
			}
			if nv.Controller <= 0 || nv.Controller != ref.Controller || len(nv.Parts) == 0 || len(nv.Parts) != len(ref.Parts) {
				return false
			}
			for p, vp := range nv.Parts {
				if vp.Leader <= 0 || vp.Leader != ref.Parts[p].Leader || vp.Epoch != ref.Parts[p].Epoch ||
					!slices.Equal(vp.ISR, vp.Replicas) || len(vp.Replicas) != len(c.Nodes) {
					return false
				}
			}
		}
		return true
	})
	if err != nil {
		c.t.Fatalf("%v: %s", err, last)
	}
	leaders := map[int32]int32{}
	for p, vp := range ref.Parts {
		leaders[p] = vp.Leader
	}
	return leaders, ref.Controller
}

// waitNewLeaders polls the Metadata of each of others (their own view,
// not x's) until, for every partition of led, one of them names itself
// its leader. It returns per partition when an answer first named a
// leader other than x (elected), and a time before which only x can have
// led it (before): the earliest, over others, of the sending time of that
// node's last answer not naming itself, before it first did.
func (c *Cluster) waitNewLeaders(ctx context.Context, v viewers, topic string, x int32, others, led []int32) (elected, before map[int32]time.Time) {
	c.t.Helper()
	elected, before = map[int32]time.Time{}, map[int32]time.Time{}
	notLeader := map[int32]map[int32]time.Time{} // node → partition → last sending time of an answer not naming it
	leads := map[int32]map[int32]bool{}          // node → partition → it named itself
	for _, id := range others {
		notLeader[id], leads[id] = map[int32]time.Time{}, map[int32]bool{}
	}
	wctx, cancel := context.WithTimeout(ctx, stepTimeout)
	defer cancel()
	var last string
	err := waitUntil(wctx, fmt.Sprintf("new leaders of node %d's partitions %v", x, led), func() bool {
		for _, id := range others {
			sent := time.Now()
			nv, err := v.view(wctx, id, topic)
			if err != nil {
				last = fmt.Sprintf("node %d: %v", id, err)
				continue
			}
			last = fmt.Sprintf("node %d sees %v", id, nv.Parts)
			for _, p := range led {
				l := nv.Parts[p].Leader
				if _, ok := elected[p]; !ok && l > 0 && l != x {
					elected[p] = time.Now()
				}
				switch {
				case l == id:
					leads[id][p] = true
				case !leads[id][p]:
					notLeader[id][p] = sent
				}
			}
		}
		for _, p := range led {
			if !slices.ContainsFunc(others, func(id int32) bool { return leads[id][p] }) {
				return false
			}
		}
		return true
	})
	if err != nil {
		c.t.Fatalf("%v: %s", err, last)
	}
	for _, p := range led {
		for _, id := range others {
			if b, ok := before[p]; !ok || notLeader[id][p].Before(b) {
				before[p] = notLeader[id][p]
			}
		}
	}
	return elected, before
}
