package server

// TxnOffsetCommit: versions 0-4 (Kafka 4.0 has 0-5; v5 tells the broker
// the client expects it to verify the transaction itself, KIP-890 part 2,
// which Runnel does not yet). Leader epochs from v2; group generation,
// member id and group.instance.id from v3, checked against a known group
// when any is given (ILLEGAL_GENERATION, UNKNOWN_MEMBER_ID,
// FENCED_INSTANCE_ID); a group the coordinator does not know may commit
// with generation -1. Commits of unknown topics or partitions get
// UNKNOWN_TOPIC_OR_PARTITION; metadata over offset.metadata.max.bytes gets
// OFFSET_METADATA_TOO_LARGE. The records of one request are written as one
// transactional batch of the request's producer id and epoch to the
// group's __consumer_offsets partition, and answered after their fsync;
// the offsets stay pending under the producer id (invisible to OffsetFetch,
// describe, lag; UNSTABLE_OFFSET_COMMIT to a require_stable OffsetFetch)
// until the producer's commit or abort marker in that partition
// (groupCoordinator.completeTxn). If the write fails every partition gets
// the error, normalized as for OffsetCommit. Not yet: checking that the
// group was added to the transaction (AddOffsetsToTxn) with the
// transaction coordinator, and refusing an older producer epoch
// (INVALID_PRODUCER_EPOCH) before the write.

import (
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/runnel-io/runnel/broker/internal/group"
)

func handleTxnOffsetCommit(c *conn, r *request) kmsg.Response {
	req := r.kreq.(*kmsg.TxnOffsetCommitRequest)
	sh, err := c.s.groups.shard(req.Group)
	if err != nil {
		return txnCommitError(req, shardErrorCode(err))
	}
	now := c.s.now()
	exists := c.s.topicExists()
	var resp *kmsg.TxnOffsetCommitResponse
	p, _ := sh.step(0, func(core *group.Coordinator) group.Output {
		var out group.Output
		resp, out = core.TxnCommitOffsets(now, req, exists)
		return out
	})
	return answerWritten(r, p, func() kmsg.Response { return resp }, func(err error) kmsg.Response {
		return txnCommitError(req, c.s.metrics.code(kmsg.TxnOffsetCommit, groupWriteError(err, true)))
	})
}

// txnCommitError answers every partition of req with code.
func txnCommitError(req *kmsg.TxnOffsetCommitRequest, code int16) *kmsg.TxnOffsetCommitResponse {
	resp := req.ResponseKind().(*kmsg.TxnOffsetCommitResponse)
	for _, rt := range req.Topics {
		st := kmsg.NewTxnOffsetCommitResponseTopic()
		st.Topic = rt.Topic
		for _, rp := range rt.Partitions {
			sp := kmsg.NewTxnOffsetCommitResponseTopicPartition()
			sp.Partition, sp.ErrorCode = rp.Partition, code
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
	}
	return resp
}
