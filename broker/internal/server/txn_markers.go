package server

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/runnel-io/runnel/broker/internal/partition"
	"github.com/runnel-io/runnel/broker/internal/txn"
)

// markerTimeout bounds one marker write's wait for the ISR, and one
// WriteTxnMarkers round trip (Kafka's request.timeout.ms is 30 s; a
// shorter bound retries sooner after a leader change).
const markerTimeout = 10 * time.Second

// markerWriters writes the transaction markers the transaction coordinators
// ask for (Kafka's TransactionMarkerChannelManager): one goroutine per
// marker, which writes it to the partitions this node leads directly and
// sends WriteTxnMarkers to the leaders of the others, retrying with backoff
// until every partition has it, then reports MarkersWritten to the core.
// It gives up when its shard is dropped (the partition's next coordinator
// resends the markers on load) or when a partition answers that the
// coordinator or the producer epoch is stale.
type markerWriters struct {
	s  *Server
	wg sync.WaitGroup
}

func (mw *markerWriters) send(sh *txnShard, m txn.Marker) {
	mw.wg.Go(func() { mw.write(sh, m) })
}

// wait waits for the marker writers, which end once the server stops.
func (mw *markerWriters) wait() { mw.wg.Wait() }

func (mw *markerWriters) write(sh *txnShard, m txn.Marker) {
	s := mw.s
	left := m.Partitions
	backoff := 10 * time.Millisecond
	for {
		var stale bool
		left, stale = mw.writeOnce(sh, m, left)
		if stale {
			s.logger.Warn("stopped writing transaction markers: this coordinator or the producer epoch is stale",
				"transactional_id", m.TransactionalID, "producer_id", m.ProducerID, "epoch", m.ProducerEpoch)
			return
		}
		if len(left) == 0 {
			break
		}
		t := time.NewTimer(backoff)
		select {
		case <-t.C:
		case <-sh.dropped:
			t.Stop()
			return
		case <-s.stop:
			t.Stop()
			return
		}
		backoff = min(2*backoff, time.Second)
	}
	now := s.now()
	p, _ := sh.step(0, func(c *txn.Coordinator) txn.Output {
		start := c.Describe(m.TransactionalID).StartTimestamp
		out := c.MarkersWritten(now, m.TransactionalID, m.ProducerID, m.ProducerEpoch)
		if out.Write != 0 {
			s.txnMetrics.complete(m.Commit, start, now)
		}
		return out
	})
	p.finish()
}

// writeOnce writes marker m to each of parts once and returns those that
// must be tried again; stale is set when a partition refused the marker as
// coming from a stale coordinator or producer epoch.
func (mw *markerWriters) writeOnce(sh *txnShard, m txn.Marker, parts []txn.TopicPartition) (left []txn.TopicPartition, stale bool) {
	s := mw.s
	ctx, cancel := context.WithTimeout(s.bg, markerTimeout)
	defer cancel()
	im := s.meta.Image()
	remote := map[int32][]txn.TopicPartition{}
	judge := func(tp txn.TopicPartition, code int16) {
		switch code {
		case 0:
		case kerr.InvalidProducerEpoch.Code, kerr.TransactionCoordinatorFenced.Code, kerr.ProducerFenced.Code:
			stale = true
		default:
			left = append(left, tp)
		}
	}
	var local []txn.TopicPartition
	for _, tp := range parts {
		t := im.Topic(tp.Topic)
		if t == nil || int(tp.Partition) >= len(t.Partitions) {
			// The topic is gone: nothing to write (Kafka drops a
			// deleted partition from the markers too). A leader that
			// answers UNKNOWN_TOPIC_OR_PARTITION for a topic this node
			// still has is only behind: it is asked again.
			continue
		}
		switch leader := t.Partitions[tp.Partition].Leader; {
		case leader == s.cfg.NodeID:
			local = append(local, tp)
		case leader < 0:
			left = append(left, tp)
		default:
			remote[leader] = append(remote[leader], tp)
		}
	}
	// The partitions this node leads, and each other leader's, are
	// written concurrently: the transaction's next AddPartitionsToTxn
	// waits for the slowest (CONCURRENT_TRANSACTIONS until then).
	codes := map[txn.TopicPartition]int16{}
	var mu sync.Mutex
	set := func(tp txn.TopicPartition, code int16) {
		mu.Lock()
		codes[tp] = code
		mu.Unlock()
	}
	var wg sync.WaitGroup
	for _, tp := range local {
		wg.Go(func() {
			set(tp, s.metrics.code(kmsg.WriteTxnMarkers, s.writeMarker(ctx, tp.Topic, tp.Partition, marker(m))))
		})
	}
	if len(remote) > 0 {
		cl, err := s.fetchers.client()
		for leader, tps := range remote {
			if err != nil {
				for _, tp := range tps {
					set(tp, kerr.RequestTimedOut.Code) // tried again
				}
				continue
			}
			wg.Go(func() {
				for tp, code := range sendMarkers(ctx, cl, leader, m, tps) {
					set(tp, code)
				}
			})
		}
	}
	wg.Wait()
	for tp, code := range codes {
		judge(tp, code)
	}
	return left, stale
}

