package controller

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/runnel-io/runnel/broker/internal/metadata"
)

// TestRandomOperations drives the controller with random registrations,
// heartbeats (stale epochs, lagging offsets, fence and shutdown requests),
// time passing, AlterPartition proposals (some with stale epochs or
// ineligible replicas), ElectLeaders, topic creations placed by Place and
// config changes, and controller failovers (a new Controller), and checks
// after every step: every batch of records
// applies whole; leaders are always usable ISR members or -1; ISRs are
// non-empty subsets of the replicas holding only usable brokers while
// the partition has a leader; broker and partition epochs only grow; a
// broker told it may shut down leads nothing; the controller dropped
// nothing.
//
// The controller itself is always given the newest image (its contract:
// the owner feeds it an image that includes every record it returned
// before). But AlterPartition and ElectLeader are pure functions a handler
// may run on an image that is no longer the newest, and the server places
// topics on whatever image it has: one such step in four uses the image of
// the step before. Such a change must apply whole or be refused whole
// with metadata.ErrStaleEpoch, never break an invariant; a topic placed on
// brokers fenced since is repaired by the next Tick.
func TestRandomOperations(t *testing.T) {
	// What the runs covered, so a generator that stops reaching a case
	// fails the test instead of passing vacuously.
	var fenced, offline, unclean, refused, repaired, shutdowns, failovers int
	defer func() {
		t.Logf("fencings %d, partitions gone offline %d, unclean elections %d, stale changes refused %d, stale topics repaired %d, "+
			"controlled shutdowns done %d, controller failovers %d", fenced, offline, unclean, refused, repaired, shutdowns, failovers)
		if fenced == 0 || offline == 0 || unclean == 0 || refused == 0 || repaired == 0 || shutdowns == 0 || failovers == 0 {
			t.Error("a case was never reached")
		}
	}()
	for seed := range uint64(40) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(seed, 11))
			now := time.UnixMilli(1_000_000)
			c := New(Config{
				SessionTimeout: 9 * time.Second, UncleanLeaderElection: rng.IntN(3) == 0,
				AutoLeaderRebalance: rng.IntN(2) == 0, LeaderImbalancePercentage: int32(rng.IntN(30)),
				LeaderImbalanceCheckInterval: 5 * time.Second,
			})
			im, prev := metadata.Empty(), metadata.Empty()
			incarnation := map[int32]int{}
			brokerEpochs := map[int32]int64{}
			partEpochs := map[string][2]int32{}
			topics := 0
			check := func(step int) {
				t.Helper()
				if err := checkInvariants(im); err != nil {
					t.Fatalf("step %d: %v\n%s", step, err, show(im))
				}
				for id, b := range im.Brokers {
					if b.Epoch < brokerEpochs[id] {
						t.Fatalf("step %d: broker %d epoch went from %d to %d", step, id, brokerEpochs[id], b.Epoch)
					}
					brokerEpochs[id] = b.Epoch
				}
				for _, n := range im.TopicNames() {
					for i, p := range im.Topics[n].Partitions {
						k := fmt.Sprintf("%s-%d", n, i)
						if old, ok := partEpochs[k]; ok && (p.LeaderEpoch < old[0] || p.Epoch < old[1]) {
							t.Fatalf("step %d: %s epochs went from %v to %d/%d", step, k, old, p.LeaderEpoch, p.Epoch)
						}
						partEpochs[k] = [2]int32{p.LeaderEpoch, p.Epoch}
					}
				}
				if c.dropped != 0 {
					t.Fatalf("step %d: the controller dropped %d changes", step, c.dropped)
				}
			}
			brokerID := func() int32 { return int32(1 + rng.IntN(5)) }
			randomISR := func(p metadata.Partition) []int32 {
				var isr []int32
				if p.Leader >= 0 {
					isr = append(isr, p.Leader)
				}
				for _, r := range p.Replicas {
					if r != p.Leader && rng.IntN(2) == 0 {
						isr = append(isr, r)
					}
				}
				if rng.IntN(20) == 0 {
					isr = append(isr, 9) // not a replica
				}
				return isr
			}
			for step := range 1500 {
				// stopping is a broker told it may shut down this step: it
				// must lead nothing once the step's records apply.
				var stopping int32 = -1
				op := rng.IntN(20)
				base := im
				stale := step > 0 && op >= 11 && op < 18 && rng.IntN(4) == 0
				if stale {
					base = prev
				}
				var recs []metadata.Record
				switch {
				case op < 2:
					id := brokerID()
					if rng.IntN(3) == 0 {
						incarnation[id]++
					}
					_, recs, _ = c.Register(base, now, Registration{ID: id, Host: "h", Port: 9092,
						Rack: fmt.Sprint("r", id%3), Incarnation: fmt.Sprint(incarnation[id])})
				case op < 8:
					id := brokerID()
					epoch := base.Brokers[id].Epoch
					if rng.IntN(10) == 0 {
						epoch--
					}
					var reply HeartbeatReply
					var err error
					reply, recs, err = c.Heartbeat(base, now, Heartbeat{ID: id, Epoch: epoch,
						MetadataOffset: base.Offset - int64(rng.IntN(3)), WantFence: rng.IntN(15) == 0, WantShutdown: rng.IntN(12) == 0})
					if err == nil && reply.ShouldShutDown {
						stopping = id
					}
				case op < 11:
					now = now.Add(time.Duration(rng.IntN(4000)) * time.Millisecond)
					recs = c.Tick(base, now)
				case op < 14:
					names := base.TopicNames()
					if len(names) == 0 {
						continue
					}
					n := names[rng.IntN(len(names))]
					i := rng.IntN(len(base.Topics[n].Partitions))
					p := base.Topics[n].Partitions[i]
					req := AlterPartitionRequest{Broker: p.Leader, BrokerEpoch: base.Brokers[p.Leader].Epoch, Topic: n, Partition: int32(i),
						LeaderEpoch: p.LeaderEpoch, PartitionEpoch: p.Epoch, ISR: randomISR(p)}
					if rng.IntN(8) == 0 {
						req.PartitionEpoch--
					}
					if _, r, err := AlterPartition(base, req); err == nil && r != nil {
						recs = []metadata.Record{*r}
					}
				case op < 16:
					names := base.TopicNames()
					if len(names) == 0 {
						continue
					}
					n := names[rng.IntN(len(names))]
					i := rng.IntN(len(base.Topics[n].Partitions))
					if ch, err := ElectLeader(base, n, int32(i), ElectionType(rng.IntN(2))); err == nil {
						recs = []metadata.Record{{ChangePartition: ch}}
					}
				case op < 18:
					if topics >= 6 {
						continue
					}
					var brokers []metadata.Broker
					for _, id := range base.BrokerIDs() {
						brokers = append(brokers, base.Brokers[id])
					}
					placed, err := Place(brokers, Placement{Count: 1 + rng.IntN(4), ReplicationFactor: 1 + rng.IntN(3), Start: rng.IntN(5)})
					if err != nil {
						if !errors.Is(err, ErrInvalidReplicationFactor) {
							t.Fatalf("step %d: place: %v", step, err)
						}
						continue
					}
					tp := &metadata.Topic{Name: fmt.Sprint("t", topics), ID: [16]byte{byte(topics + 1)}}
					if rng.IntN(3) == 0 {
						tp.Configs = map[string]string{"unclean.leader.election.enable": fmt.Sprint(rng.IntN(2) == 0)}
					}
					for _, rs := range placed {
						tp.Partitions = append(tp.Partitions, metadata.Partition{Leader: rs[0], Replicas: rs, ISR: slices.Clone(rs)})
					}
					topics++
					recs = []metadata.Record{{CreateTopic: tp}}
				case op == 18 && rng.IntN(10) == 0:
					// A controller failover: the sessions start again.
					c = New(c.cfg)
					failovers++
				default:
					v := fmt.Sprint(rng.IntN(2) == 0)
					recs = []metadata.Record{{SetBrokerConfig: &metadata.SetConfig{Key: "unclean.leader.election.enable", Value: &v}}}
				}
				next := im
				var err error
				for _, r := range recs {
					if next, err = next.Apply(r); err != nil {
						break
					}
				}
				if err != nil {
					if !stale || !errors.Is(err, metadata.ErrStaleEpoch) {
						t.Fatalf("step %d (stale %v): batch refused: %v", step, stale, err)
					}
					refused++
					continue
				}
				for _, r := range recs {
					if r.ChangeBroker != nil && r.ChangeBroker.Fenced != nil && *r.ChangeBroker.Fenced {
						fenced++
					}
					if ch := r.ChangePartition; ch != nil {
						old := im.Topics[ch.Topic].Partitions[ch.Partition]
						if ch.State.Leader == -1 && old.Leader != -1 {
							offline++
						}
						if ch.State.Leader != -1 && !slices.Contains(old.ISR, ch.State.Leader) {
							unclean++
						}
					}
				}
				if len(recs) > 0 {
					prev = im
				}
				im = next
				if stopping >= 0 {
					shutdowns++
					if leadsAny(im, stopping) {
						t.Fatalf("step %d: broker %d may shut down but leads partitions\n%s", step, stopping, show(im))
					}
				}
				// (repaired counts ticks that changed something after a
				// stale topic; the check below is what proves the repair.)
				if stale && len(recs) > 0 && recs[0].CreateTopic != nil {
					fix := c.Tick(im, now)
					if len(fix) > 0 {
						repaired++
					}
					for _, r := range fix {
						if im, err = im.Apply(r); err != nil {
							t.Fatalf("step %d: tick after a stale topic: %v", step, err)
						}
					}
				}
				check(step)
			}
		})
	}
}
