package server

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/runnel-io/runnel/broker/internal/batch"
	"github.com/runnel-io/runnel/broker/internal/partition"
)

// Followers pull from leaders as in Kafka: one fetcher goroutine per
// leader broker fetches every partition this node follows there, with
// Fetch requests that carry this node's replica id. A partition first
// truncates (KIP-101/279): it asks the leader, with OffsetForLeaderEpoch,
// where its latest leader epoch ends there and cuts its log to that
// point (so a tail written under a leadership the leader does not share
// is dropped), then fetches from its log end. Each response's batches
// are appended as the leader wrote them and fsynced before the next fetch
// (partition.AppendReplica), so the offset a follower fetches from tells
// the leader what the follower holds durably. The requests go through
// one franz-go client (kgo.Client.Broker(id)), which finds the leaders'
// addresses by Metadata, as any client does.

// replicaBackoff is how long a fetcher waits after a failed request, and
// how long a partition the leader refused (a fenced or unknown epoch:
// metadata that has not arrived here yet) sits out.
const replicaBackoff = 100 * time.Millisecond

// replicaFetchers owns the fetchers, one per leader.
type replicaFetchers struct {
	s *Server

	mu struct {
		sync.Mutex
		cl       *kgo.Client // created on first use
		byLeader map[int32]*fetcher
		of       map[tp]*fetcher
		closed   bool
	}
	wg sync.WaitGroup
}

// fetcher fetches the partitions this node follows on one leader.
type fetcher struct {
	f      *replicaFetchers
	leader int32
	wake   chan struct{}
	stop   chan struct{}

	mu struct {
		sync.Mutex
		parts map[tp]*followed
		// endPoll cancels the Fetch in flight (nil when none).
		endPoll context.CancelFunc
	}
}

// followed is one partition a fetcher serves.
type followed struct {
	p       *partition.Partition
	topicID [16]byte
	epoch   int32 // the leader epoch followed
	// truncated: the divergence check ran for this epoch.
	truncated bool
	// until: the partition sits out fetches until then (a refusal).
	until time.Time
}

func (f *replicaFetchers) init(s *Server) {
	f.s = s
	f.mu.byLeader = map[int32]*fetcher{}
	f.mu.of = map[tp]*fetcher{}
}

// follow makes a fetcher for leader serve partition t at leader epoch
// epoch, moving it from another leader's fetcher if need be. A new epoch
// checks for divergence again.
func (f *replicaFetchers) follow(t tp, p *partition.Partition, topicID [16]byte, leader, epoch int32) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.mu.closed {
		return
	}
	if old := f.mu.of[t]; old != nil && old.leader != leader {
		old.remove(t)
		delete(f.mu.of, t)
	}
	fe := f.mu.byLeader[leader]
	if fe == nil {
		fe = &fetcher{f: f, leader: leader, wake: make(chan struct{}, 1), stop: make(chan struct{})}
		fe.mu.parts = map[tp]*followed{}
		f.mu.byLeader[leader] = fe
		f.wg.Go(fe.run)
	}
	f.mu.of[t] = fe
	fe.set(t, p, topicID, epoch)
}

// unfollow stops fetching partition t (it leads now, or is gone).
func (f *replicaFetchers) unfollow(t tp) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if fe := f.mu.of[t]; fe != nil {
		fe.remove(t)
		delete(f.mu.of, t)
	}
}

// client returns the inter-broker client, creating it on first use. It
// starts from this node's own listener and learns the others from
// Metadata.
func (f *replicaFetchers) client() (*kgo.Client, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.mu.cl != nil {
		return f.mu.cl, nil
	}
	cl, err := kgo.NewClient(
		kgo.SeedBrokers(f.s.listener.Addr().String()),
		kgo.ClientID(f.s.interBrokerClientID()),
		kgo.RetryTimeout(0),
		kgo.MetadataMinAge(100*time.Millisecond),
	)
	if err != nil {
		return nil, err
	}
	f.mu.cl = cl
	return cl, nil
}

