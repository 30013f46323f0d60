package broker_test

// Consumer groups end to end through franz-go: kgo group consumers (range,
// cooperative-sticky, static membership), commits and refetch, kadm's group
// admin calls, and groups and offsets surviving a restart.

import (
	"context"
	"fmt"
	"io"
	"maps"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/runnel-io/runnel/broker"
	"github.com/runnel-io/runnel/broker/brokertest"
)

// groupSettings make rebalances quick: no initial delay.
var groupSettings = map[string]string{"group.initial.rebalance.delay.ms": "0"}

func produceN(t *testing.T, b *brokertest.Broker, topic string, from, n int) {
	t.Helper()
	cl := newClient(t, b, kgo.DefaultProduceTopic(topic))
	var rs []*kgo.Record
	for i := from; i < from+n; i++ {
		rs = append(rs, &kgo.Record{Key: []byte(fmt.Sprint(i % 7)), Value: []byte(fmt.Sprint(i))})
	}
	if err := cl.ProduceSync(testCtx(t), rs...).FirstErr(); err != nil {
		t.Fatalf("produce: %v", err)
	}
}

// groupMember is one consumer of a group: its client, the partitions its
// rebalance callbacks say it owns now and how many it gave up, and the
// partition of each value it polled.
type groupMember struct {
	cl      *kgo.Client
	mu      sync.Mutex
	owned   map[int32]bool
	revoked int
	polled  map[string]int32
}

// newGroupMember starts a consumer of topic in groupID that commits only
// when told (consumeMembers commits after each poll) and rebalances only
// between polls.
func newGroupMember(t *testing.T, b *brokertest.Broker, topic, groupID string, opts ...kgo.Opt) *groupMember {
	t.Helper()
	m := &groupMember{owned: map[int32]bool{}, polled: map[string]int32{}}
	track := func(own bool) func(context.Context, *kgo.Client, map[string][]int32) {
		return func(_ context.Context, _ *kgo.Client, ps map[string][]int32) {
			m.mu.Lock()
			defer m.mu.Unlock()
			for _, p := range ps[topic] {
				if own {
					m.owned[p] = true
				} else if m.owned[p] {
					delete(m.owned, p)
					m.revoked++
				}
			}
		}
	}
	m.cl = newClient(t, b, append([]kgo.Opt{kgo.ConsumerGroup(groupID), kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.DisableAutoCommit(),
		kgo.FetchMaxWait(200 * time.Millisecond), kgo.BlockRebalanceOnPoll(),
		kgo.OnPartitionsAssigned(track(true)), kgo.OnPartitionsRevoked(track(false)),
		kgo.OnPartitionsLost(track(false))}, opts...)...)
	return m
}

// ownedParts returns the partitions m owns now, sorted.
func (m *groupMember) ownedParts() []int32 {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Sorted(maps.Keys(m.owned))
}

// consumeMembers polls with every member, committing after each poll,
// until together they have seen want distinct values, and returns how
// often each value was seen.
func consumeMembers(t *testing.T, groupID string, ms []*groupMember, want int) map[string]int {
	t.Helper()
	var mu sync.Mutex
	seen := map[string]int{}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var wg sync.WaitGroup
	for _, m := range ms {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				fs := m.cl.PollFetches(ctx)
				mu.Lock()
				m.mu.Lock()
				for _, r := range fs.Records() {
					seen[string(r.Value)]++
					m.polled[string(r.Value)] = r.Partition
				}
				m.mu.Unlock()
				mu.Unlock()
				// Rebalances wait for AllowRebalance, so what was polled
				// is committed by its owner: a record seen twice would be
				// the coordinator's fault. The commit has its own context:
				// ctx ends as soon as any member has seen the last value,
				// and a commit it cut short would be lost.
				cctx, ccancel := context.WithTimeout(context.Background(), ioTimeout)
				err := m.cl.CommitUncommittedOffsets(cctx)
				ccancel()
				if err != nil {
					t.Errorf("group %s commit: %v", groupID, err)
				}
				m.cl.AllowRebalance()
				mu.Lock()
				done := len(seen) >= want
				mu.Unlock()
				if done {
					cancel()
				}
			}
		}()
	}
	wg.Wait()
	mu.Lock()
	defer mu.Unlock()
	if len(seen) < want {
		t.Fatalf("group %s saw %d of %d records", groupID, len(seen), want)
	}
	return seen
}

