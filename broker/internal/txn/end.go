package txn

import (
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// EndTxn handles EndTxn (v0-v5) as Kafka's endTransaction with a client's
// request: an Ongoing transaction moves to PrepareCommit or PrepareAbort;
// once that record is durable the client hears NONE and the Output holds
// the Marker to write; [Coordinator.MarkersWritten] then completes it. A
// retry after completion of the same outcome is NONE, while the markers
// are being written CONCURRENT_TRANSACTIONS, and the other outcome (or
// ending an Empty transaction) INVALID_TXN_STATE. An unknown id or another
// producer id is INVALID_PRODUCER_ID_MAPPING, another epoch
// PRODUCER_FENCED (INVALID_PRODUCER_EPOCH before v2).
func (c *Coordinator) EndTxn(now time.Time, w Waiter, req *kmsg.EndTxnRequest) Output {
	var out Output
	resp := kmsg.NewPtrEndTxnResponse()
	resp.Version, resp.ProducerID, resp.ProducerEpoch = req.Version, req.ProducerID, req.ProducerEpoch
	answer := func(e *kerr.Error) Output {
		resp.ErrorCode = fencedCode(e, req.Version, 2)
		out.reply(w, resp)
		return c.seal(now, &out)
	}
	t := c.txns[req.TransactionalID]
	switch {
	case req.TransactionalID == "":
		return answer(kerr.InvalidRequest)
	case t == nil || !t.visible() || t.producerID != req.ProducerID:
		return answer(kerr.InvalidProducerIDMapping)
	case t.epoch != req.ProducerEpoch:
		return answer(kerr.ProducerFenced)
	case t.pending != nil:
		return answer(kerr.ConcurrentTransactions)
	}
	commit := req.Commit
	switch t.state {
	case Ongoing:
		to := t.meta.clone()
		to.state, to.updated = PrepareAbort, now.UnixMilli()
		if commit {
			to.state = PrepareCommit
		}
		c.begin(&out, t, to)
		c.after(func(failure *kerr.Error, out *Output) {
			resp.ErrorCode = fencedCode(failure, req.Version, 2)
			out.reply(w, resp)
		})
		return c.seal(now, &out)
	case CompleteCommit, CompleteAbort:
		if commit == (t.state == CompleteCommit) {
			return answer(nil)
		}
	case PrepareCommit, PrepareAbort:
		if commit == (t.state == PrepareCommit) {
			return answer(kerr.ConcurrentTransactions)
		}
	}
	return answer(kerr.InvalidTxnState)
}

// Tick fires the timers at now. Every AbortCheckInterval it aborts, with
// a bumped epoch, each Ongoing transaction older than its timeout (as
// Kafka's abortTimedOutTransactions; the producer is fenced). Every
// ExpiryCheckInterval it expires each id left Empty, CompleteCommit or
// CompleteAbort for transactional.id.expiration.ms: a tombstone, and the
// id is gone once it is durable.
func (c *Coordinator) Tick(now time.Time) Output {
	var out Output
	ms := now.UnixMilli()
	if !now.Before(c.nextAbort) {
		c.nextAbort = now.Add(c.cfg.AbortCheckInterval)
		for _, t := range c.sortedTxns() {
			if t.state == Ongoing && t.pending == nil && t.start+t.timeout.Milliseconds() < ms {
				c.fenceAbort(now, t, &out)
			}
		}
	}
	if !now.Before(c.nextExpiry) {
		c.nextExpiry = now.Add(c.cfg.ExpiryCheckInterval)
		for _, t := range c.sortedTxns() {
			if t.pending != nil || t.updated > ms-c.cfg.IDExpiration.Milliseconds() {
				continue
			}
			switch t.state {
			case Empty, CompleteCommit, CompleteAbort:
				if !t.visible() {
					delete(c.txns, t.id) // never written: nothing to delete
					continue
				}
				to := t.meta.clone()
				to.state, to.updated = Dead, ms
				c.begin(&out, t, to)
			}
		}
	}
	return c.seal(now, &out)
}
