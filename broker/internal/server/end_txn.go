package server

// EndTxn: versions 0-4 (v5 belongs to KIP-890 part 2, transaction version
// 2, which Runnel does not advertise). A commit or abort of an Ongoing
// transaction is answered once its PrepareCommit/PrepareAbort record is
// durable on the ISR; the markers are written after (txn_markers.go). Errors
// as txn.Coordinator.EndTxn; NOT_COORDINATOR when this node does not
// coordinate the transactional id.

import (
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/runnel-io/runnel/broker/internal/txn"
)

func handleEndTxn(c *conn, r *request) kmsg.Response {
	req := r.kreq.(*kmsg.EndTxnRequest)
	fail := func(code int16) kmsg.Response {
		resp := req.ResponseKind().(*kmsg.EndTxnResponse)
		resp.ErrorCode, resp.ProducerID, resp.ProducerEpoch = code, -1, -1
		return resp
	}
	now := c.s.now()
	return c.s.txns.call(c, r, req.TransactionalID, fail, func(core *txn.Coordinator, w txn.Waiter) txn.Output {
		return core.EndTxn(now, w, req)
	})
}
