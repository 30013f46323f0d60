package txn

import (
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
)

// WriteID names the records of one Output. IDs grow in the order the
// calls made them, which is the order the owner appends them.
type WriteID uint64

// transit is one transactional id's move to the state its record carries
// (Kafka's TxnTransitMetadata), visible once the record is durable.
type transit struct {
	t  *txn
	to meta
}

// pendingWrite is what one Output's records will make true, and the
// replies that wait for them.
type pendingWrite struct {
	transits []*transit
	// done answer the requests that wait for the write: failure is nil
	// once it is durable.
	done []func(failure *kerr.Error, out *Output)
}

func (c *Coordinator) stage() *pendingWrite {
	if c.staged == nil {
		c.staged = &pendingWrite{}
	}
	return c.staged
}

// begin stages t's move to `to`: its record joins out, and t is pending
// (CONCURRENT_TRANSACTIONS to others) until Written.
func (c *Coordinator) begin(out *Output, t *txn, to meta) {
	tr := &transit{t: t, to: to}
	t.pending = tr
	p := c.stage()
	p.transits = append(p.transits, tr)
	out.Records = append(out.Records, record(t.id, to))
}

// after answers a request once the call's records are durable (or at
// once, with failure nil, when the call wrote none).
func (c *Coordinator) after(f func(failure *kerr.Error, out *Output)) {
	p := c.stage()
	p.done = append(p.done, f)
}

// seal ends a public call: it names the Output's records with the next
// WriteID and files what the call staged under it.
func (c *Coordinator) seal(now time.Time, out *Output) Output {
	p := c.staged
	c.staged = nil
	if p == nil {
		return *out
	}
	if len(out.Records) == 0 {
		for _, f := range p.done {
			f(nil, out)
		}
		return *out
	}
	c.nextWrite++
	out.Write = c.nextWrite
	c.pending[out.Write] = p
	return *out
}

// Written reports the outcome of Output w's records: nil once they are
// appended and durable, else the Kafka error the failure maps to
// (NOT_COORDINATOR for a storage error or a lost leadership, ...). On
// success each transactional id takes the state its record carries and
// the waiting requests get their answers; a transaction that reached
// PrepareCommit or PrepareAbort yields its Markers. On failure the ids keep
// their previous state and the requests get the error; a failed
// CompleteCommit/CompleteAbort record is written again (the markers are
// already out), except on NOT_COORDINATOR, when the partition's next
// coordinator loads and finishes the transaction. Written may be called
// in any order; an unknown or repeated w is ignored.
func (c *Coordinator) Written(now time.Time, w WriteID, failure *kerr.Error) Output {
	var out Output
	p, ok := c.pending[w]
	if !ok {
		return out
	}
	delete(c.pending, w)
	for _, tr := range p.transits {
		t := tr.t
		if t.pending != tr {
			continue // never the case: one transition at a time
		}
		t.pending = nil
		if failure != nil {
			if (tr.to.state == CompleteCommit || tr.to.state == CompleteAbort) && failure != kerr.NotCoordinator {
				c.begin(&out, t, tr.to)
			}
			continue
		}
		t.meta = tr.to
		switch t.state {
		case PrepareCommit, PrepareAbort:
			c.sendMarkers(now, t, &out)
		case Dead:
			delete(c.txns, t.id)
		}
	}
	for _, f := range p.done {
		f(failure, &out)
	}
	return c.seal(now, &out)
}

// sendMarkers asks for t's markers, or completes at once a transaction
// without partitions.
func (c *Coordinator) sendMarkers(now time.Time, t *txn, out *Output) {
	if len(t.partitions) == 0 {
		c.complete(now, t, out)
		return
	}
	out.Markers = append(out.Markers, Marker{
		TransactionalID: t.id, ProducerID: t.producerID, ProducerEpoch: t.epoch,
		Commit: t.state == PrepareCommit, CoordinatorEpoch: c.cfg.CoordinatorEpoch,
		Partitions: append([]TopicPartition(nil), t.partitions...),
	})
}

// complete stages the CompleteCommit/CompleteAbort record of a prepared
// transaction whose markers are written (Kafka's prepareComplete).
func (c *Coordinator) complete(now time.Time, t *txn, out *Output) {
	to := t.meta.clone()
	to.state = CompleteCommit
	if t.state == PrepareAbort {
		to.state = CompleteAbort
	}
	to.partitions, to.updated = nil, now.UnixMilli()
	c.begin(out, t, to)
}

// MarkersWritten reports that the markers of transactional id's prepared
// transaction (producer id and epoch as in its Marker) are written to
// every partition: the Output holds the record that completes it. A report
// that matches no prepared transaction (repeated, or superseded) yields
// nothing.
func (c *Coordinator) MarkersWritten(now time.Time, id string, producerID int64, epoch int16) Output {
	var out Output
	t := c.txns[id]
	if t == nil || t.pending != nil || t.producerID != producerID || t.epoch != epoch ||
		(t.state != PrepareCommit && t.state != PrepareAbort) {
		return out
	}
	c.complete(now, t, &out)
	return c.seal(now, &out)
}
