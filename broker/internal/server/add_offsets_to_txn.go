package server

// AddOffsetsToTxn: versions 0-4. Adds the group's __consumer_offsets
// partition (created on first use, as FindCoordinator creates it) to the
// transaction, so that its TxnOffsetCommit records get the transaction's
// marker. Errors as txn.Coordinator.AddOffsets; NOT_COORDINATOR when this
// node does not coordinate the transactional id.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/runnel-io/runnel/broker/internal/txn"
)

func handleAddOffsetsToTxn(c *conn, r *request) kmsg.Response {
	req := r.kreq.(*kmsg.AddOffsetsToTxnRequest)
	fail := func(code int16) kmsg.Response {
		resp := req.ResponseKind().(*kmsg.AddOffsetsToTxnResponse)
		resp.ErrorCode = code
		return resp
	}
	t, err := c.s.groups.topic(context.Background())
	if err != nil {
		return fail(coordinatorCode(err))
	}
	part := int32(groupPartition(req.Group, len(t.Partitions)))
	now := c.s.now()
	return c.s.txns.call(c, r, req.TransactionalID, fail, func(core *txn.Coordinator, w txn.Waiter) txn.Output {
		return core.AddOffsets(now, w, req, part)
	})
}
