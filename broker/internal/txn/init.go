package txn

import (
	"math"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// InitProducerID handles InitProducerId (v0-v5), as Kafka's
// TransactionCoordinator.handleInitProducerId with KIP-360 and KIP-588:
//
//   - without a transactional id, a fresh producer id with epoch 0 (an
//     idempotent producer; nothing is written);
//   - a new transactional id gets a producer id from Config.NewProducerID
//     and epoch 0; a known one in Empty, CompleteCommit or CompleteAbort
//     gets its epoch bumped, or, its epoch exhausted, a new producer id with
//     epoch 0; a request that names its current producer id and epoch (v3+)
//     is checked against them: a retry of the last bump gets the same
//     answer again, an older epoch is PRODUCER_FENCED;
//   - over an Ongoing transaction, the transaction is aborted with a bumped
//     epoch (fencing the old producer) and the answer, once its
//     PrepareAbort record is durable, is CONCURRENT_TRANSACTIONS: the
//     client retries and gets the next epoch when the abort completes;
//   - CONCURRENT_TRANSACTIONS while a commit or abort completes or a write
//     of the id is in flight; INVALID_TRANSACTION_TIMEOUT for a timeout
//     not in (0, transaction.max.timeout.ms].
//
// The answer comes once the id's record is durable (in the Output of
// Written), or at once for an error.
func (c *Coordinator) InitProducerID(now time.Time, w Waiter, req *kmsg.InitProducerIDRequest) Output {
	var out Output
	resp := kmsg.NewPtrInitProducerIDResponse()
	resp.Version, resp.ProducerID, resp.ProducerEpoch = req.Version, -1, -1
	fail := func(e *kerr.Error) Output {
		resp.ErrorCode = fencedCode(e, req.Version, 4)
		out.reply(w, resp)
		return c.seal(now, &out)
	}
	if req.TransactionalID == nil {
		pid, err := c.newProducerID()
		if err != nil {
			return fail(err)
		}
		resp.ProducerID, resp.ProducerEpoch = pid, 0
		out.reply(w, resp)
		return out
	}
	id := *req.TransactionalID
	timeout := time.Duration(req.TransactionTimeoutMillis) * time.Millisecond
	hasExpected := req.Version >= 3 && req.ProducerID >= 0
	switch {
	case id == "":
		return fail(kerr.InvalidRequest)
	case req.Version >= 3 && (req.ProducerID >= 0) != (req.ProducerEpoch >= 0):
		return fail(kerr.InvalidRequest)
	case timeout <= 0 || timeout > c.cfg.MaxTimeout:
		return fail(kerr.InvalidTransactionTimeout)
	}
	t := c.txns[id]
	if t == nil {
		pid, err := c.newProducerID()
		if err != nil {
			return fail(err)
		}
		t = &txn{id: id, meta: meta{producerID: pid, lastProducerID: -1, epoch: -1, lastEpoch: -1,
			timeout: timeout, state: Empty, start: -1, updated: now.UnixMilli()}}
		c.txns[id] = t
	}
	if t.pending != nil {
		return fail(kerr.ConcurrentTransactions)
	}
	// KIP-360: a request naming its producer is fenced unless the id was
	// just created, names the current producer id (its epoch is checked
	// below), or names the previous one with an exhausted epoch (a retry
	// of a producer id rotation).
	if hasExpected && t.epoch != -1 && req.ProducerID != t.producerID &&
		!(req.ProducerID == t.lastProducerID && exhausted(req.ProducerEpoch)) {
		return fail(kerr.ProducerFenced)
	}
	switch t.state {
	case PrepareCommit, PrepareAbort:
		return fail(kerr.ConcurrentTransactions)
	case Ongoing:
		c.fenceAbort(now, t, &out)
		c.after(func(failure *kerr.Error, out *Output) {
			if failure == nil {
				failure = kerr.ConcurrentTransactions
			}
			resp.ErrorCode = fencedCode(failure, req.Version, 4)
			out.reply(w, resp)
		})
		return c.seal(now, &out)
	case Empty, CompleteCommit, CompleteAbort:
	default:
		return fail(kerr.UnknownServerError)
	}
	to := t.meta.clone()
	if exhausted(t.epoch) && (!hasExpected || req.ProducerEpoch == t.epoch) {
		pid, err := c.newProducerID()
		if err != nil {
			return fail(err)
		}
		to.lastProducerID, to.producerID, to.epoch, to.lastEpoch = t.producerID, pid, 0, -1
		if hasExpected {
			to.lastEpoch = t.epoch
		}
	} else {
		switch {
		case !hasExpected:
			to.epoch, to.lastEpoch = t.epoch+1, -1
		case t.epoch == -1 || req.ProducerEpoch == t.epoch:
			to.epoch, to.lastEpoch = t.epoch+1, t.epoch
		case req.ProducerEpoch == t.lastEpoch:
			// A retry of the last bump: the same epoch again.
		default:
			return fail(kerr.ProducerFenced)
		}
	}
	to.state, to.timeout, to.partitions, to.start, to.updated = Empty, timeout, nil, -1, now.UnixMilli()
	c.begin(&out, t, to)
	c.after(func(failure *kerr.Error, out *Output) {
		if failure == nil {
			resp.ProducerID, resp.ProducerEpoch = to.producerID, to.epoch
		}
		resp.ErrorCode = fencedCode(failure, req.Version, 4)
		out.reply(w, resp)
	})
	return c.seal(now, &out)
}

// fenceAbort stages the abort of t's Ongoing transaction with a bumped
// epoch (Kafka's prepareFenceProducerEpoch, then endTransaction with
// isFromClient false): the old producer is fenced and the markers carry
// the new epoch. Kafka bumps the epoch in memory before the write and
// keeps hasFailedEpochFence so that a failed fence is not bumped twice;
// here the bump is pending until durable, so a failed fence leaves the
// epoch as it was (the old producer is not fenced yet) and the next try
// bumps to the same epoch. An epoch that cannot grow (never the case:
// epochs are rotated at InitProducerId before they get there) aborts as
// it is.
func (c *Coordinator) fenceAbort(now time.Time, t *txn, out *Output) {
	to := t.meta.clone()
	if t.epoch < math.MaxInt16 {
		to.epoch++
	}
	to.lastEpoch, to.state, to.updated = -1, PrepareAbort, now.UnixMilli()
	c.begin(out, t, to)
}
