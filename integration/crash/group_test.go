package crash

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/runnel-io/runnel/internal/groupmember"
)

const (
	groupTopic      = "crash-groups"
	groupPartitions = 4
	liveGroup       = "live"   // a consumer group with a member
	simpleGroup     = "simple" // offsets committed by kadm, no members
	// The live member's session outlasts the restart, so the restarted
	// broker still describes it; a new member waits for it to expire.
	liveSession = 10 * time.Second
	// commitsBeforeKill: acknowledged commits of the group without
	// members, and records committed by the live member, before the kill.
	commitsBeforeKill = 50
)

// TestSIGKILLKeepsGroupsAndOffsets commits offsets in two groups while a
// producer writes — a consumer group whose member (a child process) polls
// and commits after every poll, and a group without members that kadm
// commits to in a loop — then SIGKILLs the broker and the member and
// restarts the broker on the same data directory. The restarted broker
// must list both groups and describe the consumer group as it was
// (Stable, with its member, as Kafka loads it), return from OffsetFetch
// exactly the offsets acknowledged before the kill (or the one commit in
// flight at the kill), and a new member of the consumer group must start
// at the committed offsets.
func TestSIGKILLKeepsGroupsAndOffsets(t *testing.T) {
	b := startBroker(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	adm := newAdmin(t, b.addr)
	defer adm.Close()
	if resp, err := adm.CreateTopic(ctx, groupPartitions, 1, nil, groupTopic); err != nil || resp.Err != nil {
		t.Fatalf("create topic: %v %v", err, resp.Err)
	}

	// A producer writes until the kill.
	stopProducing := make(chan struct{})
	produced := make(chan error, 1)
	go func() { produced <- produceUntil(ctx, b.addr, stopProducing) }()

	// The consumer group: one member in a child process.
	board := groupmember.NewBoard()
	member, err := groupmember.StartProcess(groupmember.Config{
		Name: "live-1", Seeds: []string{b.addr}, Group: liveGroup, Topic: groupTopic,
		Balancer: "range", SessionTimeout: liveSession, HeartbeatInterval: time.Second,
	}, board)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if member.Running() {
			member.Kill()
		}
	})

	// The group without members: synchronous commits of offset n to every
	// partition, n = 1, 2, ...; acked is the last acknowledged n, sent the
	// last one sent.
	var acked, sent atomic.Int64
	cctx, stopCommitting := context.WithCancel(ctx)
	defer stopCommitting()
	committed := make(chan error, 1)
	go func() {
		for n := int64(1); ; n++ {
			if cctx.Err() != nil {
				committed <- nil
				return
			}
			offsets := kadm.Offsets{}
			for p := range int32(groupPartitions) {
				offsets.Add(kadm.Offset{Topic: groupTopic, Partition: p, At: n, LeaderEpoch: -1, Metadata: "n=" + strconv.FormatInt(n, 10)})
			}
			sent.Store(n)
			resp, err := adm.CommitOffsets(cctx, simpleGroup, offsets)
			if err == nil {
				err = resp.Error()
			}
			if err != nil {
				committed <- fmt.Errorf("commit %d to group %s: %w", n, simpleGroup, err)
				return
			}
			acked.Store(n)
		}
	}()

	if err := board.Wait(ctx, "commits in both groups", func() bool {
		return acked.Load() >= commitsBeforeKill && len(member.Committed()) == groupPartitions && committedRecords(member) >= commitsBeforeKill
	}); err != nil {
		t.Fatalf("%v; simple group: %d acknowledged; live member: %v, failures %v", err, acked.Load(), member.Committed(), member.Failures())
	}
	before := describe(t, ctx, adm, liveGroup)

	b.kill()
	member.Kill()
	close(stopProducing)
	stopCommitting()
	<-committed // an error here is the kill's
	if err := <-produced; err != nil {
		t.Fatal(err)
	}
	liveAcked, livePolled := member.Committed(), member.High()
	simpleAcked, simpleSent := acked.Load(), sent.Load()
	t.Logf("killed the broker after %d commits of group %s (one more in flight: %v) and live commits %v (polled %v)",
		simpleAcked, simpleGroup, simpleSent > simpleAcked, liveAcked, livePolled)

	b.restart()
	adm2 := newAdmin(t, b.addr)
	defer adm2.Close()

	// The broker knows both groups, and the consumer group as Kafka's
	// coordinator loads it: Stable, with the generation's member (id,
	// client id, assignment) as it was before the kill; the member's
	// session starts again at the load.
	listed, err := adm2.ListGroups(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if lg, ok := listed[liveGroup]; !ok || lg.ProtocolType != "consumer" || lg.State != "Stable" {
		t.Errorf("ListGroups after the restart: %v; want %s Stable with protocol type consumer", listed, liveGroup)
	}
	if _, ok := listed[simpleGroup]; !ok {
		t.Errorf("ListGroups after the restart: %v, missing %s", listed.Groups(), simpleGroup)
	}
	after := describe(t, ctx, adm2, liveGroup)
	if after != before || !strings.HasPrefix(before, "state=Stable ") {
		t.Errorf("group %s after the restart:\n  %s\nbefore the kill:\n  %s\nwant it as it was, Stable", liveGroup, after, before)
	}
	t.Logf("group %s after the restart: %s", liveGroup, after)
	if d := describe(t, ctx, adm2, simpleGroup); d != "state=Empty protocolType= protocol= members=[]" {
		t.Errorf("group %s after the restart: %s, want Empty without members", simpleGroup, d)
	}

	// OffsetFetch returns what was acknowledged (or the commit in flight).
	simpleFetched := fetchOffsets(t, ctx, adm2, simpleGroup)
	for p, o := range simpleFetched {
		if o != simpleAcked && o != simpleSent {
			t.Errorf("group %s partition %d: committed offset %d after the restart; %d was acknowledged, %d sent last",
				simpleGroup, p, o, simpleAcked, simpleSent)
		}
		if o != simpleFetched[0] {
			t.Errorf("group %s: one commit request came back in part: offsets %v", simpleGroup, simpleFetched)
		}
	}
	liveFetched := fetchOffsets(t, ctx, adm2, liveGroup)
	for p := range int32(groupPartitions) {
		// The member commits right after each poll what it polled: an
		// unacknowledged commit in flight is up to its last polled offset.
		if o := liveFetched[p]; o != liveAcked[p] && o != livePolled[p] {
			t.Errorf("group %s partition %d: committed offset %d after the restart; %d was acknowledged, %d polled",
				liveGroup, p, o, liveAcked[p], livePolled[p])
		}
	}
	if t.Failed() {
		t.FailNow()
	}

	// A new member of the consumer group resumes at the committed offsets,
	// once the killed member's session (restarted at the load) expires.
	produceN(t, ctx, b.addr, 100)
	newcomer := groupmember.Start(groupmember.Config{
		Name: "live-2", Seeds: []string{b.addr}, Group: liveGroup, Topic: groupTopic,
		Balancer: "range", SessionTimeout: 6 * time.Second, HeartbeatInterval: time.Second,
	}, board)
	defer newcomer.Stop(context.Background())
	ends := endOffsets(t, ctx, adm2)
	if err := board.Wait(ctx, "the new member to read to the end", func() bool {
		h := newcomer.High()
		for p, e := range ends {
			if h[p] < e {
				return false
			}
		}
		return true
	}); err != nil {
		t.Fatalf("%v; it read to %v; owns %v; failures %v", err, newcomer.High(), newcomer.Owned(), newcomer.Failures())
	}
	first := map[int32]int64{}
	for _, r := range newcomer.Records() {
		if _, ok := first[r.Partition]; !ok {
			first[r.Partition] = r.Offset
		}
	}
	for p := range int32(groupPartitions) {
		if first[p] != liveFetched[p] {
			t.Errorf("the new member started partition %d at offset %d, the committed offset is %d", p, first[p], liveFetched[p])
		}
	}
	for _, f := range newcomer.Failures() {
		t.Errorf("new member: %s", f)
	}
}

