package server

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/runnel-io/runnel/broker/internal/txn"
)

// verifyTxn asks transactional id's coordinator whether topic-part is in
// the ongoing transaction of producer pid at epoch (KIP-890 part 1: an
// AddPartitionsToTxn v4 with VerifyOnly), as Kafka does before it writes
// a transactional offset commit. It returns 0 when it is, the
// coordinator's error (INVALID_TXN_STATE when the partition was never
// added, PRODUCER_FENCED, INVALID_PRODUCER_ID_MAPPING ...) when not, and
// a retriable error when the coordinator cannot be asked.
func (s *Server) verifyTxn(ctx context.Context, id string, pid int64, epoch int16, topic string, part int32) int16 {
	req := kmsg.NewPtrAddPartitionsToTxnRequest()
	req.Version = 4
	rt := kmsg.NewAddPartitionsToTxnRequestTransaction()
	rt.TransactionalID, rt.ProducerID, rt.ProducerEpoch, rt.VerifyOnly = id, pid, epoch, true
	tt := kmsg.NewAddPartitionsToTxnRequestTransactionTopic()
	tt.Topic, tt.Partitions = topic, []int32{part}
	rt.Topics = append(rt.Topics, tt)
	req.Transactions = append(req.Transactions, rt)

	var resp *kmsg.AddPartitionsToTxnResponse
	coord, err := s.txns.coordinator(ctx, id)
	switch {
	case err != nil:
		return coordinatorCode(err)
	case coord.ID == s.cfg.NodeID:
		sh, err := s.txns.shard(id)
		if err != nil {
			return coordinatorCode(err)
		}
		w := s.txns.newWaiter()
		p, ch := sh.step(w, func(core *txn.Coordinator) txn.Output { return core.AddPartitions(s.now(), w, req, nil) })
		p.finish() // a verification writes nothing: the answer is ready
		select {
		case r := <-ch:
			resp = r.(*kmsg.AddPartitionsToTxnResponse)
		default:
			sh.forget(w)
			return kerr.CoordinatorNotAvailable.Code
		}
	default:
		cl, err := s.fetchers.client()
		if err != nil {
			return kerr.CoordinatorNotAvailable.Code
		}
		r, err := cl.Broker(int(coord.ID)).Request(ctx, req)
		if err != nil {
			return kerr.CoordinatorNotAvailable.Code
		}
		resp = r.(*kmsg.AddPartitionsToTxnResponse)
	}
	if resp.ErrorCode != 0 {
		return resp.ErrorCode
	}
	for _, t := range resp.Transactions {
		for _, tt := range t.Topics {
			for _, p := range tt.Partitions {
				return p.ErrorCode
			}
		}
	}
	return kerr.UnknownServerError.Code
}
