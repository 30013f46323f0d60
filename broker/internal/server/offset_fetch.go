package server

// OffsetFetch: versions 1-9 (1 is Kafka 4.0's floor); all of a group's
// offsets with null topics (v2+); require_stable (v7+): a partition with
// transactional offsets still pending (a TxnOffsetCommit whose marker has
// not come) answers UNSTABLE_OFFSET_COMMIT, as Kafka; without it, the
// committed offset; several groups per request from v8. The v9 member id and epoch concern KIP-848 groups
// and are ignored. A group the coordinator does not know has no offsets
// (-1), as in Kafka.

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/runnel-io/runnel/broker/internal/group"
)

func handleOffsetFetch(c *conn, r *request) kmsg.Response {
	req := r.kreq.(*kmsg.OffsetFetchRequest)
	resp := req.ResponseKind().(*kmsg.OffsetFetchResponse)
	if req.Version < 8 {
		topics, code := c.s.fetchOffsets(req.Group, req.Topics, req.RequireStable)
		resp.Topics, resp.ErrorCode = topics, code
		if code != 0 {
			resp.Topics = nil
		}
		return resp
	}
	for _, rg := range req.Groups {
		var topics []kmsg.OffsetFetchRequestTopic
		if rg.Topics != nil {
			topics = []kmsg.OffsetFetchRequestTopic{}
			for _, t := range rg.Topics {
				rt := kmsg.NewOffsetFetchRequestTopic()
				rt.Topic, rt.Partitions = t.Topic, t.Partitions
				topics = append(topics, rt)
			}
		}
		got, code := c.s.fetchOffsets(rg.Group, topics, req.RequireStable)
		sg := kmsg.NewOffsetFetchResponseGroup()
		sg.Group, sg.ErrorCode = rg.Group, code
		for _, t := range got {
			st := kmsg.NewOffsetFetchResponseGroupTopic()
			st.Topic = t.Topic
			for _, p := range t.Partitions {
				sp := kmsg.NewOffsetFetchResponseGroupTopicPartition()
				sp.Partition, sp.Offset, sp.LeaderEpoch, sp.Metadata, sp.ErrorCode = p.Partition, p.Offset, p.LeaderEpoch, p.Metadata, p.ErrorCode
				st.Partitions = append(st.Partitions, sp)
			}
			sg.Topics = append(sg.Topics, st)
		}
		resp.Groups = append(resp.Groups, sg)
	}
	return resp
}

// fetchOffsets reads one group's offsets; topics nil means all.
func (s *Server) fetchOffsets(groupID string, topics []kmsg.OffsetFetchRequestTopic, requireStable bool) ([]kmsg.OffsetFetchResponseTopic, int16) {
	if groupID == "" {
		return nil, kerr.InvalidGroupID.Code
	}
	sh, err := s.groups.peek(groupID)
	if err != nil {
		return nil, errCode(err)
	}
	var out []kmsg.OffsetFetchResponseTopic
	p, _ := sh.step(0, func(core *group.Coordinator) group.Output {
		out = core.FetchOffsets(groupID, topics, requireStable)
		return group.Output{}
	})
	p.finish()
	empty := ""
	for i := range out {
		for j := range out[i].Partitions {
			if out[i].Partitions[j].Metadata == nil {
				out[i].Partitions[j].Metadata = &empty
			}
		}
	}
	return out, 0
}