// sendMarkers sends WriteTxnMarkers for m's partitions tps to leader and
// returns each partition's code (REQUEST_TIMED_OUT, tried again, when the
// request failed or the answer left it out).
func sendMarkers(ctx context.Context, cl *kgo.Client, leader int32, m txn.Marker, tps []txn.TopicPartition) map[txn.TopicPartition]int16 {
	codes := make(map[txn.TopicPartition]int16, len(tps))
	for _, tp := range tps {
		codes[tp] = kerr.RequestTimedOut.Code
	}
	resp, err := cl.Broker(int(leader)).Request(ctx, markersRequest(m, tps))
	if err != nil {
		return codes
	}
	for _, rm := range resp.(*kmsg.WriteTxnMarkersResponse).Markers {
		for _, rt := range rm.Topics {
			for _, rp := range rt.Partitions {
				tp := txn.TopicPartition{Topic: rt.Topic, Partition: rp.Partition}
				if _, asked := codes[tp]; asked {
					codes[tp] = rp.ErrorCode
				}
			}
		}
	}
	return codes
}

func marker(m txn.Marker) partition.Marker {
	return partition.Marker{ProducerID: m.ProducerID, ProducerEpoch: m.ProducerEpoch, CoordinatorEpoch: m.CoordinatorEpoch, Commit: m.Commit}
}

// markersRequest is the WriteTxnMarkers request (v1) that writes m to parts.
func markersRequest(m txn.Marker, parts []txn.TopicPartition) *kmsg.WriteTxnMarkersRequest {
	req := kmsg.NewPtrWriteTxnMarkersRequest()
	req.Version = 1
	rm := kmsg.NewWriteTxnMarkersRequestMarker()
	rm.ProducerID, rm.ProducerEpoch, rm.Committed, rm.CoordinatorEpoch = m.ProducerID, m.ProducerEpoch, m.Commit, m.CoordinatorEpoch
	for _, tp := range parts {
		if n := len(rm.Topics); n == 0 || rm.Topics[n-1].Topic != tp.Topic {
			rt := kmsg.NewWriteTxnMarkersRequestMarkerTopic()
			rt.Topic = tp.Topic
			rm.Topics = append(rm.Topics, rt)
		}
		rt := &rm.Topics[len(rm.Topics)-1]
		rt.Partitions = append(rt.Partitions, tp.Partition)
	}
	req.Markers = append(req.Markers, rm)
	return req
}

// writeMarker appends marker m to a partition this node leads, waits until
// it is durable and on the ISR (as Kafka appends markers with acks=all),
// and for a __consumer_offsets partition then completes the producer's
// transactional offset commits in the group coordinator.
func (s *Server) writeMarker(ctx context.Context, topic string, part int32, m partition.Marker) error {
	p := s.partition(topic, part)
	if p == nil {
		if t := s.meta.Image().Topic(topic); t != nil && part >= 0 && int(part) < len(t.Partitions) {
			return kafkaErr(kerr.NotLeaderForPartition, "this node does not host %s-%d", topic, part)
		}
		return kafkaErr(kerr.UnknownTopicOrPartition, "%s-%d does not exist", topic, part)
	}
	off, err := p.AppendMarker(m)
	if err != nil {
		return err
	}
	if err := p.Commit(); err != nil {
		return err
	}
	if err := p.WaitReplicated(ctx, off+1); err != nil {
		return err
	}
	s.txnMetrics.markers.WithLabelValues(markerKind(m.Commit)).Inc()
	if topic == offsetsTopic {
		if err := s.groups.completeTxn(part, m.ProducerID, m.Commit); err != nil && !errors.Is(err, kerr.NotCoordinator) {
			// The marker is written: a restart or a new coordinator
			// loads the partition and applies it from the log.
			s.logger.Warn("completing transactional offset commits failed", "partition", part, "producer_id", m.ProducerID, "err", err)
		}
	}
	return nil
}

func markerKind(commit bool) string {
	if commit {
		return "commit"
	}
	return "abort"
}
