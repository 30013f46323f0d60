package server

// OffsetForLeaderEpoch: versions 2-4 (2 is Kafka 4.0's floor). For each
// partition, the end offset of the largest leader epoch at or below the
// requested one (KIP-101/279), which clients use to detect truncation
// (KIP-320).

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func handleOffsetForLeaderEpoch(c *conn, r *request) kmsg.Response {
	req := r.kreq.(*kmsg.OffsetForLeaderEpochRequest)
	resp := req.ResponseKind().(*kmsg.OffsetForLeaderEpochResponse)
	for _, rt := range req.Topics {
		st := kmsg.NewOffsetForLeaderEpochResponseTopic()
		st.Topic = rt.Topic
		for _, rp := range rt.Partitions {
			sp := kmsg.NewOffsetForLeaderEpochResponseTopicPartition()
			sp.Partition = rp.Partition
			sp.LeaderEpoch, sp.EndOffset = -1, -1
			p := c.s.partition(rt.Topic, rp.Partition)
			switch {
			case p == nil:
				sp.ErrorCode = kerr.UnknownTopicOrPartition.Code
			case checkLeaderEpoch(p, rp.CurrentLeaderEpoch) != 0:
				sp.ErrorCode = checkLeaderEpoch(p, rp.CurrentLeaderEpoch)
			default:
				sp.LeaderEpoch, sp.EndOffset = p.Log().Epochs().EndOffsetFor(rp.LeaderEpoch)
			}
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
	}
	return resp
}
