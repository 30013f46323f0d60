package server

// DescribeTransactions: version 0. Each transactional id is described by
// this node if it coordinates it (NOT_COORDINATOR otherwise, as Kafka:
// admin clients ask each id's coordinator); an id it does not know is
// TRANSACTIONAL_ID_NOT_FOUND.

import (
	"github.com/twmb/franz-go/pkg/kmsg"
)

func handleDescribeTransactions(c *conn, r *request) kmsg.Response {
	req := r.kreq.(*kmsg.DescribeTransactionsRequest)
	resp := req.ResponseKind().(*kmsg.DescribeTransactionsResponse)
	for _, id := range req.TransactionalIDs {
		sh, err := c.s.txns.shard(id)
		if err != nil {
			st := kmsg.NewDescribeTransactionsResponseTransactionState()
			st.TransactionalID, st.ErrorCode = id, coordinatorCode(err)
			st.ProducerID, st.ProducerEpoch = -1, -1
			resp.TransactionStates = append(resp.TransactionStates, st)
			continue
		}
		sh.mu.Lock()
		st := sh.mu.core.Describe(id)
		sh.mu.Unlock()
		resp.TransactionStates = append(resp.TransactionStates, st)
	}
	return resp
}
