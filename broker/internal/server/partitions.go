package server

import (
	"errors"
	"fmt"
	"math"
	"strconv"

	"github.com/runnel-io/runnel/broker/internal/configs"
	plog "github.com/runnel-io/runnel/broker/internal/log"
	"github.com/runnel-io/runnel/broker/internal/metadata"
	"github.com/runnel-io/runnel/broker/internal/partition"
)

// reconcile brings the hosted partitions in line with a new metadata image:
// it opens new partitions, deletes those of deleted topics, and applies
// config changes. It runs on the quorum's FSM goroutine, one change at a
// time, as the change is applied.
func (s *Server) reconcile(old, im *metadata.Image) {
	s.reconcileMu.Lock()
	defer s.reconcileMu.Unlock()
	var err error
	s.reconcileErr(old, im, &err)
	if err != nil {
		s.logger.Error("applying metadata change", "err", err)
	}
}

func (s *Server) reconcileErr(old, im *metadata.Image, errp *error) {
	// Deleted (or deleted and recreated) topics first, so a recreated
	// topic starts from an empty directory.
	for name, t := range old.Topics {
		if nt := im.Topics[name]; nt == nil || nt.ID != t.ID {
			for i := range t.Partitions {
				s.dropPartition(name, int32(i), errp)
			}
		}
	}
	// Partitions this node no longer hosts (a reassignment moved them
	// away) are deleted here.
	for name, t := range im.Topics {
		ot := old.Topics[name]
		if ot == nil || ot.ID != t.ID {
			continue
		}
		for i, pm := range t.Partitions {
			if i < len(ot.Partitions) && hosts(ot.Partitions[i], s.cfg.NodeID) && !hosts(pm, s.cfg.NodeID) {
				s.dropPartition(name, int32(i), errp)
			}
		}
	}
	layers := s.layers(im)
	// The broker layers are the same for every topic: resolve them once.
	b, err := configs.ResolveBroker(layers)
	if err != nil {
		*errp = errors.Join(*errp, fmt.Errorf("broker configs: %w", err))
		return
	}
	for _, name := range im.TopicNames() {
		t := im.Topics[name]
		cfg, err := partitionConfig(t.Configs, layers, b.LogFlushNever)
		if err != nil {
			*errp = errors.Join(*errp, fmt.Errorf("topic %s: %w", name, err))
			continue
		}
		minISR := minISROf(t.Configs, layers)
		for i, pm := range t.Partitions {
			if !hosts(pm, s.cfg.NodeID) {
				continue
			}
			p := s.partition(name, int32(i))
			if p != nil {
				if p.Config() != cfg {
					p.SetConfig(cfg)
				}
				s.applyRole(tp{name, int32(i)}, t.ID, p, pm, minISR)
				continue
			}
			p, err := partition.Open(partition.Options{
				FS: s.fs, Dir: s.partitionDir(name, int32(i)), Topic: name, Index: int32(i),
				Config: cfg, LeaderEpoch: -1, Now: s.now, Logger: s.logger, // applyRole starts its epoch
			})
			if err != nil {
				*errp = errors.Join(*errp, fmt.Errorf("open %s-%d: %w", name, i, err))
				continue
			}
			s.mu.Lock()
			s.mu.parts[tp{name, int32(i)}] = p
			s.mu.Unlock()
			s.applyRole(tp{name, int32(i)}, t.ID, p, pm, minISR)
		}
	}
}

func hosts(pm metadata.Partition, node int32) bool {
	for _, r := range pm.Replicas {
		if r == node {
			return true
		}
	}
	return false
}

func (s *Server) dropPartition(topic string, part int32, errp *error) {
	s.fetchers.unfollow(tp{topic, part})
	s.mu.Lock()
	p := s.mu.parts[tp{topic, part}]
	delete(s.mu.parts, tp{topic, part})
	s.mu.Unlock()
	if p != nil {
		if err := p.Delete(); err != nil {
			*errp = errors.Join(*errp, fmt.Errorf("delete %s-%d: %w", topic, part, err))
		}
	}
}

func (s *Server) partitionDir(topic string, part int32) string {
	return s.fs.PathJoin(s.dataDir, topic+"-"+strconv.Itoa(int(part)))
}

// layers returns the broker config layers as the image holds them.
func (s *Server) layers(im *metadata.Image) configs.BrokerLayers {
	return configs.BrokerLayers{
		Dynamic:        im.BrokerConfigs[strconv.Itoa(int(s.cfg.NodeID))],
		DynamicDefault: im.BrokerConfigs[""],
		Static:         s.static,
	}
}

// partitionConfig resolves a topic's effective settings into what a
// partition enforces; flushNever is the broker's log.flush=never.
func partitionConfig(topic map[string]string, layers configs.BrokerLayers, flushNever bool) (partition.Config, error) {
	t, err := configs.ResolveTopic(topic, layers)
	if err != nil {
		return partition.Config{}, err
	}
	retentionMs, retentionBytes := t.RetentionMs, t.RetentionBytes
	if !t.CleanupPolicy.Delete() { // compact alone (or none) deletes nothing by age or size
		retentionMs, retentionBytes = -1, -1
	}
	maxLag := t.MaxCompactionLagMs
	if maxLag == math.MaxInt64 {
		maxLag = 0 // never
	}
	return partition.Config{
		Log: plog.Config{
			SegmentBytes:           int64(t.SegmentBytes),
			SegmentMs:              t.MaxSegmentMs(),
			IndexIntervalBytes:     t.IndexIntervalBytes,
			RetentionMs:            retentionMs,
			RetentionBytes:         retentionBytes,
			FlushNever:             flushNever,
			Compact:                t.CleanupPolicy.Compact(),
			DeleteRetentionMs:      t.DeleteRetentionMs,
			MinCompactionLagMs:     t.MinCompactionLagMs,
			MaxCompactionLagMs:     maxLag,
			MinCleanableDirtyRatio: t.MinCleanableDirtyRatio,
		},
		MaxMessageBytes:      t.MaxMessageBytes,
		LogAppendTime:        t.MessageTimestampType == configs.LogAppendTime,
		Compacted:            t.CleanupPolicy.Compact(),
		TimestampBeforeMaxMs: t.MessageTimestampBeforeMaxMs,
		TimestampAfterMaxMs:  t.MessageTimestampAfterMaxMs,
	}, nil
}
