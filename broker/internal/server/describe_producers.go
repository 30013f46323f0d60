package server

// DescribeProducers: version 0 (KIP-664). For each requested partition
// this node leads, the active producers its log knows: producer id and
// epoch, last sequence (-1 when none), last timestamp, the coordinator
// epoch of its last marker (-1 when none) and the first offset of its open
// transaction (-1 when none). A partition this node hosts but does not lead
// is NOT_LEADER_OR_FOLLOWER, an unknown one UNKNOWN_TOPIC_OR_PARTITION.

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func handleDescribeProducers(c *conn, r *request) kmsg.Response {
	req := r.kreq.(*kmsg.DescribeProducersRequest)
	resp := req.ResponseKind().(*kmsg.DescribeProducersResponse)
	for _, rt := range req.Topics {
		st := kmsg.NewDescribeProducersResponseTopic()
		st.Topic = rt.Topic
		for _, part := range rt.Partitions {
			sp := kmsg.NewDescribeProducersResponseTopicPartition()
			sp.Partition = part
			switch p := c.s.partition(rt.Topic, part); {
			case p == nil:
				sp.ErrorCode = kerr.UnknownTopicOrPartition.Code
			case !leads(p):
				sp.ErrorCode = kerr.NotLeaderForPartition.Code
			default:
				for _, ps := range p.Producers() {
					ap := kmsg.NewDescribeProducersResponseTopicPartitionActiveProducer()
					ap.ProducerID, ap.ProducerEpoch = ps.ProducerID, int32(ps.ProducerEpoch)
					ap.LastSequence, ap.LastTimestamp = ps.LastSequence, ps.LastTimestamp
					ap.CoordinatorEpoch, ap.CurrentTxnStartOffset = ps.CoordinatorEpoch, ps.CurrentTxnStartOffset
					sp.ActiveProducers = append(sp.ActiveProducers, ap)
				}
			}
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
	}
	return resp
}
