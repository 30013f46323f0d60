package broker_test

// A group outlives a broker restart as in Kafka: it loads Stable with its
// generation and members, a consumer that outlived the restart goes on
// heartbeating with its member id and generation, and a member that is
// gone expires after its session timeout.

import (
	"context"
	"maps"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/runnel-io/runnel/broker"
	"github.com/runnel-io/runnel/broker/brokertest"
)

// restartSamePort stops b and starts a broker on the same data directory
// and the same address, so clients reconnect to it as to a restarted
// Kafka broker.
func restartSamePort(t *testing.T, b *brokertest.Broker) *brokertest.Broker {
	t.Helper()
	addr := b.Addr()
	b.Stop(t)
	s := maps.Clone(b.Settings)
	s["listeners"] = "PLAINTEXT://" + addr
	return brokertest.StartWith(t, broker.Config{Settings: s})
}

func TestGroupMemberOutlivesRestart(t *testing.T) {
	b := brokertest.Start(t, groupSettings)
	rc := dialRaw(t, b.Addr())
	rc.createTopic("restart", 2, nil)
	produceN(t, b, "restart", 0, 20)

	// A franz-go consumer with a session long enough to outlast the
	// restart. Its rebalance callbacks and its heartbeat answers are
	// counted.
	var (
		mu          sync.Mutex
		assigned    int
		revoked     int
		seen        = map[string]bool{}
		heartbeats  atomic.Int64 // heartbeat round trips since the restart
		sinceRestrt atomic.Bool
	)
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addr()), kgo.RequestRetries(100),
		kgo.ConsumerGroup("survivor"), kgo.ConsumeTopics("restart"),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.DisableAutoCommit(),
		kgo.Balancers(kgo.RangeBalancer()), kgo.SessionTimeout(30*time.Second),
		kgo.HeartbeatInterval(100*time.Millisecond), kgo.FetchMaxWait(200*time.Millisecond),
		kgo.OnPartitionsAssigned(func(context.Context, *kgo.Client, map[string][]int32) {
			mu.Lock()
			assigned++
			mu.Unlock()
		}),
		kgo.OnPartitionsRevoked(func(context.Context, *kgo.Client, map[string][]int32) {
			mu.Lock()
			revoked++
			mu.Unlock()
		}),
		kgo.OnPartitionsLost(func(context.Context, *kgo.Client, map[string][]int32) {
			mu.Lock()
			revoked++
			mu.Unlock()
		}),
		kgo.WithHooks(heartbeatHook{func(err error) {
			if err == nil && sinceRestrt.Load() {
				heartbeats.Add(1)
			}
		}}),
	)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	poll := func(want int) {
		t.Helper()
		ctx := testCtx(t)
		for {
			mu.Lock()
			n := len(seen)
			mu.Unlock()
			if n >= want {
				return
			}
			fs := cl.PollFetches(ctx)
			if ctx.Err() != nil {
				t.Fatalf("consumed %d of %d records", n, want)
			}
			mu.Lock()
			for _, r := range fs.Records() {
				seen[string(r.Value)] = true
			}
			mu.Unlock()
			if err := cl.CommitUncommittedOffsets(ctx); err != nil {
				t.Fatalf("commit: %v", err)
			}
		}
	}
	poll(20)
	member, gen := cl.GroupMetadata()
	adm := newAdmin(t, b)
	before := describeGroup(t, adm, "survivor")
	if before.State != "Stable" || len(before.Members) != 1 || before.Members[0].MemberID != member {
		t.Fatalf("before the restart: %+v, want Stable with member %s", before, member)
	}

	b2 := restartSamePort(t, b)
	sinceRestrt.Store(true)

	// The restarted broker knows the group as it was: Stable, the same
	// generation's member with its client id and assignment.
	adm2 := newAdmin(t, b2)
	after := describeGroup(t, adm2, "survivor")
	if after.State != "Stable" || after.Protocol != "range" || len(after.Members) != 1 {
		t.Fatalf("after the restart: %+v, want Stable with protocol range and one member", after)
	}
	m := after.Members[0]
	a, _ := m.Assigned.AsConsumer()
	if m.MemberID != member || m.ClientID != before.Members[0].ClientID || len(a.Topics) != 1 || len(a.Topics[0].Partitions) != 2 {
		t.Fatalf("member after the restart: %+v (assigned %+v), want %s with both partitions", m, a, member)
	}
	// A Heartbeat with the old member id and generation is answered NONE.
	hb := kmsg.NewPtrHeartbeatRequest()
	hb.Group, hb.MemberID, hb.Generation = "survivor", member, gen
	rc2 := dialRaw(t, b2.Addr())
	if resp := rc2.roundTrip(hb).(*kmsg.HeartbeatResponse); resp.ErrorCode != 0 {
		t.Fatalf("heartbeat of member %s generation %d after the restart: %s", member, gen, errName(resp.ErrorCode))
	}

	// The consumer goes on: its heartbeats are answered, it reads and
	// commits new records, and it never rebalances.
	waitFor(t, ioTimeout, "heartbeats answered by the restarted broker", func() bool { return heartbeats.Load() >= 5 })
	produceN(t, b2, "restart", 20, 10)
	poll(30)
	if m2, g2 := cl.GroupMetadata(); m2 != member || g2 != gen {
		t.Errorf("member %s generation %d after the restart, was %s generation %d", m2, g2, member, gen)
	}
	mu.Lock()
	defer mu.Unlock()
	if assigned != 1 || revoked != 0 {
		t.Errorf("%d assignments and %d revocations, want 1 and 0: the restart made the consumer rebalance", assigned, revoked)
	}
	offs, err := adm2.FetchOffsets(testCtx(t), "survivor")
	if err != nil {
		t.Fatal(err)
	}
	var total int64
	offs.Each(func(o kadm.OffsetResponse) { total += o.At })
	if total != 30 {
		t.Errorf("committed offsets sum to %d after the restart, want 30", total)
	}
}