// close stops every fetcher and waits for them.
func (f *replicaFetchers) close() {
	f.mu.Lock()
	f.mu.closed = true
	for _, fe := range f.mu.byLeader {
		close(fe.stop)
	}
	f.mu.byLeader = map[int32]*fetcher{}
	f.mu.of = map[tp]*fetcher{}
	cl := f.mu.cl
	f.mu.Unlock()
	if cl != nil {
		cl.Close()
	}
	f.wg.Wait()
}

// set serves t at epoch (anew if the partition or the epoch changed) and
// wakes the fetcher.
func (fe *fetcher) set(t tp, p *partition.Partition, topicID [16]byte, epoch int32) {
	fe.mu.Lock()
	cur := fe.mu.parts[t]
	if cur == nil || cur.p != p || cur.epoch != epoch {
		fe.mu.parts[t] = &followed{p: p, topicID: topicID, epoch: epoch}
		// A long poll in flight does not name it: end the poll, so the
		// partition does not wait up to replica.fetch.wait.max.ms.
		if fe.mu.endPoll != nil {
			fe.mu.endPoll()
			fe.mu.endPoll = nil
		}
	}
	fe.mu.Unlock()
	select {
	case fe.wake <- struct{}{}:
	default:
	}
}

func (fe *fetcher) remove(t tp) {
	fe.mu.Lock()
	delete(fe.mu.parts, t)
	fe.mu.Unlock()
}

func (fe *fetcher) snapshot(now time.Time) map[tp]*followed {
	fe.mu.Lock()
	defer fe.mu.Unlock()
	out := make(map[tp]*followed, len(fe.mu.parts))
	for t, fp := range fe.mu.parts {
		if now.Before(fp.until) {
			continue
		}
		out[t] = fp
	}
	return out
}

// current reports whether fp is still what the fetcher serves for t.
func (fe *fetcher) current(t tp, fp *followed) bool {
	fe.mu.Lock()
	defer fe.mu.Unlock()
	return fe.mu.parts[t] == fp
}

func (fe *fetcher) sitOut(fp *followed, d time.Duration) {
	fe.mu.Lock()
	fp.until = time.Now().Add(d)
	fe.mu.Unlock()
}

func (fe *fetcher) run() {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		<-fe.stop
		cancel()
	}()
	s := fe.f.s
	for ctx.Err() == nil {
		parts := fe.snapshot(time.Now())
		if len(parts) == 0 {
			t := time.NewTimer(replicaBackoff)
			select {
			case <-fe.wake:
			case <-t.C:
			case <-ctx.Done():
			}
			t.Stop()
			continue
		}
		cl, err := fe.f.client()
		if err != nil {
			s.logger.Error("replica fetcher: client", "err", err)
			_ = pause(ctx, time.Second)
			continue
		}
		br := cl.Broker(int(fe.leader))
		if err := fe.truncate(ctx, br, parts); err != nil {
			fe.failed(ctx, "truncate", err)
			continue
		}
		if err := fe.fetch(ctx, br, parts); err != nil {
			fe.failed(ctx, "fetch", err)
		}
	}
}

func (fe *fetcher) failed(ctx context.Context, what string, err error) {
	if ctx.Err() == nil {
		fe.f.s.logger.Debug("replica fetcher: "+what+" failed", "leader", fe.leader, "err", err)
		_ = pause(ctx, replicaBackoff)
	}
}

