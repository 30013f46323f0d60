package broker_test

// Bad input to the group coordinator at the wire level: raw kmsg requests
// over TCP that no well-behaved client sends. Each gets Kafka's error code,
// the group involved can still complete a rebalance afterwards, and another
// group on the same broker, whose consumer stays open through it all,
// consumes new records once it is over.

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/runnel-io/runnel/broker/brokertest"
)

func joinReq(group, member string, instance *string, protocols ...kmsg.JoinGroupRequestProtocol) *kmsg.JoinGroupRequest {
	req := kmsg.NewPtrJoinGroupRequest()
	req.Version = 9
	req.Group, req.MemberID, req.InstanceID = group, member, instance
	req.SessionTimeoutMillis, req.RebalanceTimeoutMillis = 10000, 10000
	req.ProtocolType = "consumer"
	if len(protocols) == 0 {
		protocols = []kmsg.JoinGroupRequestProtocol{{Name: "range", Metadata: []byte("m")}}
	}
	req.Protocols = protocols
	return req
}

// joinNew joins group as a new dynamic member (two steps, KIP-394) and
// returns the successful answer.
func joinNew(t *testing.T, rc *rawConn, group string, protocols ...kmsg.JoinGroupRequestProtocol) *kmsg.JoinGroupResponse {
	t.Helper()
	first := rc.roundTrip(joinReq(group, "", nil, protocols...)).(*kmsg.JoinGroupResponse)
	if first.ErrorCode != kerr.MemberIDRequired.Code {
		t.Fatalf("first join: %s, want MEMBER_ID_REQUIRED", errName(first.ErrorCode))
	}
	resp := rc.roundTrip(joinReq(group, first.MemberID, nil, protocols...)).(*kmsg.JoinGroupResponse)
	if resp.ErrorCode != 0 {
		t.Fatalf("join: %s", errName(resp.ErrorCode))
	}
	return resp
}

func syncReq(group, member string, gen int32, assign map[string]string) *kmsg.SyncGroupRequest {
	req := kmsg.NewPtrSyncGroupRequest()
	req.Version = 5
	req.Group, req.MemberID, req.Generation = group, member, gen
	for m, a := range assign {
		ga := kmsg.NewSyncGroupRequestGroupAssignment()
		ga.MemberID, ga.MemberAssignment = m, []byte(a)
		req.GroupAssignment = append(req.GroupAssignment, ga)
	}
	return req
}

func syncOK(t *testing.T, rc *rawConn, group, member string, gen int32, assign map[string]string) []byte {
	t.Helper()
	resp := rc.roundTrip(syncReq(group, member, gen, assign)).(*kmsg.SyncGroupResponse)
	if resp.ErrorCode != 0 {
		t.Fatalf("sync: %s", errName(resp.ErrorCode))
	}
	return resp.MemberAssignment
}

func commitReq(group, member string, gen int32, topic string, offset int64, meta string) *kmsg.OffsetCommitRequest {
	req := kmsg.NewPtrOffsetCommitRequest()
	req.Version = 9
	req.Group, req.MemberID, req.Generation = group, member, gen
	rt := kmsg.NewOffsetCommitRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewOffsetCommitRequestTopicPartition()
	rp.Partition, rp.Offset, rp.LeaderEpoch, rp.Metadata = 0, offset, -1, &meta
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	return req
}

func commitCode(t *testing.T, rc *rawConn, req *kmsg.OffsetCommitRequest) int16 {
	t.Helper()
	resp := rc.roundTrip(req).(*kmsg.OffsetCommitResponse)
	return resp.Topics[0].Partitions[0].ErrorCode
}

func wantCode(t *testing.T, what string, got int16, want *kerr.Error) {
	t.Helper()
	var w int16
	if want != nil {
		w = want.Code
	}
	if got != w {
		t.Errorf("%s: %s, want %s", what, errName(got), errName(w))
	}
}