// consumeGroup runs members group consumers, committing after each poll,
// until together they have seen want distinct values, and returns how often
// each value was seen and the (still open) clients.
func consumeGroup(t *testing.T, b *brokertest.Broker, topic, groupID string, members, want int, opts ...kgo.Opt) (map[string]int, []*kgo.Client) {
	t.Helper()
	var ms []*groupMember
	var cls []*kgo.Client
	for range members {
		m := newGroupMember(t, b, topic, groupID, opts...)
		ms = append(ms, m)
		cls = append(cls, m.cl)
	}
	return consumeMembers(t, groupID, ms, want), cls
}

// testGroupConsume has two members share a 4-partition topic: the first
// joins alone and owns all 4, then the second joins and each ends with 2,
// which check (the strategy's own test) looks at. Only then are 200
// records produced, 50 to each partition, so both members consume: each
// only from the partitions it owns, and every record exactly once.
func testGroupConsume(t *testing.T, check func(t *testing.T, first, second *groupMember), opts ...kgo.Opt) {
	const parts, n = 4, 200
	b := brokertest.Start(t, groupSettings)
	rc := dialRaw(t, b.Addr())
	rc.createTopic("orders", parts, nil)
	first := newGroupMember(t, b, "orders", "g1", opts...)
	waitFor(t, ioTimeout, "the first member to own all 4 partitions", func() bool { return len(first.ownedParts()) == parts })
	second := newGroupMember(t, b, "orders", "g1", opts...)
	waitFor(t, ioTimeout, "each member to own 2 partitions", func() bool {
		return len(first.ownedParts()) == parts/2 && len(second.ownedParts()) == parts/2
	})
	check(t, first, second)
	owned := [][]int32{first.ownedParts(), second.ownedParts()}
	if slices.ContainsFunc(owned[0], func(p int32) bool { return slices.Contains(owned[1], p) }) {
		t.Fatalf("both members own a partition: %v and %v", owned[0], owned[1])
	}

	pr := newClient(t, b, kgo.DefaultProduceTopic("orders"), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	var rs []*kgo.Record
	for i := range n {
		rs = append(rs, &kgo.Record{Partition: int32(i % parts), Value: []byte(fmt.Sprint(i))})
	}
	if err := pr.ProduceSync(testCtx(t), rs...).FirstErr(); err != nil {
		t.Fatalf("produce: %v", err)
	}
	seen := consumeMembers(t, "g1", []*groupMember{first, second}, n)
	for v, c := range seen {
		if c != 1 {
			t.Errorf("value %s consumed %d times", v, c)
		}
	}
	for i, m := range []*groupMember{first, second} {
		if now := m.ownedParts(); !slices.Equal(now, owned[i]) {
			t.Errorf("member %d owns %v after consuming, %v before: the group rebalanced", i+1, now, owned[i])
		}
		m.mu.Lock()
		from := map[int32]int{}
		for _, p := range m.polled {
			from[p]++
		}
		m.mu.Unlock()
		for p, k := range from {
			if !slices.Contains(owned[i], p) {
				t.Errorf("member %d consumed %d records of partition %d, which it does not own (%v)", i+1, k, p, owned[i])
			}
		}
		for _, p := range owned[i] {
			if from[p] != n/parts {
				t.Errorf("member %d consumed %d records of its partition %d, want %d", i+1, from[p], p, n/parts)
			}
		}
	}
	first.cl.Close()
	second.cl.Close()
	adm := newAdmin(t, b)
	offs, err := adm.FetchOffsets(testCtx(t), "g1")
	if err != nil {
		t.Fatalf("FetchOffsets: %v", err)
	}
	var total int64
	offs.Each(func(o kadm.OffsetResponse) { total += o.At })
	if total != n {
		t.Fatalf("committed offsets sum to %d, want %d", total, n)
	}
	// A new member resumes from the commits: it sees only new records.
	produceN(t, b, "orders", n, 20)
	seen2, _ := consumeGroup(t, b, "orders", "g1", 1, 20, opts...)
	for v := range seen2 {
		if _, old := seen[v]; old {
			t.Errorf("record %s consumed again after its offset was committed", v)
		}
	}
}

// Range gives each member a run of partitions, in member id order: the
// lower id 0 and 1, the other 2 and 3.
func TestGroupRange(t *testing.T) {
	testGroupConsume(t, func(t *testing.T, first, second *groupMember) {
		lo, hi := first, second
		id1, _ := first.cl.GroupMetadata()
		id2, _ := second.cl.GroupMetadata()
		if id2 < id1 {
			lo, hi = second, first
		}
		if got := lo.ownedParts(); !slices.Equal(got, []int32{0, 1}) {
			t.Errorf("the member with the lower id owns %v, want [0 1]", got)
		}
		if got := hi.ownedParts(); !slices.Equal(got, []int32{2, 3}) {
			t.Errorf("the member with the higher id owns %v, want [2 3]", got)
		}
	}, kgo.Balancers(kgo.RangeBalancer()))
}

// Cooperative sticky moves only what must move: the first member keeps two
// of its four partitions and gives up just the two the second one takes.
func TestGroupCooperativeSticky(t *testing.T) {
	testGroupConsume(t, func(t *testing.T, first, second *groupMember) {
		first.mu.Lock()
		revoked := first.revoked
		first.mu.Unlock()
		if revoked != 2 {
			t.Errorf("the first member gave up %d partitions, want the 2 the second one took", revoked)
		}
		second.mu.Lock()
		revoked = second.revoked
		second.mu.Unlock()
		if revoked != 0 {
			t.Errorf("the second member gave up %d partitions", revoked)
		}
	}, kgo.Balancers(kgo.CooperativeStickyBalancer()))
}

func TestGroupStaticMembers(t *testing.T) {
	b := brokertest.Start(t, groupSettings)
	rc := dialRaw(t, b.Addr())
	rc.createTopic("static", 2, nil)
	produceN(t, b, "static", 0, 50)
	_, cls := consumeGroup(t, b, "static", "gs", 1, 50, kgo.InstanceID("inst-1"))
	adm := newAdmin(t, b)
	dg, err := adm.DescribeGroups(testCtx(t), "gs")
	if err != nil {
		t.Fatalf("DescribeGroups: %v", err)
	}
	g := dg["gs"]
	if g.State != "Stable" || len(g.Members) != 1 || g.Members[0].InstanceID == nil || *g.Members[0].InstanceID != "inst-1" {
		t.Fatalf("group: state %s, members %+v", g.State, g.Members)
	}
	first := g.Members[0].MemberID
	// A static member leaves no LeaveGroup behind (kgo does not send one
	// for an instance id): its replacement takes its place with a new id.
	cls[0].Close()
	produceN(t, b, "static", 50, 10)
	consumeGroup(t, b, "static", "gs", 1, 10, kgo.InstanceID("inst-1"))
	dg, err = adm.DescribeGroups(testCtx(t), "gs")
	if err != nil {
		t.Fatalf("DescribeGroups: %v", err)
	}
	g = dg["gs"]
	if len(g.Members) != 1 || g.Members[0].MemberID == first {
		t.Fatalf("after the restart: members %+v (first id %s)", g.Members, first)
	}
}

func TestGroupAdmin(t *testing.T) {
	b := brokertest.Start(t, groupSettings)
	rc := dialRaw(t, b.Addr())
	rc.createTopic("adm", 3, nil)
	produceN(t, b, "adm", 0, 30)
	adm := newAdmin(t, b)
	ctx := testCtx(t)
	// A simple group: commits without joining.
	os := kadm.Offsets{}
	os.Add(kadm.Offset{Topic: "adm", Partition: 0, At: 5, LeaderEpoch: -1, Metadata: "m0"})
	os.Add(kadm.Offset{Topic: "adm", Partition: 1, At: 7, LeaderEpoch: -1})
	resp, err := adm.CommitOffsets(ctx, "simple", os)
	if err != nil || resp.Error() != nil {
		t.Fatalf("CommitOffsets: %v %v", err, resp.Error())
	}
	got, err := adm.FetchOffsets(ctx, "simple")
	if err != nil {
		t.Fatalf("FetchOffsets: %v", err)
	}
	if o, _ := got.Lookup("adm", 0); o.At != 5 || o.Metadata != "m0" {
		t.Fatalf("adm/0: %+v", o)
	}
	// A consumer group, live.
	cl := newClient(t, b, kgo.ConsumerGroup("live"), kgo.ConsumeTopics("adm"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	for n := 0; n < 30; {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatal("live group consumed nothing")
		}
		n += len(fs.Records())
	}
	if err := cl.CommitUncommittedOffsets(ctx); err != nil {
		t.Fatalf("commit: %v", err)
	}
	lg, err := adm.ListGroups(ctx)
	if err != nil {
		t.Fatalf("ListGroups: %v", err)
	}
	if _, ok := lg["simple"]; !ok {
		t.Errorf("ListGroups lacks the simple group: %v", lg.Groups())
	}
	if g, ok := lg["live"]; !ok || g.State != "Stable" || g.ProtocolType != "consumer" {
		t.Errorf("ListGroups live: %+v", g)
	}
	stable, err := adm.ListGroups(ctx, "Stable")
	if err != nil || len(stable) != 1 {
		t.Errorf("ListGroups Stable: %v %v", stable.Groups(), err)
	}
	// Deleting a live group or its subscribed offsets is refused.
	dr, err := adm.DeleteGroups(ctx, "live")
	if err != nil || dr["live"].Err == nil {
		t.Errorf("DeleteGroups of a live group: %v %+v", err, dr["live"])
	}
	ts := kadm.TopicsSet{}
	ts.Add("adm", 0)
	dor, err := adm.DeleteOffsets(ctx, "live", ts)
	if err != nil || dor.Error() == nil {
		t.Errorf("DeleteOffsets of a subscribed topic: %v %v", err, dor)
	}
	cl.Close()
	// The simple group's offsets and the group itself can go.
	dor, err = adm.DeleteOffsets(ctx, "simple", ts)
	if err != nil || dor.Error() != nil {
		t.Fatalf("DeleteOffsets simple: %v %v", err, dor.Error())
	}
	got, _ = adm.FetchOffsets(ctx, "simple")
	if _, ok := got.Lookup("adm", 0); ok {
		t.Errorf("adm/0 still committed after DeleteOffsets")
	}
	dr, err = adm.DeleteGroups(ctx, "simple", "live", "nosuch")
	if err != nil {
		t.Fatalf("DeleteGroups: %v", err)
	}
	if dr["simple"].Err != nil || dr["live"].Err != nil || dr["nosuch"].Err == nil {
		t.Fatalf("DeleteGroups: %+v", dr)
	}
	lg, _ = adm.ListGroups(ctx)
	if len(lg) != 0 {
		t.Fatalf("groups left after deleting them: %v", lg.Groups())
	}
}

func TestGroupOffsetsSurviveRestart(t *testing.T) {
	b := brokertest.Start(t, groupSettings)
	rc := dialRaw(t, b.Addr())
	rc.createTopic("durable", 2, nil)
	produceN(t, b, "durable", 0, 40)
	_, cls := consumeGroup(t, b, "durable", "gd", 1, 40)
	cls[0].Close()
	adm := newAdmin(t, b)
	os := kadm.Offsets{}
	os.Add(kadm.Offset{Topic: "durable", Partition: 0, At: 3, LeaderEpoch: -1, Metadata: "simple"})
	if _, err := adm.CommitOffsets(testCtx(t), "gsimple", os); err != nil {
		t.Fatal(err)
	}
	before, err := adm.FetchOffsets(testCtx(t), "gd")
	if err != nil {
		t.Fatal(err)
	}
	b.Stop(t)

	b2 := brokertest.StartWith(t, broker.Config{Settings: b.Settings})
	adm2 := newAdmin(t, b2)
	ctx := testCtx(t)
	after, err := adm2.FetchOffsets(ctx, "gd")
	if err != nil {
		t.Fatal(err)
	}
	before.Each(func(o kadm.OffsetResponse) {
		if a, _ := after.Lookup(o.Topic, o.Partition); a.At != o.At {
			t.Errorf("%s/%d: %d after restart, %d before", o.Topic, o.Partition, a.At, o.At)
		}
	})
	s, err := adm2.FetchOffsets(ctx, "gsimple")
	if err != nil {
		t.Fatal(err)
	}
	if o, _ := s.Lookup("durable", 0); o.At != 3 || o.Metadata != "simple" {
		t.Errorf("gsimple after restart: %+v", o)
	}
	lg, err := adm2.ListGroups(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if g, ok := lg["gd"]; !ok || g.State != "Empty" {
		t.Errorf("gd after restart: %+v (groups %v)", g, lg.Groups())
	}
	// The group resumes where it committed.
	produceN(t, b2, "durable", 40, 5)
	seen, _ := consumeGroup(t, b2, "durable", "gd", 1, 5)
	if len(seen) != 5 {
		t.Errorf("after restart the group consumed %d records, want the 5 new ones", len(seen))
	}
}

func TestGroupMetrics(t *testing.T) {
	b := brokertest.Start(t, groupSettings)
	rc := dialRaw(t, b.Addr())
	rc.createTopic("lagging", 1, nil)
	produceN(t, b, "lagging", 0, 10)
	adm := newAdmin(t, b)
	os := kadm.Offsets{}
	os.Add(kadm.Offset{Topic: "lagging", Partition: 0, At: 4, LeaderEpoch: -1})
	if _, err := adm.CommitOffsets(testCtx(t), "behind", os); err != nil {
		t.Fatal(err)
	}
	_, cls := consumeGroup(t, b, "lagging", "live", 1, 10)
	defer cls[0].Close()

	resp, err := http.Get("http://" + b.HTTPAddr() + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		`runnel_broker_groups{state="Stable"} 1`,
		`runnel_broker_groups{state="Empty"} 1`,
		`runnel_broker_group_lag{group="behind",partition="0",topic="lagging"} 6`,
		`runnel_broker_group_lag{group="live",partition="0",topic="lagging"} 0`,
		`runnel_broker_group_offset_commits_total`,
		`runnel_broker_group_rebalances_total 1`,
	} {
		if !strings.Contains(string(body), want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
}

// Only FindCoordinator (and JoinGroup, OffsetCommit) create
// __consumer_offsets, as in Kafka: reading about groups on a fresh broker
// leaves its topic list alone.
func TestGroupOffsetsTopicCreatedOnDemand(t *testing.T) {
	b := brokertest.Start(t, groupSettings)
	rc := dialRaw(t, b.Addr())
	lg := kmsg.NewPtrListGroupsRequest()
	lg.Version = 5
	if r := rc.roundTrip(lg).(*kmsg.ListGroupsResponse); r.ErrorCode != 0 || len(r.Groups) != 0 {
		t.Fatalf("ListGroups: %s %v", errName(r.ErrorCode), r.Groups)
	}
	dg := kmsg.NewPtrDescribeGroupsRequest()
	dg.Version, dg.Groups = 5, []string{"nobody"}
	if d := rc.roundTrip(dg).(*kmsg.DescribeGroupsResponse).Groups[0]; d.ErrorCode != 0 || d.State != "Dead" {
		t.Fatalf("DescribeGroups: %s %s", errName(d.ErrorCode), d.State)
	}
	if md := metadataFor(t, rc); len(md.Topics) != 0 {
		t.Fatalf("topics after reads: %d", len(md.Topics))
	}
	fc := kmsg.NewPtrFindCoordinatorRequest()
	fc.Version, fc.CoordinatorKeys = 6, []string{"g"}
	c := rc.roundTrip(fc).(*kmsg.FindCoordinatorResponse).Coordinators[0]
	if c.ErrorCode != 0 || c.Port == 0 || c.Host == "" {
		t.Fatalf("FindCoordinator: %s %+v", errName(c.ErrorCode), c)
	}
	md := metadataFor(t, rc, "__consumer_offsets")
	if len(md.Topics) != 1 || md.Topics[0].ErrorCode != 0 || !md.Topics[0].IsInternal || len(md.Topics[0].Partitions) != 50 {
		t.Fatalf("__consumer_offsets: %+v", md.Topics)
	}
}

// TestGroupConcurrentJoinsSettle: four consumers of a new group start at
// the same moment, round after round. Each joins twice (KIP-394: its
// first JoinGroup gets a member id), so a member's second join often
// comes last in a join phase already under way; that join must end the
// phase, as Kafka's handleJoinGroup checks after every join. It used to
// be added without the check, and the group waited out the rebalance
// timeout (60 s, franz-go's default).
func TestGroupConcurrentJoinsSettle(t *testing.T) {
	b := brokertest.Start(t, groupSettings)
	const topic, members, rounds = "settle", 4, 50
	const rebalanceTimeout = 60 * time.Second
	dialRaw(t, b.Addr()).createTopic(topic, members, nil)
	adm := newAdmin(t, b)
	for round := range rounds {
		group := fmt.Sprintf("settle-%d", round)
		// Well under the rebalance timeout: a join phase that waited
		// for it fails the round.
		ctx, cancel := context.WithTimeout(context.Background(), rebalanceTimeout/4)
		start := make(chan struct{})
		var wg sync.WaitGroup
		cls := make([]*kgo.Client, members)
		for i := range cls {
			wg.Go(func() {
				<-start
				cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addr()), kgo.ConsumerGroup(group), kgo.ConsumeTopics(topic),
					kgo.Balancers(kgo.RangeBalancer()), kgo.RebalanceTimeout(rebalanceTimeout),
					// A Stable member hears of the next rebalance at its
					// next heartbeat: keep that short.
					kgo.HeartbeatInterval(50*time.Millisecond))
				if err != nil {
					t.Error(err)
					return
				}
				cls[i] = cl
				for ctx.Err() == nil { // a consumer polls while it is in the group
					cl.PollFetches(ctx)
				}
			})
		}
		began := time.Now()
		close(start)
		var last string
		settled := false
		for !settled && ctx.Err() == nil {
			settled, last = groupSettled(ctx, adm, group, topic, members)
		}
		took := time.Since(began)
		cancel()
		wg.Wait()
		for _, cl := range cls {
			if cl != nil {
				cl.Close()
			}
		}
		if !settled {
			t.Fatalf("round %d: %d members starting together did not settle in %v (last: %s)", round, members, took, last)
		}
		t.Logf("round %d: settled in %v", round, took)
	}
}

// groupSettled reports whether group is Stable with members members, each
// assigned one partition of topic, and otherwise what it saw. It waits
// 20 ms before answering no, so callers can poll it.
func groupSettled(ctx context.Context, adm *kadm.Client, group, topic string, members int) (bool, string) {
	gs, err := adm.DescribeGroups(ctx, group)
	if err == nil {
		err = gs.Error()
	}
	if err != nil {
		return false, err.Error()
	}
	g := gs[group]
	ok := g.State == "Stable" && len(g.Members) == members
	for _, m := range g.Members {
		a, _ := m.Assigned.AsConsumer()
		ok = ok && a != nil && len(a.Topics) == 1 && a.Topics[0].Topic == topic && len(a.Topics[0].Partitions) == 1
	}
	if ok {
		return true, ""
	}
	select {
	case <-ctx.Done():
	case <-time.After(20 * time.Millisecond):
	}
	return false, fmt.Sprintf("state %s, %d members", g.State, len(g.Members))
}