// truncate runs the divergence check for the partitions that have not had
// it in their current epoch: one OffsetForLeaderEpoch request.
func (fe *fetcher) truncate(ctx context.Context, br *kgo.Broker, parts map[tp]*followed) error {
	req := kmsg.NewPtrOffsetForLeaderEpochRequest()
	req.ReplicaID = fe.f.s.cfg.NodeID
	type ask struct {
		t      tp
		fp     *followed
		latest int32
	}
	var asks []ask
	for t, fp := range parts {
		if fp.truncated {
			continue
		}
		latest, _ := fp.p.Log().Epochs().Latest()
		if latest < 0 {
			// Nothing written under any epoch: nothing can diverge.
			fe.markTruncated(t, fp)
			continue
		}
		rt := kmsg.NewOffsetForLeaderEpochRequestTopic()
		rt.Topic = t.topic
		rp := kmsg.NewOffsetForLeaderEpochRequestTopicPartition()
		rp.Partition, rp.CurrentLeaderEpoch, rp.LeaderEpoch = t.part, fp.epoch, latest
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		asks = append(asks, ask{t, fp, latest})
	}
	if len(asks) == 0 {
		return nil
	}
	kresp, err := br.Request(ctx, req)
	if err != nil {
		return err
	}
	resp := kresp.(*kmsg.OffsetForLeaderEpochResponse)
	answers := map[tp]kmsg.OffsetForLeaderEpochResponseTopicPartition{}
	for _, rt := range resp.Topics {
		for _, rp := range rt.Partitions {
			answers[tp{rt.Topic, rp.Partition}] = rp
		}
	}
	for _, a := range asks {
		rp, ok := answers[a.t]
		if !ok || !fe.current(a.t, a.fp) {
			continue
		}
		if rp.ErrorCode != 0 {
			fe.sitOut(a.fp, replicaBackoff)
			continue
		}
		to := a.fp.p.Offsets().LogEnd
		switch {
		case rp.LeaderEpoch < 0 || rp.EndOffset < 0:
			// The leader knows no epoch at or below ours: keep what is
			// below our high watermark, which every ISR member has.
			to = min(to, a.fp.p.Offsets().HighWatermark)
		case rp.LeaderEpoch < a.latest:
			// The leader's log ends that epoch where ours may not: cut
			// at the earlier of both ends of it.
			_, ours := a.fp.p.Log().Epochs().EndOffsetFor(rp.LeaderEpoch)
			to = min(to, rp.EndOffset, ours)
		default:
			to = min(to, rp.EndOffset)
		}
		if to < a.fp.p.Offsets().LogEnd {
			fe.f.s.logger.Info("replica: truncating a divergent tail", "topic", a.t.topic, "partition", a.t.part,
				"from", a.fp.p.Offsets().LogEnd, "to", to, "leader", fe.leader, "leader_epoch", a.fp.epoch)
			if err := a.fp.p.TruncateTo(to); err != nil {
				fe.f.s.logger.Error("replica: truncate failed", "topic", a.t.topic, "partition", a.t.part, "err", err)
				fe.sitOut(a.fp, time.Second)
				continue
			}
		}
		fe.markTruncated(a.t, a.fp)
	}
	return nil
}

func (fe *fetcher) markTruncated(t tp, fp *followed) {
	fe.mu.Lock()
	fp.truncated = true
	fe.mu.Unlock()
}