func TestBadInputGroups(t *testing.T) {
	b := brokertest.Start(t, groupSettings)
	setup := dialRaw(t, b.Addr())
	setup.createTopic("t", 1, nil)
	setup.createTopic("healthy", 2, nil)
	produceN(t, b, "healthy", 0, 20)

	// A healthy group consumes before the bad input, keeps its consumer
	// open while it arrives, and consumes new records after.
	healthy := newClient(t, b, kgo.ConsumerGroup("healthy"), kgo.ConsumeTopics("healthy"),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchMaxWait(200*time.Millisecond))
	healthyReads := func(n int) {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		for got := 0; got < n; {
			fs := healthy.PollFetches(ctx)
			if ctx.Err() != nil {
				t.Fatalf("the healthy group read %d of %d records", got, n)
			}
			got += len(fs.Records())
		}
	}
	healthyReads(20)

	cases := []struct {
		name string
		run  func(t *testing.T, rc *rawConn)
	}{
		{"session timeout below group.min.session.timeout.ms", func(t *testing.T, rc *rawConn) {
			req := joinReq("g-session", "", nil)
			req.SessionTimeoutMillis = 100
			wantCode(t, "join", rc.roundTrip(req).(*kmsg.JoinGroupResponse).ErrorCode, kerr.InvalidSessionTimeout)
		}},
		{"session timeout above group.max.session.timeout.ms", func(t *testing.T, rc *rawConn) {
			req := joinReq("g-session", "", nil)
			req.SessionTimeoutMillis = 1 << 30
			wantCode(t, "join", rc.roundTrip(req).(*kmsg.JoinGroupResponse).ErrorCode, kerr.InvalidSessionTimeout)
		}},
		{"empty group id", func(t *testing.T, rc *rawConn) {
			wantCode(t, "join", rc.roundTrip(joinReq("", "", nil)).(*kmsg.JoinGroupResponse).ErrorCode, kerr.InvalidGroupID)
		}},
		{"no protocols", func(t *testing.T, rc *rawConn) {
			req := joinReq("g-noproto", "", nil)
			req.Protocols = nil
			wantCode(t, "join", rc.roundTrip(req).(*kmsg.JoinGroupResponse).ErrorCode, kerr.InconsistentGroupProtocol)
		}},
		{"hundreds of protocols", func(t *testing.T, rc *rawConn) {
			var ps []kmsg.JoinGroupRequestProtocol
			for i := range 500 {
				ps = append(ps, kmsg.JoinGroupRequestProtocol{Name: fmt.Sprintf("assignor-%d", i), Metadata: []byte("m")})
			}
			resp := joinNew(t, rc, "g-many", ps...)
			if *resp.Protocol != "assignor-0" || len(resp.Members) != 1 {
				t.Fatalf("chose %q with %d members", *resp.Protocol, len(resp.Members))
			}
			syncOK(t, rc, "g-many", resp.MemberID, resp.Generation, map[string]string{resp.MemberID: "a"})
		}},
		{"huge protocol metadata", func(t *testing.T, rc *rawConn) {
			// 2 MiB of metadata is accepted at join (Kafka bounds it only
			// by the request size), but the group record would exceed the
			// offsets topic's max.message.bytes: Kafka answers the sync
			// with UNKNOWN_SERVER_ERROR and rebalances.
			rc.metadataOK() // past the pre-authentication frame limit
			huge := []kmsg.JoinGroupRequestProtocol{{Name: "range", Metadata: bytes.Repeat([]byte("x"), 2<<20)}}
			resp := joinNew(t, rc, "g-huge", huge...)
			if len(resp.Members) != 1 || len(resp.Members[0].ProtocolMetadata) != 2<<20 {
				t.Fatalf("leader got %d members", len(resp.Members))
			}
			sr := rc.roundTrip(syncReq("g-huge", resp.MemberID, resp.Generation, map[string]string{resp.MemberID: "a"})).(*kmsg.SyncGroupResponse)
			wantCode(t, "sync", sr.ErrorCode, kerr.UnknownServerError)
			// Not stuck: a rejoin with small metadata completes.
			again := rc.roundTrip(joinReq("g-huge", resp.MemberID, nil)).(*kmsg.JoinGroupResponse)
			wantCode(t, "rejoin", again.ErrorCode, nil)
			syncOK(t, rc, "g-huge", again.MemberID, again.Generation, map[string]string{again.MemberID: "a"})
		}},
		{"sync from a non-leader, wrong generation, assignments for non-members", func(t *testing.T, rc *rawConn) {
			leader := joinNew(t, rc, "g-sync")
			syncOK(t, rc, "g-sync", leader.MemberID, leader.Generation, map[string]string{leader.MemberID: "solo"})
			// A second member: its join waits for the leader to rejoin.
			fc := dialRaw(t, rc.c.RemoteAddr().String())
			first := fc.roundTrip(joinReq("g-sync", "", nil)).(*kmsg.JoinGroupResponse)
			fcorr := fc.send(joinReq("g-sync", first.MemberID, nil))
			hb := kmsg.NewPtrHeartbeatRequest()
			hb.Version, hb.Group, hb.MemberID, hb.Generation = 4, "g-sync", leader.MemberID, leader.Generation
			// The follower's join arrives on another connection: the
			// leader learns of the rebalance from its heartbeat.
			for deadline := time.Now().Add(ioTimeout); ; {
				code := rc.roundTrip(hb).(*kmsg.HeartbeatResponse).ErrorCode
				if code == kerr.RebalanceInProgress.Code {
					break
				}
				if code != 0 || time.Now().After(deadline) {
					t.Fatalf("leader heartbeat: %s, want REBALANCE_IN_PROGRESS", errName(code))
				}
			}
			lj := rc.roundTrip(joinReq("g-sync", leader.MemberID, nil)).(*kmsg.JoinGroupResponse)
			fj := kmsg.NewPtrJoinGroupResponse()
			fj.Version = 9
			fc.read(fcorr, fj)
			if lj.ErrorCode != 0 || fj.ErrorCode != 0 || lj.Generation != fj.Generation || lj.LeaderID != leader.MemberID {
				t.Fatalf("rejoin: leader %s gen %d, follower %s gen %d", errName(lj.ErrorCode), lj.Generation, errName(fj.ErrorCode), fj.Generation)
			}
			// Wrong generation.
			wrong := fc.roundTrip(syncReq("g-sync", fj.MemberID, fj.Generation-1, nil)).(*kmsg.SyncGroupResponse)
			wantCode(t, "sync with a stale generation", wrong.ErrorCode, kerr.IllegalGeneration)
			unknown := fc.roundTrip(syncReq("g-sync", "nobody", fj.Generation, nil)).(*kmsg.SyncGroupResponse)
			wantCode(t, "sync from an unknown member", unknown.ErrorCode, kerr.UnknownMemberID)
			// The follower's own assignment is ignored: it waits for the
			// leader's, which also names a member that does not exist.
			fcorr = fc.send(syncReq("g-sync", fj.MemberID, fj.Generation, map[string]string{fj.MemberID: "mine", leader.MemberID: "yours"}))
			got := syncOK(t, rc, "g-sync", leader.MemberID, lj.Generation, map[string]string{leader.MemberID: "L", fj.MemberID: "F", "ghost": "G"})
			fs := kmsg.NewPtrSyncGroupResponse()
			fs.Version = 5
			fc.read(fcorr, fs)
			if string(got) != "L" || fs.ErrorCode != 0 || string(fs.MemberAssignment) != "F" {
				t.Fatalf("assignments: leader %q, follower %s %q", got, errName(fs.ErrorCode), fs.MemberAssignment)
			}
			dg := kmsg.NewPtrDescribeGroupsRequest()
			dg.Version, dg.Groups = 5, []string{"g-sync"}
			d := rc.roundTrip(dg).(*kmsg.DescribeGroupsResponse).Groups[0]
			if d.State != "Stable" || len(d.Members) != 2 {
				t.Fatalf("described %s with %d members", d.State, len(d.Members))
			}
			for _, m := range d.Members {
				if m.MemberID == "ghost" {
					t.Fatal("an assignment for a non-member made it a member")
				}
			}
		}},
		{"commits: unknown member, stale generation, negative offset, huge metadata", func(t *testing.T, rc *rawConn) {
			j := joinNew(t, rc, "g-commit")
			syncOK(t, rc, "g-commit", j.MemberID, j.Generation, map[string]string{j.MemberID: "a"})
			wantCode(t, "unknown member", commitCode(t, rc, commitReq("g-commit", "nobody", j.Generation, "t", 1, "")), kerr.UnknownMemberID)
			wantCode(t, "stale generation", commitCode(t, rc, commitReq("g-commit", j.MemberID, j.Generation-1, "t", 1, "")), kerr.IllegalGeneration)
			wantCode(t, "generation -1 on a live group", commitCode(t, rc, commitReq("g-commit", "", -1, "t", 1, "")), kerr.UnknownMemberID)
			wantCode(t, "commit to a group never seen, with a generation", commitCode(t, rc, commitReq("g-nosuch", "m", 3, "t", 1, "")), kerr.IllegalGeneration)
			wantCode(t, "metadata over offset.metadata.max.bytes", commitCode(t, rc, commitReq("g-commit", j.MemberID, j.Generation, "t", 1, strings.Repeat("x", 4097))), kerr.OffsetMetadataTooLarge)
			wantCode(t, "metadata at offset.metadata.max.bytes", commitCode(t, rc, commitReq("g-commit", j.MemberID, j.Generation, "t", 2, strings.Repeat("x", 4096))), nil)
			wantCode(t, "unknown topic", commitCode(t, rc, commitReq("g-commit", j.MemberID, j.Generation, "no-such-topic", 1, "")), kerr.UnknownTopicOrPartition)
			// Kafka stores a negative offset as given (clients read any
			// negative offset as "none committed"); so does Runnel.
			wantCode(t, "negative offset", commitCode(t, rc, commitReq("g-commit", j.MemberID, j.Generation, "t", -5, "")), nil)
			of := kmsg.NewPtrOffsetFetchRequest()
			of.Version = 9
			rg := kmsg.NewOffsetFetchRequestGroup()
			rg.Group = "g-commit"
			of.Groups = append(of.Groups, rg)
			fr := rc.roundTrip(of).(*kmsg.OffsetFetchResponse)
			if len(fr.Groups) != 1 || len(fr.Groups[0].Topics) != 1 || fr.Groups[0].Topics[0].Partitions[0].Offset != -5 {
				t.Fatalf("fetched %+v", fr.Groups)
			}
		}},
		{"heartbeat and leave for unknown groups and members", func(t *testing.T, rc *rawConn) {
			hb := kmsg.NewPtrHeartbeatRequest()
			hb.Version, hb.Group, hb.MemberID, hb.Generation = 4, "g-none", "m", 1
			wantCode(t, "heartbeat", rc.roundTrip(hb).(*kmsg.HeartbeatResponse).ErrorCode, kerr.UnknownMemberID)
			lv := kmsg.NewPtrLeaveGroupRequest()
			lv.Version, lv.Group = 5, "g-none"
			lv.Members = []kmsg.LeaveGroupRequestMember{{MemberID: "m"}}
			lr := rc.roundTrip(lv).(*kmsg.LeaveGroupResponse)
			if lr.ErrorCode != 0 || len(lr.Members) != 1 || lr.Members[0].ErrorCode != kerr.UnknownMemberID.Code {
				t.Fatalf("leave: %s %+v", errName(lr.ErrorCode), lr.Members)
			}
		}},
		{"find coordinator: empty transactional ids and unknown key types", func(t *testing.T, rc *rawConn) {
			fc := kmsg.NewPtrFindCoordinatorRequest()
			fc.Version, fc.CoordinatorType, fc.CoordinatorKeys = 6, 1, []string{""}
			wantCode(t, "empty transactional id", rc.roundTrip(fc).(*kmsg.FindCoordinatorResponse).Coordinators[0].ErrorCode, kerr.InvalidRequest)
			fc.CoordinatorType = 9
			wantCode(t, "key type 9", rc.roundTrip(fc).(*kmsg.FindCoordinatorResponse).Coordinators[0].ErrorCode, kerr.InvalidRequest)
		}},
		{"delete a live group, offsets of a subscribed topic", func(t *testing.T, rc *rawConn) {
			var md kmsg.ConsumerMemberMetadata
			md.Topics = []string{"t"}
			j := joinNew(t, rc, "g-del", kmsg.JoinGroupRequestProtocol{Name: "range", Metadata: md.AppendTo(nil)})
			syncOK(t, rc, "g-del", j.MemberID, j.Generation, map[string]string{j.MemberID: "a"})
			dg := kmsg.NewPtrDeleteGroupsRequest()
			dg.Version, dg.Groups = 2, []string{"g-del", "g-never"}
			dr := rc.roundTrip(dg).(*kmsg.DeleteGroupsResponse)
			wantCode(t, "delete live group", dr.Groups[0].ErrorCode, kerr.NonEmptyGroup)
			wantCode(t, "delete unknown group", dr.Groups[1].ErrorCode, kerr.GroupIDNotFound)
			od := kmsg.NewPtrOffsetDeleteRequest()
			od.Group = "g-del"
			od.Topics = []kmsg.OffsetDeleteRequestTopic{{Topic: "t", Partitions: []kmsg.OffsetDeleteRequestTopicPartition{{Partition: 0}}}}
			or := rc.roundTrip(od).(*kmsg.OffsetDeleteResponse)
			if or.ErrorCode != 0 || or.Topics[0].Partitions[0].ErrorCode != kerr.GroupSubscribedToTopic.Code {
				t.Fatalf("offset delete: %s %+v", errName(or.ErrorCode), or.Topics)
			}
		}},
		{"a member whose connection closes while its join waits", func(t *testing.T, rc *rawConn) {
			lead := joinNew(t, rc, "g-gone")
			syncOK(t, rc, "g-gone", lead.MemberID, lead.Generation, map[string]string{lead.MemberID: "a"})
			// A second member joins and then disappears mid-rebalance;
			// the leader's rejoin completes the rebalance without it
			// answering, and the answer to the closed connection is dropped.
			gone := dialRaw(t, rc.c.RemoteAddr().String())
			first := gone.roundTrip(joinReq("g-gone", "", nil)).(*kmsg.JoinGroupResponse)
			gone.send(joinReq("g-gone", first.MemberID, nil))
			hb := kmsg.NewPtrHeartbeatRequest()
			hb.Version, hb.Group, hb.MemberID, hb.Generation = 4, "g-gone", lead.MemberID, lead.Generation
			for deadline := time.Now().Add(ioTimeout); rc.roundTrip(hb).(*kmsg.HeartbeatResponse).ErrorCode != kerr.RebalanceInProgress.Code; {
				if time.Now().After(deadline) {
					t.Fatal("the second member's join never started a rebalance")
				}
			}
			gone.c.Close()
			lj := rc.roundTrip(joinReq("g-gone", lead.MemberID, nil)).(*kmsg.JoinGroupResponse)
			if lj.ErrorCode != 0 || len(lj.Members) != 2 {
				t.Fatalf("leader rejoin: %s with %d members", errName(lj.ErrorCode), len(lj.Members))
			}
			syncOK(t, rc, "g-gone", lead.MemberID, lj.Generation, map[string]string{lead.MemberID: "a"})
		}},
		{"produce to and delete __consumer_offsets", func(t *testing.T, rc *rawConn) {
			p := rc.produce("__consumer_offsets", 0, batchOf("x"))
			wantCode(t, "produce", p.ErrorCode, kerr.InvalidTopicException)
			dt := kmsg.NewPtrDeleteTopicsRequest()
			dt.Version, dt.TopicNames = 5, []string{"__consumer_offsets"}
			wantCode(t, "delete topic", rc.roundTrip(dt).(*kmsg.DeleteTopicsResponse).Topics[0].ErrorCode, kerr.TopicAuthorizationFailed)
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tc.run(t, dialRaw(t, b.Addr()))
		})
	}
	produceN(t, b, "healthy", 20, 10)
	healthyReads(10)
}