// committedRecords is how many records m has committed, over all partitions.
func committedRecords(m *groupmember.Member) int {
	n := 0
	for _, o := range m.Committed() {
		n += int(o)
	}
	return n
}

// describe summarizes DescribeGroups for group: state, protocol and each
// member's id, client id and assigned partitions.
func describe(t *testing.T, ctx context.Context, adm *kadm.Client, group string) string {
	t.Helper()
	dgs, err := adm.DescribeGroups(ctx, group)
	if err != nil {
		t.Fatalf("describe %s: %v", group, err)
	}
	dg := dgs[group]
	if dg.Err != nil {
		t.Fatalf("describe %s: %v", group, dg.Err)
	}
	var members []string
	for _, m := range dg.Members {
		var ps []int32
		if a, ok := m.Assigned.AsConsumer(); ok {
			for _, tp := range a.Topics {
				ps = append(ps, tp.Partitions...)
			}
		}
		slices.Sort(ps)
		members = append(members, fmt.Sprintf("%s(%s)%v", m.MemberID, m.ClientID, ps))
	}
	return fmt.Sprintf("state=%s protocolType=%s protocol=%s members=%v", dg.State, dg.ProtocolType, dg.Protocol, members)
}

// fetchOffsets returns group's committed offsets of every partition of
// the topic; a partition without one fails the test.
func fetchOffsets(t *testing.T, ctx context.Context, adm *kadm.Client, group string) map[int32]int64 {
	t.Helper()
	resp, err := adm.FetchOffsets(ctx, group)
	if err != nil {
		t.Fatalf("fetch offsets of %s: %v", group, err)
	}
	out := map[int32]int64{}
	for p := range int32(groupPartitions) {
		o, ok := resp.Lookup(groupTopic, p)
		if !ok || o.Err != nil {
			t.Fatalf("group %s has no committed offset for partition %d after the restart (%v)", group, p, o.Err)
		}
		out[p] = o.At
	}
	return out
}

