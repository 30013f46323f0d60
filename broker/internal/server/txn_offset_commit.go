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
// the error, normalized as for OffsetCommit. Before anything is written the
// transaction's coordinator verifies that the group's partition is in the
// producer's transaction (txn_verify.go, KIP-890 part 1): INVALID_TXN_STATE
// for a group the transaction did not add (AddOffsetsToTxn), PRODUCER_FENCED
// (INVALID_PRODUCER_EPOCH before v3) for a fenced epoch.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/runnel-io/runnel/broker/internal/group"
)

func handleTxnOffsetCommit(c *conn, r *request) kmsg.Response {
	req := r.kreq.(*kmsg.TxnOffsetCommitRequest)
	sh, err := c.s.groups.shard(req.Group)
	if err != nil {
		return txnCommitError(req, shardErrorCode(err))
	}
	r.later = func() kmsg.Response {
		// As Kafka (KIP-890 part 1): the transaction's coordinator must
		// have the group's partition in the producer's transaction.
		ctx, cancel := context.WithTimeout(c.s.bg, markerTimeout)
		code := c.s.verifyTxn(ctx, req.TransactionalID, req.ProducerID, req.ProducerEpoch, offsetsTopic, sh.part.Index)
		cancel()
		if code != 0 {
			return txnCommitError(req, c.s.metrics.code(kmsg.TxnOffsetCommit, kafkaErr(verifyError(code, req.Version), "transaction verification failed")))
		}
		now := c.s.now()
		exists := c.s.topicExists()
		var resp *kmsg.TxnOffsetCommitResponse
		p, _ := sh.step(0, func(core *group.Coordinator) group.Output {
			var out group.Output
			resp, out = core.TxnCommitOffsets(now, req, exists)
			return out
		})
		if err := p.finish(); err != nil && len(p.out.Records) > 0 {
			return txnCommitError(req, c.s.metrics.code(kmsg.TxnOffsetCommit, groupWriteError(err, true)))
		}
		return resp
	}
	return nil
}

// verifyError is what a TxnOffsetCommit of version v answers when the
// transaction's coordinator did not verify it with code: a fenced producer
// is INVALID_PRODUCER_EPOCH to clients before PRODUCER_FENCED existed
// (TxnOffsetCommit v3, as Kafka maps it), and a coordinator that could
// not be reached is COORDINATOR_NOT_AVAILABLE, which clients retry.
func verifyError(code int16, v int16) *kerr.Error {
	e, _ := kerr.ErrorForCode(code).(*kerr.Error)
	switch {
	case e == nil:
		return kerr.UnknownServerError
	case e == kerr.ProducerFenced && v < 3:
		return kerr.InvalidProducerEpoch
	case e == kerr.NotCoordinator, e == kerr.CoordinatorLoadInProgress:
		return kerr.CoordinatorNotAvailable
	}
	return e
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
