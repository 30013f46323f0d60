package server

// AddPartitionsToTxn: versions 0-4. Before v4 a client adds partitions to
// its transaction; v4 batches transactions and may only verify (KIP-890
// part 1, sent by partition leaders): each transaction is answered by its
// coordinator, NOT_COORDINATOR for the transactional ids this node does not
// coordinate. A partition of an unknown topic is UNKNOWN_TOPIC_OR_PARTITION
// and the transaction's others OPERATION_NOT_ATTEMPTED; other errors as
// txn.Coordinator.AddPartitions. A transaction that changes is answered
// once its record is durable on the ISR.

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/runnel-io/runnel/broker/internal/txn"
)

func handleAddPartitionsToTxn(c *conn, r *request) kmsg.Response {
	req := r.kreq.(*kmsg.AddPartitionsToTxnRequest)
	now := c.s.now()
	im := c.s.meta.Image()
	exists := func(topic string, part int32) bool {
		t := im.Topic(topic)
		return t != nil && part >= 0 && int(part) < len(t.Partitions)
	}
	if req.Version < 4 {
		fail := func(code int16) kmsg.Response { return addPartitionsError(req, code) }
		return c.s.txns.call(c, r, req.TransactionalID, fail, func(core *txn.Coordinator, w txn.Waiter) txn.Output {
			return core.AddPartitions(now, w, req, exists)
		})
	}
	// One sub-request per coordinating shard, answered together.
	bySub := map[*txnShard]*kmsg.AddPartitionsToTxnRequest{}
	resp := req.ResponseKind().(*kmsg.AddPartitionsToTxnResponse)
	for _, t := range req.Transactions {
		sh, err := c.s.txns.shard(t.TransactionalID)
		if err != nil {
			one := *req
			one.Transactions = []kmsg.AddPartitionsToTxnRequestTransaction{t}
			resp.Transactions = append(resp.Transactions, addPartitionsError(&one, coordinatorCode(err)).Transactions...)
			continue
		}
		sub := bySub[sh]
		if sub == nil {
			cp := *req
			cp.Transactions = nil
			sub = &cp
			bySub[sh] = sub
		}
		sub.Transactions = append(sub.Transactions, t)
	}
	type wait struct {
		sh *txnShard
		w  txn.Waiter
		p  txnPending
		ch chan kmsg.Response
	}
	var waits []wait
	for sh, sub := range bySub {
		w := c.s.txns.newWaiter()
		p, ch := sh.step(w, func(core *txn.Coordinator) txn.Output { return core.AddPartitions(now, w, sub, exists) })
		waits = append(waits, wait{sh, w, p, ch})
	}
	r.later = func() kmsg.Response {
		for _, wt := range waits {
			wt.p.finish()
		}
		for _, wt := range waits {
			select {
			case got := <-wt.ch:
				resp.Transactions = append(resp.Transactions, got.(*kmsg.AddPartitionsToTxnResponse).Transactions...)
				continue
			case <-c.closing():
			case <-wt.sh.dropped:
			}
			wt.sh.forget(wt.w)
			resp.Transactions = append(resp.Transactions, addPartitionsError(bySub[wt.sh], kerr.NotCoordinator.Code).Transactions...)
		}
		return resp
	}
	return nil
}

// addPartitionsError answers every partition of req with code.
func addPartitionsError(req *kmsg.AddPartitionsToTxnRequest, code int16) *kmsg.AddPartitionsToTxnResponse {
	resp := req.ResponseKind().(*kmsg.AddPartitionsToTxnResponse)
	if req.Version < 4 {
		for _, rt := range req.Topics {
			st := kmsg.NewAddPartitionsToTxnResponseTopic()
			st.Topic = rt.Topic
			for _, p := range rt.Partitions {
				sp := kmsg.NewAddPartitionsToTxnResponseTopicPartition()
				sp.Partition, sp.ErrorCode = p, code
				st.Partitions = append(st.Partitions, sp)
			}
			resp.Topics = append(resp.Topics, st)
		}
		return resp
	}
	for _, t := range req.Transactions {
		rt := kmsg.NewAddPartitionsToTxnResponseTransaction()
		rt.TransactionalID = t.TransactionalID
		for _, tt := range t.Topics {
			st := kmsg.NewAddPartitionsToTxnResponseTransactionTopic()
			st.Topic = tt.Topic
			for _, p := range tt.Partitions {
				sp := kmsg.NewAddPartitionsToTxnResponseTransactionTopicPartition()
				sp.Partition, sp.ErrorCode = p, code
				st.Partitions = append(st.Partitions, sp)
			}
			rt.Topics = append(rt.Topics, st)
		}
		resp.Transactions = append(resp.Transactions, rt)
	}
	return resp
}
