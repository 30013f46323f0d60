package txn

import (
	"regexp"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Describe returns a transactional id as DescribeTransactions shows it:
// its current (durable) state, not one being written.
// TRANSACTIONAL_ID_NOT_FOUND for an id this coordinator does not hold.
func (c *Coordinator) Describe(id string) kmsg.DescribeTransactionsResponseTransactionState {
	d := kmsg.NewDescribeTransactionsResponseTransactionState()
	d.TransactionalID = id
	t := c.txns[id]
	if t == nil || !t.visible() {
		d.ErrorCode = kerr.TransactionalIDNotFound.Code
		return d
	}
	d.State = t.state.String()
	d.TimeoutMillis = int32(t.timeout.Milliseconds())
	d.StartTimestamp = t.start
	d.ProducerID, d.ProducerEpoch = t.producerID, t.epoch
	for _, tp := range t.partitions {
		if n := len(d.Topics); n == 0 || d.Topics[n-1].Topic != tp.Topic {
			d.Topics = append(d.Topics, kmsg.DescribeTransactionsResponseTransactionStateTopic{Topic: tp.Topic})
		}
		last := &d.Topics[len(d.Topics)-1]
		last.Partitions = append(last.Partitions, tp.Partition)
	}
	return d
}

// List answers ListTransactions (v0-v2) for this partition's ids, in id
// order, as Kafka's listTransactionStates: filtered by state names
// (unknown names are returned in UnknownStateFilters), by producer ids,
// by duration (v1: only transactions started more than
// DurationFilterMillis before now) and by a transactional id regular
// expression (v2; RE2 syntax, INVALID_REGULAR_EXPRESSION if it does not
// compile).
func (c *Coordinator) List(now time.Time, req *kmsg.ListTransactionsRequest) *kmsg.ListTransactionsResponse {
	resp := kmsg.NewPtrListTransactionsResponse()
	resp.Version = req.Version
	var states []State
	for _, name := range req.StateFilters {
		if s, ok := ParseState(name); ok {
			states = append(states, s)
		} else {
			resp.UnknownStateFilters = append(resp.UnknownStateFilters, name)
		}
	}
	var re *regexp.Regexp
	if req.Version >= 2 && req.TransactionalIDPattern != nil && *req.TransactionalIDPattern != "" {
		var err error
		if re, err = regexp.Compile(*req.TransactionalIDPattern); err != nil {
			resp.ErrorCode = kerr.InvalidRegularExpression.Code
			return resp
		}
	}
	duration := int64(-1)
	if req.Version >= 1 {
		duration = req.DurationFilterMillis
	}
	for _, t := range c.sortedTxns() {
		switch {
		case !t.visible(), t.state == Dead,
			len(req.ProducerIDFilters) > 0 && !slices.Contains(req.ProducerIDFilters, t.producerID),
			len(req.StateFilters) > 0 && !slices.Contains(states, t.state),
			duration >= 0 && now.UnixMilli()-t.start <= duration,
			re != nil && !re.MatchString(t.id):
			continue
		}
		s := kmsg.NewListTransactionsResponseTransactionState()
		s.TransactionalID, s.ProducerID, s.TransactionState = t.id, t.producerID, t.state.String()
		resp.TransactionStates = append(resp.TransactionStates, s)
	}
	return resp
}