func endOffsets(t *testing.T, ctx context.Context, adm *kadm.Client) map[int32]int64 {
	t.Helper()
	listed, err := adm.ListEndOffsets(ctx, groupTopic)
	if err != nil {
		t.Fatal(err)
	}
	out := map[int32]int64{}
	listed.Each(func(o kadm.ListedOffset) { out[o.Partition] = o.Offset })
	return out
}

// produceUntil writes records to every partition of the group topic until
// stop is closed; errors after stop are the kill's.
func produceUntil(ctx context.Context, addr string, stop <-chan struct{}) error {
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.DefaultProduceTopic(groupTopic),
		kgo.RecordPartitioner(kgo.RoundRobinPartitioner()))
	if err != nil {
		return err
	}
	// An idempotent producer keeps retrying a batch in flight to a
	// dead broker (failing it could break its sequence numbers); closing
	// the client fails it.
	closed := make(chan struct{})
	go func() {
		select {
		case <-stop:
		case <-ctx.Done():
		}
		cl.Close()
		close(closed)
	}()
	defer func() { <-closed }()
	for i := 0; ; i++ {
		rs := make([]*kgo.Record, groupPartitions*4)
		for j := range rs {
			rs[j] = &kgo.Record{Value: []byte(fmt.Sprintf("before-%d-%d", i, j))}
		}
		err := cl.ProduceSync(ctx, rs...).FirstErr()
		select {
		case <-stop:
			return nil
		default:
		}
		if err != nil {
			return fmt.Errorf("produce before the kill: %w", err)
		}
	}
}

func produceN(t *testing.T, ctx context.Context, addr string, n int) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.DefaultProduceTopic(groupTopic),
		kgo.RecordPartitioner(kgo.RoundRobinPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	rs := make([]*kgo.Record, n)
	for i := range rs {
		rs[i] = &kgo.Record{Value: []byte(fmt.Sprintf("after-%d", i))}
	}
	if err := cl.ProduceSync(ctx, rs...).FirstErr(); err != nil {
		t.Fatalf("produce after the restart: %v", err)
	}
}
