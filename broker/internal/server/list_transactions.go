package server

// ListTransactions: versions 0-2 (state and producer id filters; v1 the
// duration filter, KIP-994; v2 a transactional id pattern, a Java regular
// expression read as Go's RE2). Lists the transactional ids of the
// __transaction_state partitions this node leads, as Kafka lists a
// broker's own; admin clients ask every broker.

import (
	"context"
	"slices"
	"strings"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/runnel-io/runnel/broker/internal/txn"
)

func handleListTransactions(c *conn, r *request) kmsg.Response {
	req := r.kreq.(*kmsg.ListTransactionsRequest)
	now := c.s.now()
	// An empty core answers the filters (unknown states, a bad pattern);
	// the shards add their transactions.
	resp := txn.New(txn.Config{}).List(now, req)
	if resp.ErrorCode != 0 || c.s.meta.Image().Topic(txnStateTopic) == nil {
		return resp
	}
	shards, err := c.s.txns.shards(context.Background())
	if err != nil {
		resp.ErrorCode = coordinatorCode(err)
		return resp
	}
	for _, sh := range shards {
		sh.mu.Lock()
		part := sh.mu.core.List(now, req)
		sh.mu.Unlock()
		resp.TransactionStates = append(resp.TransactionStates, part.TransactionStates...)
	}
	slices.SortFunc(resp.TransactionStates, func(a, b kmsg.ListTransactionsResponseTransactionState) int {
		return strings.Compare(a.TransactionalID, b.TransactionalID)
	})
	return resp
}
