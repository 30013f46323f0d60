package server

// OffsetCommit: versions 2-9 (2 is Kafka 4.0's floor). Leader epochs from
// v6, group.instance.id from v7. A group the coordinator does not know may
// commit with generation -1 (a simple group). Commits of unknown topics or
// partitions get UNKNOWN_TOPIC_OR_PARTITION; metadata over
// offset.metadata.max.bytes gets OFFSET_METADATA_TOO_LARGE. The records
// of one request are written as one batch and answered after their fsync;
// only then do the offsets become visible (OffsetFetch, describe, lag). If
// the write fails every partition gets the error, normalized as Kafka
// does (INVALID_COMMIT_OFFSET_SIZE for a batch over the offsets topic's
// max.message.bytes, NOT_COORDINATOR for a storage error), and the
// previous offsets stay. The v2-v4 retention time is ignored
// (offsets.retention.minutes applies), as Kafka 4.0 does.

import (
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/runnel-io/runnel/broker/internal/group"
)

func handleOffsetCommit(c *conn, r *request) kmsg.Response {
	req := r.kreq.(*kmsg.OffsetCommitRequest)
	sh, err := c.s.groups.shard(req.Group)
	if err != nil {
		return commitError(req, shardErrorCode(err))
	}
	now := c.s.now()
	exists := c.s.topicExists()
	var resp *kmsg.OffsetCommitResponse
	p, _ := sh.step(0, func(core *group.Coordinator) group.Output {
		var out group.Output
		resp, out = core.CommitOffsets(now, req, exists)
		return out
	})
	return answerWritten(r, p, func() kmsg.Response {
		n := 0
		for _, t := range resp.Topics {
			for _, p := range t.Partitions {
				if p.ErrorCode == 0 {
					n++
				}
			}
		}
		c.s.metrics.groupCommits.Add(float64(n))
		return resp
	}, func(err error) kmsg.Response {
		// As Kafka's GroupCoordinatorService: the whole request fails.
		return commitError(req, c.s.metrics.code(kmsg.OffsetCommit, groupWriteError(err, true)))
	})
}

// topicExists reports whether a topic partition exists in the current
// metadata image, for the group core's commits.
func (s *Server) topicExists() group.TopicExists {
	im := s.meta.Image()
	return func(topic string, part int32) bool {
		t := im.Topic(topic)
		return t != nil && part >= 0 && int(part) < len(t.Partitions)
	}
}

func commitError(req *kmsg.OffsetCommitRequest, code int16) *kmsg.OffsetCommitResponse {
	resp := req.ResponseKind().(*kmsg.OffsetCommitResponse)
	for _, rt := range req.Topics {
		st := kmsg.NewOffsetCommitResponseTopic()
		st.Topic = rt.Topic
		for _, rp := range rt.Partitions {
			sp := kmsg.NewOffsetCommitResponseTopicPartition()
			sp.Partition, sp.ErrorCode = rp.Partition, code
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
	}
	return resp
}
