package group

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestRandomOperations drives the core with random requests from a handful
// of clients (joins with and without member ids, static and dynamic, syncs
// with random generations and assignments, heartbeats, leaves, commits and
// ticks), completing or failing their writes in random order, and checks
// its invariants after every step: no panic, every waiter answered at most
// once, the leader is a member, members awaiting join exist only while
// PreparingRebalance, an empty group has no leader, and FetchOffsets shows
// only offsets whose write was reported durable (and, for a transactional
// one, whose transaction committed), and no closed transactional offset is
// left open.
func TestRandomOperations(t *testing.T) {
	for seed := range uint64(30) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(seed, 7))
			now := time.UnixMilli(1_000_000)
			c := New(Config{
				MinSessionTimeout: 6 * time.Second, MaxSessionTimeout: time.Minute,
				InitialRebalanceDelay: time.Duration(rng.IntN(2)) * 3 * time.Second, MaxSize: 4,
				OffsetMetadataMaxBytes: 16, OffsetsRetention: time.Minute, OffsetsRetentionCheckInterval: 10 * time.Second,
			})
			answered := map[Waiter]bool{}
			var next Waiter
			var ids []string // member ids handed out
			pick := func() string {
				if len(ids) == 0 || rng.IntN(8) == 0 {
					return "unknown"
				}
				return ids[rng.IntN(len(ids))]
			}
			check := func(out Output) {
				for _, r := range out.Replies {
					if answered[r.To] {
						t.Fatalf("waiter %d answered twice", r.To)
					}
					answered[r.To] = true
					if j, ok := r.Resp.(*kmsg.JoinGroupResponse); ok && j.MemberID != "" {
						ids = append(ids, j.MemberID)
					}
				}
				for _, g := range c.groups {
					if g.leader != "" && g.member(g.leader) == nil {
						t.Fatalf("leader %s is not a member", g.leader)
					}
					if len(g.members) == 0 && g.leader != "" {
						t.Fatalf("empty group with leader %s", g.leader)
					}
					if len(g.members) > 0 && g.state == Empty {
						t.Fatalf("Empty group with %d members", len(g.members))
					}
					for _, m := range g.members {
						if len(m.joinWaiters) > 0 && g.state != PreparingRebalance {
							t.Fatalf("member %s awaits join in state %s", m.id, g.state)
						}
						if len(m.syncWaiters) > 0 && g.state != CompletingRebalance {
							t.Fatalf("member %s awaits sync in state %s", m.id, g.state)
						}
					}
				}
			}
			gen := func() int32 { return int32(rng.IntN(4)) - 1 }
			var inflight []WriteID
			commits := map[WriteID]int64{} // the offset each commit wrote
			durable := map[int64]bool{-1: true}
			// Transactional commits (offsets 1000 and up): their offset,
			// the writes each producer has open, and which writes are
			// durable or of a committed transaction.
			txnOffsets := map[WriteID]int64{}
			txnOpen := map[int64][]WriteID{}
			written, txnCommitted := map[WriteID]bool{}, map[WriteID]bool{}
			for range 3000 {
				next++
				w := next
				var out Output
				switch rng.IntN(10) {
				case 8, 9:
					if len(inflight) == 0 {
						break
					}
					i := rng.IntN(len(inflight))
					id := inflight[i]
					inflight = append(inflight[:i], inflight[i+1:]...)
					var failure *kerr.Error
					if rng.IntN(4) == 0 {
						failure = kerr.NotCoordinator
					} else if o, ok := commits[id]; ok {
						durable[o] = true
					} else if o, ok := txnOffsets[id]; ok {
						written[id] = true
						durable[o] = durable[o] || txnCommitted[id]
					}
					out = c.Written(now, id, failure)
				case 0, 1:
					req := kmsg.NewPtrJoinGroupRequest()
					req.Version = int16(rng.IntN(10))
					req.Group, req.ProtocolType = "g", "consumer"
					if rng.IntN(2) == 0 {
						req.MemberID = pick()
					}
					if req.Version >= 5 && rng.IntN(3) == 0 {
						inst := fmt.Sprint("i", rng.IntN(3))
						req.InstanceID = &inst
					}
					req.SessionTimeoutMillis, req.RebalanceTimeoutMillis = int32(6000+rng.IntN(20000)), int32(rng.IntN(30000))
					names := []string{"range", "roundrobin", "sticky"}
					for range 1 + rng.IntN(3) {
						req.Protocols = append(req.Protocols, kmsg.JoinGroupRequestProtocol{Name: names[rng.IntN(3)], Metadata: []byte{byte(rng.IntN(2))}})
					}
					out = c.Join(now, w, Client{ID: "c"}, req)
				case 2:
					req := kmsg.NewPtrSyncGroupRequest()
					req.Group, req.MemberID, req.Generation = "g", pick(), gen()
					for range rng.IntN(4) {
						req.GroupAssignment = append(req.GroupAssignment, kmsg.SyncGroupRequestGroupAssignment{MemberID: pick(), MemberAssignment: []byte("a")})
					}
					out = c.Sync(now, w, req)
				case 3:
					req := kmsg.NewPtrHeartbeatRequest()
					req.Group, req.MemberID, req.Generation = "g", pick(), gen()
					c.Heartbeat(now, req)
				case 4:
					req := kmsg.NewPtrLeaveGroupRequest()
					req.Version, req.Group = 5, "g"
					req.Members = []kmsg.LeaveGroupRequestMember{{MemberID: pick()}}
					_, out = c.Leave(now, req)
				case 5:
					req := kmsg.NewPtrOffsetCommitRequest()
					req.Version, req.Group, req.MemberID, req.Generation = 8, "g", pick(), gen()
					meta := string(make([]byte, rng.IntN(20)))
					req.Topics = []kmsg.OffsetCommitRequestTopic{{Topic: "t", Partitions: []kmsg.OffsetCommitRequestTopicPartition{{Partition: 0, Offset: int64(rng.IntN(100)) - 5, Metadata: &meta}}}}
					_, out = c.CommitOffsets(now, req, nil)
					if out.Write != 0 {
						commits[out.Write] = req.Topics[0].Partitions[0].Offset
					}
				case 6:
					switch pid := int64(rng.IntN(2)); rng.IntN(10) {
					case 0:
						_, out = c.DeleteGroup(now, "g")
					case 1, 2, 3:
						commit := rng.IntN(2) == 0
						for _, id := range txnOpen[pid] {
							txnCommitted[id] = commit
							durable[txnOffsets[id]] = durable[txnOffsets[id]] || commit && written[id]
						}
						delete(txnOpen, pid)
						out = c.CompleteTxn(now, pid, commit)
					default:
						req := kmsg.NewPtrTxnOffsetCommitRequest()
						req.Version, req.Group, req.ProducerID = int16(rng.IntN(5)), "g", pid
						if req.Version >= 3 && rng.IntN(2) == 0 {
							req.MemberID, req.Generation = pick(), gen()
						}
						req.Topics = []kmsg.TxnOffsetCommitRequestTopic{{Topic: "t", Partitions: []kmsg.TxnOffsetCommitRequestTopicPartition{{Partition: 0, Offset: 1000 + int64(rng.IntN(100))}}}}
						_, out = c.TxnCommitOffsets(now, req, nil)
						if out.Write != 0 {
							txnOffsets[out.Write] = req.Topics[0].Partitions[0].Offset
							txnOpen[pid] = append(txnOpen[pid], out.Write)
						}
					}
				case 7:
					now = now.Add(time.Duration(rng.IntN(8000)) * time.Millisecond)
					out = c.Tick(now)
				}
				check(out)
				if out.Write != 0 {
					inflight = append(inflight, out.Write)
				}
				for _, stable := range []bool{false, true} {
					for _, ft := range c.FetchOffsets("g", nil, stable) {
						for _, fp := range ft.Partitions {
							if fp.ErrorCode == 0 && !durable[fp.Offset] {
								t.Fatalf("FetchOffsets shows offset %d, which no durable write committed", fp.Offset)
							}
						}
					}
				}
				for pid, open := range c.txns {
					for _, o := range open {
						if o.closed || o.producer != pid {
							t.Fatalf("closed or misfiled offset open under producer %d: %+v", pid, o)
						}
					}
				}
			}
		})
	}
}
