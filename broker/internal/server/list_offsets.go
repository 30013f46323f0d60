package server

// ListOffsets: versions 1-8 (1 is Kafka 4.0's floor). Timestamps -1
// (latest: the high watermark, or the last stable offset for
// read_committed), -2 (earliest), -3 (max timestamp, KIP-734, v7+), -4
// (earliest local, KIP-405, v8+; equals earliest without tiered storage),
// or a time: the first record at or after it. Lookups by time and max
// timestamp answer only offsets below the high watermark, or below the
// last stable offset for read_committed (isolation_level=1), as Kafka.

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/runnel-io/runnel/broker/internal/partition"
)

func handleListOffsets(c *conn, r *request) kmsg.Response {
	req := r.kreq.(*kmsg.ListOffsetsRequest)
	resp := req.ResponseKind().(*kmsg.ListOffsetsResponse)
	var buf []byte
	for _, rt := range req.Topics {
		st := kmsg.NewListOffsetsResponseTopic()
		st.Topic = rt.Topic
		for _, rp := range rt.Partitions {
			sp := kmsg.NewListOffsetsResponseTopicPartition()
			sp.Partition = rp.Partition
			sp.Offset, sp.Timestamp, sp.LeaderEpoch = -1, -1, -1
			p := c.s.partition(rt.Topic, rp.Partition)
			switch {
			case p == nil:
				sp.ErrorCode = kerr.UnknownTopicOrPartition.Code
			case checkLeaderEpoch(p, rp.CurrentLeaderEpoch) != 0:
				sp.ErrorCode = checkLeaderEpoch(p, rp.CurrentLeaderEpoch)
			case rp.Timestamp == partition.MaxTimestamp && req.Version < 7,
				rp.Timestamp == partition.EarliestLocal && req.Version < 8,
				rp.Timestamp < partition.EarliestLocal:
				sp.ErrorCode = kerr.UnsupportedVersion.Code
			default:
				off, ts, err := p.OffsetForTime(rp.Timestamp, req.IsolationLevel == 1, buf)
				if err != nil {
					sp.ErrorCode = c.s.metrics.code(kmsg.ListOffsets, err)
					break
				}
				o := p.Offsets()
				sp.Offset, sp.Timestamp = off, ts
				if off >= 0 {
					sp.LeaderEpoch = o.Epoch
				}
			}
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
	}
	return resp
}
