package txn

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestRandomOperations drives the core with random requests from a few
// producers of three transactional ids (InitProducerId with and without
// their producer id and epoch, AddPartitionsToTxn, AddOffsetsToTxn,
// EndTxn, marker reports, some stale), ticks, and writes that complete or
// fail in random order, and checks after every step: no panic, every
// request answered once (all of them once the writes are done), each
// state's shape (partitions only while a transaction runs, a start time
// only once one has), an InitProducerId answer is the id's durable
// producer id and epoch, and a coordinator that loads the durable log
// holds every id exactly as the live one does: nothing a client was told
// lives only in memory.
func TestRandomOperations(t *testing.T) {
	for seed := range uint64(40) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(seed, 11))
			now := time.UnixMilli(1_000_000)
			cfg := Config{MaxTimeout: time.Minute, IDExpiration: 10 * time.Minute,
				AbortCheckInterval: time.Second, ExpiryCheckInterval: time.Minute}
			c := New(cfg)
			ids := []string{"a", "b", "c"}
			type producer struct {
				pid   int64
				epoch int16
			}
			known := map[string]producer{} // what each id's producer was last told
			var log []Record
			type held struct {
				id   WriteID
				recs []Record
			}
			var inflight []held
			var markers []Marker
			asked, answered := map[Waiter]bool{}, map[Waiter]bool{}
			var next Waiter
			handle := func(out Output) {
				if out.Write != 0 {
					inflight = append(inflight, held{out.Write, out.Records})
				}
				markers = append(markers, out.Markers...)
				for _, r := range out.Replies {
					if !asked[r.To] || answered[r.To] {
						t.Fatalf("waiter %d answered unasked or twice", r.To)
					}
					answered[r.To] = true
					if resp, ok := r.Resp.(*kmsg.InitProducerIDResponse); ok && resp.ErrorCode == 0 && resp.ProducerEpoch >= 0 {
						for _, id := range ids {
							if tx := c.txns[id]; tx != nil && tx.producerID == resp.ProducerID {
								if tx.epoch != resp.ProducerEpoch {
									t.Fatalf("%s told epoch %d, durable %d", id, resp.ProducerEpoch, tx.epoch)
								}
								known[id] = producer{resp.ProducerID, resp.ProducerEpoch}
							}
						}
					}
				}
			}
			waiter := func() Waiter { next++; asked[next] = true; return next }
			check := func() {
				reload := New(cfg)
				for _, r := range log {
					if err := reload.Load(r.Key, r.Value); err != nil {
						t.Fatal(err)
					}
				}
				for _, id := range ids {
					live, ok := c.txns[id]
					if ok && !live.visible() {
						ok = false
					}
					loaded, lok := reload.txns[id]
					if ok != lok {
						t.Fatalf("%s: live %v, in the log %v", id, ok, lok)
					}
					if !ok {
						continue
					}
					a, b := live.meta, loaded.meta
					a.lastProducerID, a.lastEpoch, b.lastProducerID, b.lastEpoch = 0, 0, 0, 0
					if fmt.Sprint(a) != fmt.Sprint(b) {
						t.Fatalf("%s: live %+v, in the log %+v", id, a, b)
					}
					switch live.state {
					case Empty, CompleteCommit, CompleteAbort:
						if len(live.partitions) > 0 || (live.state == Empty && live.start != -1) {
							t.Fatalf("%s: %s with %v start %d", id, live.state, live.partitions, live.start)
						}
					case Ongoing, PrepareCommit, PrepareAbort:
						if len(live.partitions) == 0 || live.start < 0 {
							t.Fatalf("%s: %s with %v start %d", id, live.state, live.partitions, live.start)
						}
					default:
						t.Fatalf("%s: current state %s", id, live.state)
					}
				}
			}
			for range 300 {
				id := ids[rng.IntN(len(ids))]
				p := known[id]
				if rng.IntN(6) == 0 {
					p.epoch-- // a fenced or stale producer
				}
				switch rng.IntN(9) {
				case 0:
					req := kmsg.NewPtrInitProducerIDRequest()
					req.TransactionalID, req.TransactionTimeoutMillis = &id, int32(1000+rng.IntN(5000))
					if _, ok := known[id]; ok && rng.IntN(2) == 0 {
						req.ProducerID, req.ProducerEpoch = p.pid, p.epoch
					}
					handle(c.InitProducerID(now, waiter(), req))
				case 1, 2:
					req := kmsg.NewPtrAddPartitionsToTxnRequest()
					req.TransactionalID, req.ProducerID, req.ProducerEpoch = id, p.pid, p.epoch
					req.Topics = []kmsg.AddPartitionsToTxnRequestTopic{{Topic: "t", Partitions: []int32{int32(rng.IntN(4))}}}
					handle(c.AddPartitions(now, waiter(), req, nil))
				case 3:
					req := kmsg.NewPtrAddOffsetsToTxnRequest()
					req.TransactionalID, req.ProducerID, req.ProducerEpoch = id, p.pid, p.epoch
					handle(c.AddOffsets(now, waiter(), req, int32(rng.IntN(2))))
				case 4:
					req := kmsg.NewPtrEndTxnRequest()
					req.TransactionalID, req.ProducerID, req.ProducerEpoch, req.Commit = id, p.pid, p.epoch, rng.IntN(2) == 0
					handle(c.EndTxn(now, waiter(), req))
				case 5:
					if len(markers) > 0 {
						i := rng.IntN(len(markers))
						m := markers[i]
						markers = slices.Delete(markers, i, i+1)
						handle(c.MarkersWritten(now, m.TransactionalID, m.ProducerID, m.ProducerEpoch))
					}
				case 6:
					now = now.Add(time.Duration(rng.IntN(3000)) * time.Millisecond)
					handle(c.Tick(now))
				default:
					if len(inflight) > 0 {
						i := rng.IntN(len(inflight))
						h := inflight[i]
						inflight = slices.Delete(inflight, i, i+1)
						var failure *kerr.Error
						if rng.IntN(5) == 0 {
							failure = kerr.NotCoordinator
						} else {
							log = append(log, h.recs...)
						}
						handle(c.Written(now, h.id, failure))
					}
				}
				check()
			}
			// Complete every write: each request has had its answer.
			for len(inflight) > 0 {
				h := inflight[0]
				inflight = inflight[1:]
				log = append(log, h.recs...)
				handle(c.Written(now, h.id, nil))
			}
			check()
			for w := range asked {
				if !answered[w] {
					t.Fatalf("waiter %d never answered", w)
				}
			}
		})
	}
}