// A member that does not come back after the restart expires after its
// session timeout, counted from the load, and the group rebalances
// without it.
func TestGroupMemberGoneAfterRestartExpires(t *testing.T) {
	b := brokertest.Start(t, groupSettings)
	rc := dialRaw(t, b.Addr())
	rc.createTopic("t", 1, nil)
	j := joinReq("gone", "", nil)
	j.SessionTimeoutMillis = 6000 // group.min.session.timeout.ms
	first := rc.roundTrip(j).(*kmsg.JoinGroupResponse)
	j.MemberID = first.MemberID
	joined := rc.roundTrip(j).(*kmsg.JoinGroupResponse)
	if joined.ErrorCode != 0 {
		t.Fatalf("join: %s", errName(joined.ErrorCode))
	}
	syncOK(t, rc, "gone", joined.MemberID, joined.Generation, map[string]string{joined.MemberID: "a"})

	// The restarted broker starts the member's session clock while it
	// loads __consumer_offsets, before restartSamePort returns: the time
	// taken before the restart is no later than that.
	loaded := time.Now()
	b2 := restartSamePort(t, b)
	adm := newAdmin(t, b2)
	if d := describeGroup(t, adm, "gone"); d.State != "Stable" || len(d.Members) != 1 || d.Members[0].MemberID != joined.MemberID {
		t.Fatalf("after the restart: %+v, want Stable with %s", d, joined.MemberID)
	}
	waitFor(t, 30*time.Second, "the member to expire", func() bool { return describeGroup(t, adm, "gone").State == "Empty" })
	if d := time.Since(loaded); d < 6*time.Second {
		t.Errorf("the member expired %v after the restart, before its 6s session timeout", d)
	}
	rc2 := dialRaw(t, b2.Addr())
	hb := kmsg.NewPtrHeartbeatRequest()
	hb.Group, hb.MemberID, hb.Generation = "gone", joined.MemberID, joined.Generation
	wantCode(t, "heartbeat of the expired member", rc2.roundTrip(hb).(*kmsg.HeartbeatResponse).ErrorCode, kerr.UnknownMemberID)
}

func describeGroup(t *testing.T, adm *kadm.Client, group string) kadm.DescribedGroup {
	t.Helper()
	dgs, err := adm.DescribeGroups(testCtx(t), group)
	if err != nil {
		t.Fatalf("describe %s: %v", group, err)
	}
	d := dgs[group]
	if d.Err != nil {
		t.Fatalf("describe %s: %v", group, d.Err)
	}
	slices.SortFunc(d.Members, func(a, b kadm.DescribedGroupMember) int {
		if a.MemberID < b.MemberID {
			return -1
		}
		return 1
	})
	return d
}

// heartbeatHook reports every Heartbeat round trip a client makes: nil
// when the request was written and an answer read, or the error writing or
// reading failed with. It does not see the answer's error code: a member
// told UNKNOWN_MEMBER_ID or ILLEGAL_GENERATION rejoins, which the tests
// catch by its rebalance callbacks and member id instead.
type heartbeatHook struct{ f func(error) }

func (h heartbeatHook) OnBrokerE2E(_ kgo.BrokerMetadata, key int16, e2e kgo.BrokerE2E) {
	if key == int16(kmsg.Heartbeat) {
		h.f(e2e.Err())
	}
}
