package server

import (
	"context"
	"slices"
	"time"

	"github.com/runnel-io/runnel/broker/internal/configs"
	"github.com/runnel-io/runnel/broker/internal/controller"
	"github.com/runnel-io/runnel/broker/internal/metadata"
	"github.com/runnel-io/runnel/broker/internal/partition"
)

// applyRole makes a hosted partition what the image says it is here: the
// leader (with its epoch, ISR and min.insync.replicas) or a follower of
// the leader it names, fetching from it. A partition with no leader
// (offline) stops fetching and takes no writes. reconcile calls it for
// every hosted partition on every change; it only acts on what changed.
func (s *Server) applyRole(t tp, topicID [16]byte, p *partition.Partition, pm metadata.Partition, minISR int) {
	self := s.cfg.NodeID
	leader, epoch := p.Role()
	switch {
	case pm.Leader == self:
		// A new leadership, or new replicas (a reassignment): the same
		// leadership renewed keeps what the followers reported.
		if !leader || epoch != pm.LeaderEpoch || !slices.Equal(p.Replicas(), pm.Replicas) {
			s.fetchers.unfollow(t)
			err := p.BecomeLeader(partition.LeaderState{
				ID: self, LeaderEpoch: pm.LeaderEpoch, PartitionEpoch: pm.Epoch,
				Replicas: pm.Replicas, ISR: pm.ISR, MinISR: minISR,
			})
			if err != nil {
				s.logger.Error("becoming leader failed", "topic", t.topic, "partition", t.part, "err", err)
			}
			return
		}
		p.SetISR(pm.ISR, pm.Epoch)
		p.SetMinISR(minISR)
	case pm.Leader < 0:
		s.fetchers.unfollow(t)
		if leader || epoch != pm.LeaderEpoch {
			if err := p.BecomeFollower(pm.LeaderEpoch, -1); err != nil {
				s.logger.Debug("partition offline", "topic", t.topic, "partition", t.part, "err", err)
			}
		}
	default:
		if leader || epoch != pm.LeaderEpoch {
			if err := p.BecomeFollower(pm.LeaderEpoch, pm.Leader); err != nil {
				s.logger.Error("becoming follower failed", "topic", t.topic, "partition", t.part, "err", err)
				return
			}
		}
		s.fetchers.follow(t, p, topicID, pm.Leader, pm.LeaderEpoch)
	}
}

// minISROf is a topic's effective min.insync.replicas.
func minISROf(topic map[string]string, layers configs.BrokerLayers) int {
	t, err := configs.ResolveTopic(topic, layers)
	if err != nil || t.MinInsyncReplicas < 1 {
		return 1
	}
	return int(t.MinInsyncReplicas)
}

// alterISR proposes a led partition's new ISR to the active controller,
// off the caller's goroutine. The partition applies the answer (SetISR),
// or forgets its proposal on a refusal (AbortISRChange) so it may propose
// again.
func (s *Server) alterISR(t tp, p *partition.Partition, isr []int32) {
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		pm, ok := s.partitionMeta(t)
		_, epoch := p.Role()
		if !ok || pm.LeaderEpoch != epoch {
			p.AbortISRChange()
			return
		}
		ctx, cancel := context.WithTimeout(s.bg, 10*time.Second)
		defer cancel()
		resp, err := s.callController(ctx, controller.Request{AlterPartition: &controller.AlterPartitionRequest{
			Broker: s.cfg.NodeID, BrokerEpoch: s.life.epoch.Load(), Topic: t.topic, Partition: t.part,
			LeaderEpoch: pm.LeaderEpoch, PartitionEpoch: pm.Epoch, ISR: isr,
		}})
		if err != nil {
			s.logger.Info("ISR change refused", "topic", t.topic, "partition", t.part, "isr", isr, "err", err)
			p.AbortISRChange()
			return
		}
		st := resp.AlterPartition
		if len(st.ISR) < len(pm.ISR) {
			s.metrics.isrShrinks.Inc()
		} else if len(st.ISR) > len(pm.ISR) {
			s.metrics.isrExpands.Inc()
		}
		s.logger.Info("ISR changed", "topic", t.topic, "partition", t.part, "from", pm.ISR, "to", st.ISR)
		p.SetISR(st.ISR, st.Epoch)
	}()
}

// partitionMeta returns a partition's state in the current image.
func (s *Server) partitionMeta(t tp) (metadata.Partition, bool) {
	top := s.meta.Image().Topic(t.topic)
	if top == nil || t.part < 0 || int(t.part) >= len(top.Partitions) {
		return metadata.Partition{}, false
	}
	return top.Partitions[t.part], true
}

// isrLoop drops followers that fell behind from the ISRs of the
// partitions this node leads, checking every half replica.lag.time.max.ms
// (as Kafka's isr-expiration task).
func (s *Server) isrLoop() {
	lag := time.Duration(s.cfg.ReplicaLagTimeMaxMs) * time.Millisecond
	t := time.NewTicker(max(lag/2, 10*time.Millisecond))
	defer t.Stop()
	for {
		select {
		case <-s.stop:
			return
		case <-t.C:
		}
		now := s.now()
		for _, p := range s.partitions() {
			if shrink := p.CheckISR(now, lag); shrink != nil {
				s.alterISR(tp{p.Topic, p.Index}, p, shrink)
			}
		}
	}
}
