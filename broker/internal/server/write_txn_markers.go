package server

// WriteTxnMarkers: version 1 (Kafka 4.0's floor). Sent by a transaction
// coordinator to the leaders of its transaction's partitions: each marker
// is appended to each partition as a control batch and answered once it is
// durable on the ISR (Kafka appends markers with acks=all). A marker on a
// __consumer_offsets partition then completes the producer's transactional
// offset commits. Per partition: UNKNOWN_TOPIC_OR_PARTITION,
// NOT_LEADER_OR_FOLLOWER, INVALID_PRODUCER_EPOCH for an epoch older than
// the partition's producer has, TRANSACTION_COORDINATOR_FENCED for an older
// coordinator epoch. A request that does not come from a node of the
// cluster (interbroker.go) gets CLUSTER_AUTHORIZATION_FAILED everywhere and
// writes nothing.

import (
	"context"
	"sync"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/runnel-io/runnel/broker/internal/partition"
)

func handleWriteTxnMarkers(c *conn, r *request) kmsg.Response {
	req := r.kreq.(*kmsg.WriteTxnMarkersRequest)
	resp := req.ResponseKind().(*kmsg.WriteTxnMarkersResponse)
	for _, rm := range req.Markers {
		sm := kmsg.NewWriteTxnMarkersResponseMarker()
		sm.ProducerID = rm.ProducerID
		for _, rt := range rm.Topics {
			st := kmsg.NewWriteTxnMarkersResponseMarkerTopic()
			st.Topic = rt.Topic
			for _, p := range rt.Partitions {
				sp := kmsg.NewWriteTxnMarkersResponseMarkerTopicPartition()
				sp.Partition = p
				st.Partitions = append(st.Partitions, sp)
			}
			sm.Topics = append(sm.Topics, st)
		}
		resp.Markers = append(resp.Markers, sm)
	}
	if !c.s.fromBroker(r) {
		for i := range resp.Markers {
			for j := range resp.Markers[i].Topics {
				for k := range resp.Markers[i].Topics[j].Partitions {
					resp.Markers[i].Topics[j].Partitions[k].ErrorCode = kerr.ClusterAuthorizationFailed.Code
				}
			}
		}
		c.s.logger.Warn("refusing WriteTxnMarkers from a client: only brokers write markers", "client_id", deref(r.hdr.ClientID), "remote", c.remote)
		return resp
	}
	r.later = func() kmsg.Response {
		ctx, cancel := context.WithTimeout(c.s.bg, markerTimeout)
		defer cancel()
		var wg sync.WaitGroup
		for i, rm := range req.Markers {
			m := partition.Marker{ProducerID: rm.ProducerID, ProducerEpoch: rm.ProducerEpoch, CoordinatorEpoch: rm.CoordinatorEpoch, Commit: rm.Committed}
			for j, rt := range rm.Topics {
				for k, p := range rt.Partitions {
					sp := &resp.Markers[i].Topics[j].Partitions[k]
					wg.Go(func() {
						sp.ErrorCode = c.s.metrics.code(kmsg.WriteTxnMarkers, c.s.writeMarker(ctx, rt.Topic, p, m))
					})
				}
			}
		}
		wg.Wait()
		return resp
	}
	return nil
}
