package broker_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/runnel-io/runnel/broker/brokertest"
)

// clusterClient is a franz-go client of every running node of c.
func clusterClient(t testing.TB, c *brokertest.Cluster, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(c.Seeds()...), kgo.MetadataMinAge(50 * time.Millisecond)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl
}

// waitState polls cond every 20 ms until it holds or ctx ends; cond
// says what it saw, for the failure message.
func waitState(t testing.TB, ctx context.Context, what string, cond func() (bool, string)) {
	t.Helper()
	last := ""
	for {
		ok, state := cond()
		if ok {
			return
		}
		last = state
		select {
		case <-ctx.Done():
			t.Fatalf("waiting for %s: %v (last: %s)", what, ctx.Err(), last)
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// fullISR waits until every partition of topic has a leader and all its
// replicas in the ISR, and returns the leaders.
func fullISR(t testing.TB, ctx context.Context, adm *kadm.Client, topic string) map[int32]int32 {
	t.Helper()
	leaders := map[int32]int32{}
	waitState(t, ctx, "a full ISR on "+topic, func() (bool, string) {
		md, err := adm.Metadata(ctx, topic)
		if err != nil {
			return false, err.Error()
		}
		td := md.Topics[topic]
		if td.Err != nil || len(td.Partitions) == 0 {
			return false, fmt.Sprint(td.Err)
		}
		for _, p := range td.Partitions {
			if p.Leader < 0 || len(p.ISR) != len(p.Replicas) {
				return false, fmt.Sprintf("partition %d leader %d isr %v replicas %v", p.Partition, p.Leader, p.ISR, p.Replicas)
			}
			leaders[p.Partition] = p.Leader
		}
		return true, ""
	})
	return leaders
}

// TestClusterReplicatesAndFailsOver: three nodes, RF=3,
// min.insync.replicas=2. acks=all writes land on every replica; stopping
// a leader moves leadership without losing an acknowledged record; the
// node comes back, catches up and rejoins the ISR.
func TestClusterReplicatesAndFailsOver(t *testing.T) {
	c := brokertest.StartCluster(t, 3)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cl := clusterClient(t, c, kgo.RequiredAcks(kgo.AllISRAcks()), kgo.DefaultProduceTopic("r"))
	adm := kadm.NewClient(cl)
	resp, err := adm.CreateTopic(ctx, 3, 3, map[string]*string{"min.insync.replicas": new("2")}, "r")
	if err != nil || resp.Err != nil {
		t.Fatalf("create: %v %v", err, resp.Err)
	}
	leaders := fullISR(t, ctx, adm, "r")

	var want []string
	produce := func(n int) {
		t.Helper()
		for i := range n {
			v := fmt.Sprintf("v%04d", len(want))
			if err := cl.ProduceSync(ctx, &kgo.Record{Key: []byte(v), Value: []byte(v), Partition: int32(i % 3)}).FirstErr(); err != nil {
				t.Fatalf("produce %s: %v", v, err)
			}
			want = append(want, v)
		}
	}
	produce(90)

	// Every replica holds what was acknowledged: each node's end offsets
	// reach the leader's high watermark.
	ends, err := adm.ListEndOffsets(ctx, "r")
	if err != nil {
		t.Fatal(err)
	}
	var total int64
	ends.Each(func(o kadm.ListedOffset) { total += o.Offset })
	if total != 90 {
		t.Fatalf("high watermarks add up to %d, want 90", total)
	}

	// Stop the leader of partition 0 (a controlled shutdown).
	victim := leaders[0]
	c.Node(victim).Stop(t)
	waitState(t, ctx, "a new leader of r-0", func() (bool, string) {
		md, err := adm.Metadata(ctx, "r")
		if err != nil {
			return false, err.Error()
		}
		p := md.Topics["r"].Partitions[0]
		return p.Leader >= 0 && p.Leader != victim, fmt.Sprintf("leader %d", p.Leader)
	})
	produce(60)
	// The ISRs without the victim show on the leaders; one node is the
	// active controller.
	waitState(t, ctx, "under-replicated partitions in the metrics", func() (bool, string) {
		n := clusterMetric(t, c, "runnel_broker_under_replicated_partitions")
		return n == 3, fmt.Sprint(n)
	})
	if n := clusterMetric(t, c, "runnel_broker_active_controller"); n != 1 {
		t.Fatalf("%v active controllers", n)
	}

	c.Restart(victim)
	cl2 := clusterClient(t, c)
	fullISR(t, ctx, kadm.NewClient(cl2), "r")
	produce(30)
	waitState(t, ctx, "no under-replicated partition in the metrics", func() (bool, string) {
		n := clusterMetric(t, c, "runnel_broker_under_replicated_partitions")
		return n == 0, fmt.Sprint(n)
	})
	if n := clusterMetric(t, c, "runnel_broker_leader_partitions"); n < 3 {
		t.Fatalf("%v partitions led in all, want at least the topic's 3", n)
	}

	got := readAll(t, ctx, c, "r", len(want))
	slices.Sort(got)
	if !slices.Equal(got, want) {
		t.Fatalf("read %d records, want %d; first differences: %v", len(got), len(want), firstDiff(got, want))
	}
}

// readAll reads n records of topic from the start with a fresh client.
func readAll(t testing.TB, ctx context.Context, c *brokertest.Cluster, topic string, n int) []string {
	t.Helper()
	cl := clusterClient(t, c, kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	var out []string
	for len(out) < n {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("read %d of %d records of %s", len(out), n, topic)
		}
		fs.EachRecord(func(r *kgo.Record) { out = append(out, string(r.Value)) })
	}
	return out
}

// clusterMetric sums the samples of metric name (with labels, as
// sumSamples) over the running nodes.
func clusterMetric(t *testing.T, c *brokertest.Cluster, name string, labels ...string) float64 {
	t.Helper()
	sum := 0.0
	for _, b := range c.Running() {
		sum += sumSamples(t, scrape(t, b), name, labels...)
	}
	return sum
}

// nodesBut returns the ids of a three-node cluster but except.
func nodesBut(except int32) []int32 {
	var out []int32
	for id := int32(1); id <= 3; id++ {
		if id != except {
			out = append(out, id)
		}
	}
	return out
}

func firstDiff(got, want []string) string {
	for i := range min(len(got), len(want)) {
		if got[i] != want[i] {
			return fmt.Sprintf("at %d got %s want %s", i, got[i], want[i])
		}
	}
	return fmt.Sprintf("lengths %d and %d", len(got), len(want))
}

// TestClusterGroupCoordinatorMoves: with __consumer_offsets replicated on
// three nodes, the group's coordinator is the leader of its partition;
// when that node stops, the new leader coordinates the group from the
// replicated records, and the committed offsets are the last ones
// acknowledged, never older.
func TestClusterGroupCoordinatorMoves(t *testing.T) {
	c := brokertest.StartCluster(t, 3, map[string]string{"offsets.topic.replication.factor": "3", "offsets.topic.num.partitions": "3"})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cl := clusterClient(t, c)
	adm := kadm.NewClient(cl)
	if _, err := adm.CreateTopic(ctx, 1, 3, nil, "g"); err != nil {
		t.Fatal(err)
	}
	commit := func(off int64) {
		t.Helper()
		os := kadm.Offsets{}
		os.Add(kadm.Offset{Topic: "g", Partition: 0, At: off, LeaderEpoch: -1})
		waitState(t, ctx, fmt.Sprintf("commit %d", off), func() (bool, string) {
			r, err := adm.CommitOffsets(ctx, "grp", os)
			if err == nil {
				err = r.Error()
			}
			return err == nil, fmt.Sprint(err)
		})
	}
	fetched := func() int64 {
		t.Helper()
		var at int64 = -2
		waitState(t, ctx, "fetch offsets", func() (bool, string) {
			r, err := adm.FetchOffsets(ctx, "grp")
			if err == nil {
				err = r.Error()
			}
			if err != nil {
				// franz-go v1.22's sharded OffsetFetch keeps a cached
				// coordinator whose connection is refused (it forgets one
				// only on a coordinator error code): start afresh.
				adm = kadm.NewClient(clusterClient(t, c))
				return false, err.Error()
			}
			o, _ := r.Lookup("g", 0)
			at = o.At
			return true, ""
		})
		return at
	}
	for i := int64(1); i <= 20; i++ {
		commit(i)
	}
	fullISR(t, ctx, adm, "__consumer_offsets")
	coords := adm.FindGroupCoordinators(ctx, "grp")
	co, ok := coords["grp"]
	if !ok || co.Err != nil {
		t.Fatalf("find coordinator: %+v", coords)
	}
	c.Node(co.NodeID).Stop(t)
	if got := fetched(); got != 20 {
		t.Fatalf("after the coordinator %d stopped the group's offset is %d, want 20", co.NodeID, got)
	}
	commit(21)
	if got := fetched(); got != 21 {
		t.Fatalf("commit after the move: offset %d, want 21", got)
	}
	after := adm.FindGroupCoordinators(ctx, "grp")["grp"]
	if after.Err != nil || after.NodeID == co.NodeID {
		t.Fatalf("coordinator after the stop: %+v (was %d)", after, co.NodeID)
	}
}

// TestClusterProducerIDsFromEveryNode: nodes reserve producer id blocks
// concurrently; every InitProducerID succeeds, and no id is handed out
// twice.
func TestClusterProducerIDsFromEveryNode(t *testing.T) {
	c := brokertest.StartCluster(t, 3)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	seen := map[int64]bool{}
	for round := range 3 {
		type got struct {
			id  int64
			err error
		}
		ch := make(chan got, 3)
		for _, b := range c.Brokers {
			go func() {
				cl := clusterClient(t, c, kgo.SeedBrokers(b.Addr()))
				resp, err := kmsg.NewPtrInitProducerIDRequest().RequestWith(ctx, cl)
				if err == nil {
					err = kerr.ErrorForCode(resp.ErrorCode)
				}
				var id int64 = -1
				if resp != nil {
					id = resp.ProducerID
				}
				ch <- got{id, err}
			}()
		}
		for range 3 {
			g := <-ch
			if g.err != nil {
				t.Fatalf("round %d: InitProducerID: %v", round, g.err)
			}
			if _, dup := seen[g.id]; dup {
				t.Fatalf("round %d: producer id %d handed out twice", round, g.id)
			}
			seen[g.id] = true
		}
	}
}

// TestClusterFollowersFollowLogStart: records deleted on the leader
// (DeleteRecords) are deleted on the followers too: one that was in sync
// moves its log start with the leader's, and one that was stopped and
// whose log ends below the leader's log start restarts its log there. So
// whichever replica leads later, the deleted records stay deleted.
func TestClusterFollowersFollowLogStart(t *testing.T) {
	c := brokertest.StartCluster(t, 3)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cl := clusterClient(t, c, kgo.RequiredAcks(kgo.AllISRAcks()), kgo.DefaultProduceTopic("d"))
	adm := kadm.NewClient(cl)
	if _, err := adm.CreateTopic(ctx, 1, 3, nil, "d"); err != nil {
		t.Fatal(err)
	}
	leader := fullISR(t, ctx, adm, "d")[0]
	others := nodesBut(leader)
	behind, inSync := others[0], others[1]
	c.Node(behind).Stop(t)
	produce := func(n int) {
		t.Helper()
		for range n {
			if err := cl.ProduceSync(ctx, &kgo.Record{Value: []byte("x")}).FirstErr(); err != nil {
				t.Fatal(err)
			}
		}
	}
	produce(50)
	del := kadm.Offsets{}
	del.Add(kadm.Offset{Topic: "d", Partition: 0, At: 40})
	if resp, err := adm.DeleteRecords(ctx, del); err != nil || resp.Error() != nil {
		t.Fatalf("delete records: %v %v", err, resp.Error())
	}
	c.Restart(behind)
	adm = kadm.NewClient(clusterClient(t, c))
	fullISR(t, ctx, adm, "d")
	// earliestOn makes node id the leader of d-0 (its replicas reordered
	// to put it first, then a preferred election) and returns the log
	// start it serves.
	earliestOn := func(id int32) int64 {
		t.Helper()
		a := kadm.NewClient(clusterClient(t, c))
		order := append([]int32{id}, nodesBut(id)...)
		re := kadm.AlterPartitionAssignmentsReq{}
		re.Assign("d", 0, order)
		if resp, err := a.AlterPartitionAssignments(ctx, re); err != nil || resp.Error() != nil {
			t.Fatalf("reorder d-0: %v %v", err, resp.Error())
		}
		d0 := kadm.TopicsSet{}
		d0.Add("d", 0)
		var start int64 = -1
		waitState(t, ctx, fmt.Sprintf("node %d leading d-0", id), func() (bool, string) {
			if res, err := a.ElectLeaders(ctx, kadm.ElectPreferredReplica, d0); err != nil {
				return false, err.Error()
			} else if r := res["d"][0]; r.Err != nil && !errors.Is(r.Err, kerr.ElectionNotNeeded) {
				return false, r.Err.Error()
			}
			md, err := a.Metadata(ctx, "d")
			if err != nil || md.Topics["d"].Partitions[0].Leader != id {
				return false, fmt.Sprint(err)
			}
			st, err := a.ListStartOffsets(ctx, "d")
			if err != nil {
				return false, err.Error()
			}
			o, ok := st.Lookup("d", 0)
			if !ok || o.Err != nil {
				return false, fmt.Sprint(o.Err)
			}
			start = o.Offset
			return true, ""
		})
		return start
	}
	if got := earliestOn(inSync); got != 40 {
		t.Fatalf("the follower that was in sync starts at %d, want 40", got)
	}
	if got := earliestOn(behind); got != 40 {
		t.Fatalf("the follower that was behind the log start starts at %d, want 40", got)
	}
}

// TestClusterWaitingJoinAnsweredWhenCoordinatorMoves: a JoinGroup waiting
// for the rest of its group is answered NOT_COORDINATOR as soon as its
// node stops leading the group's __consumer_offsets partition, not after
// the rebalance timeout, so the client finds the new coordinator at once.
func TestClusterWaitingJoinAnsweredWhenCoordinatorMoves(t *testing.T) {
	c := brokertest.StartCluster(t, 3, map[string]string{
		"offsets.topic.replication.factor": "3", "offsets.topic.num.partitions": "1",
		"group.initial.rebalance.delay.ms": "0", "auto.leader.rebalance.enable": "false",
	})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	adm := kadm.NewClient(clusterClient(t, c))
	co := adm.FindGroupCoordinators(ctx, "g")["g"]
	if co.Err != nil {
		t.Fatal(co.Err)
	}
	fullISR(t, ctx, adm, "__consumer_offsets")
	cl := clusterClient(t, c)
	coord := cl.Broker(int(co.NodeID))
	join := func(member string) *kmsg.JoinGroupResponse {
		t.Helper()
		req := kmsg.NewPtrJoinGroupRequest()
		req.Group, req.MemberID, req.ProtocolType = "g", member, "consumer"
		req.SessionTimeoutMillis, req.RebalanceTimeoutMillis = 30000, 60000
		p := kmsg.NewJoinGroupRequestProtocol()
		p.Name, p.Metadata = "range", []byte{0, 0, 0, 0, 0, 0, 0, 0, 0, 0}
		req.Protocols = append(req.Protocols, p)
		resp, err := req.RequestWith(ctx, coord)
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}
	// memberID asks for a member id (KIP-394); the coordinator may not
	// have applied the offsets topic's creation yet: NOT_COORDINATOR is
	// asked again, as clients do.
	memberID := func() string {
		t.Helper()
		var id string
		waitState(t, ctx, "a member id", func() (bool, string) {
			req := kmsg.NewPtrJoinGroupRequest()
			req.Group, req.ProtocolType = "g", "consumer"
			req.SessionTimeoutMillis, req.RebalanceTimeoutMillis = 30000, 60000
			p := kmsg.NewJoinGroupRequestProtocol()
			p.Name = "range"
			req.Protocols = append(req.Protocols, p)
			resp, err := req.RequestWith(ctx, coord)
			if err != nil || resp.ErrorCode != kerr.MemberIDRequired.Code {
				return false, fmt.Sprint(err, resp)
			}
			id = resp.MemberID
			return true, ""
		})
		return id
	}
	a := memberID()
	ja := join(a)
	if ja == nil || ja.ErrorCode != 0 {
		t.Fatalf("member a joins: %+v", ja)
	}
	sync := kmsg.NewPtrSyncGroupRequest()
	sync.Group, sync.Generation, sync.MemberID = "g", ja.Generation, a
	if resp, err := sync.RequestWith(ctx, coord); err != nil || resp.ErrorCode != 0 {
		t.Fatalf("member a syncs: %v %v", err, resp)
	}
	// b joins: the group waits up to 60 s for a to join again.
	b := memberID()
	answered := make(chan *kmsg.JoinGroupResponse, 1)
	go func() { answered <- join(b) }()
	// Move the partition's leadership away from the coordinator.
	order := append(nodesBut(co.NodeID), co.NodeID)
	re := kadm.AlterPartitionAssignmentsReq{}
	re.Assign("__consumer_offsets", 0, order)
	if resp, err := adm.AlterPartitionAssignments(ctx, re); err != nil || resp.Error() != nil {
		t.Fatalf("reorder: %v %v", err, resp.Error())
	}
	set := kadm.TopicsSet{}
	set.Add("__consumer_offsets", 0)
	moved := time.Now()
	if res, err := adm.ElectLeaders(ctx, kadm.ElectPreferredReplica, set); err != nil || res["__consumer_offsets"][0].Err != nil {
		t.Fatalf("elect: %v %+v", err, res)
	}
	select {
	case resp := <-answered:
		if resp == nil || resp.ErrorCode != kerr.NotCoordinator.Code {
			t.Fatalf("the waiting JoinGroup got %+v, want NOT_COORDINATOR", resp)
		}
		t.Logf("answered NOT_COORDINATOR %v after the leadership moved", time.Since(moved).Round(time.Millisecond))
	case <-time.After(20 * time.Second):
		t.Fatal("the waiting JoinGroup was not answered within 20 s of the move (its rebalance timeout is 60 s)")
	}
}