// fetch sends one Fetch for the truncated partitions and appends what
// comes back.
func (fe *fetcher) fetch(ctx context.Context, br *kgo.Broker, parts map[tp]*followed) error {
	s := fe.f.s
	req := kmsg.NewPtrFetchRequest()
	req.ReplicaID = s.cfg.NodeID
	req.ReplicaState.ID = s.cfg.NodeID
	req.ReplicaState.Epoch = s.life.epoch.Load()
	req.MaxWaitMillis = s.cfg.ReplicaFetchWaitMaxMs
	req.MinBytes = 1
	req.MaxBytes = max(s.cfg.ReplicaFetchMaxBytes, 1<<20) * 8
	req.SessionID, req.SessionEpoch = 0, -1
	byTopic := map[string]int{}
	sent := map[tp]*followed{}
	for t, fp := range parts {
		if !fp.truncated {
			continue
		}
		i, ok := byTopic[t.topic]
		if !ok {
			rt := kmsg.NewFetchRequestTopic()
			rt.Topic, rt.TopicID = t.topic, fp.topicID
			req.Topics = append(req.Topics, rt)
			i = len(req.Topics) - 1
			byTopic[t.topic] = i
		}
		o := fp.p.Offsets()
		rp := kmsg.NewFetchRequestTopicPartition()
		rp.Partition, rp.CurrentLeaderEpoch = t.part, fp.epoch
		rp.FetchOffset, rp.LogStartOffset = o.LogEnd, o.LogStart
		rp.PartitionMaxBytes = s.cfg.ReplicaFetchMaxBytes
		req.Topics[i].Partitions = append(req.Topics[i].Partitions, rp)
		sent[t] = fp
	}
	if len(sent) == 0 {
		return nil
	}
	pctx, endPoll := context.WithCancel(ctx)
	fe.mu.Lock()
	fe.mu.endPoll = endPoll
	fe.mu.Unlock()
	kresp, err := br.Request(pctx, req)
	fe.mu.Lock()
	fe.mu.endPoll = nil
	fe.mu.Unlock()
	endPoll()
	if err != nil {
		if pctx.Err() != nil && ctx.Err() == nil {
			return nil // ended for a partition added meanwhile: fetch again
		}
		return err
	}
	resp := kresp.(*kmsg.FetchResponse)
	if resp.ErrorCode != 0 {
		return kerr.ErrorForCode(resp.ErrorCode)
	}
	im := s.meta.Image()
	for _, rt := range resp.Topics {
		name := rt.Topic
		if name == "" {
			if t := im.TopicsByID[rt.TopicID]; t != nil {
				name = t.Name
			}
		}
		for _, rp := range rt.Partitions {
			t := tp{name, rp.Partition}
			fp := sent[t]
			if fp == nil || !fe.current(t, fp) {
				continue
			}
			if rp.ErrorCode != 0 {
				err := kerr.ErrorForCode(rp.ErrorCode)
				if errors.Is(err, kerr.OffsetOutOfRange) {
					if o := fp.p.Offsets(); rp.LogStartOffset > o.LogEnd {
						// The leader deleted what we would fetch next:
						// start over at its log start.
						s.logger.Info("replica: restarting the log at the leader's log start", "topic", name, "partition", rp.Partition,
							"log_end", o.LogEnd, "leader_log_start", rp.LogStartOffset)
						if err := fp.p.StartAt(rp.LogStartOffset); err != nil {
							s.logger.Error("replica: restart failed", "topic", name, "partition", rp.Partition, "err", err)
						}
						continue
					}
					// Our log end is past the leader's: check for
					// divergence again.
					fe.mu.Lock()
					fp.truncated = false
					fe.mu.Unlock()
				}
				s.logger.Debug("replica fetch refused", "topic", name, "partition", rp.Partition, "leader", fe.leader, "err", err)
				fe.sitOut(fp, replicaBackoff)
				continue
			}
			if err := fp.p.AppendReplica(wholeBatches(rp.RecordBatches), rp.HighWatermark); err != nil {
				s.logger.Warn("replica append failed", "topic", name, "partition", rp.Partition, "err", err)
				fe.mu.Lock()
				fp.truncated = false
				fe.mu.Unlock()
				fe.sitOut(fp, replicaBackoff)
				continue
			}
			if err := fp.p.FollowLogStart(rp.LogStartOffset); err != nil {
				s.logger.Warn("replica: moving the log start failed", "topic", name, "partition", rp.Partition, "err", err)
			}
		}
	}
	return nil
}

// wholeBatches cuts b after its last whole record batch (a leader may end
// a response with a partial one).
func wholeBatches(b []byte) []byte {
	n := 0
	for n+batch.HeaderSize <= len(b) {
		h, err := batch.ParseHeader(b[n:])
		if err != nil || n+h.Size() > len(b) {
			break
		}
		n += h.Size()
	}
	return b[:n]
}
