package txn

import (
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// OffsetsTopic is the topic whose partition AddOffsetsToTxn adds.
const OffsetsTopic = "__consumer_offsets"

// addResult is one transaction's part of an AddPartitionsToTxn answer.
type addResult struct {
	id    string
	parts []TopicPartition
	codes []int16
	wrote bool // its codes come with the write's outcome
}

// AddPartitions handles AddPartitionsToTxn: before v4 one transaction, the
// client's; from v4 a batch of them, each added or (VerifyOnly, KIP-890
// part 1, from a partition leader) checked, with Kafka's per-transaction
// semantics. A partition for which exists (nil: all do) is false gets
// UNKNOWN_TOPIC_OR_PARTITION and the transaction's others
// OPERATION_NOT_ATTEMPTED. Errors, each for all of a transaction's
// partitions: INVALID_PRODUCER_ID_MAPPING (unknown id or another producer
// id), PRODUCER_FENCED (another epoch; INVALID_PRODUCER_EPOCH before v2),
// CONCURRENT_TRANSACTIONS (a write of the id in flight, or a commit or
// abort completing). Adding partitions already in an Ongoing transaction
// writes nothing; otherwise the transaction turns Ongoing (its start time
// set when it was not) and the answer comes when the record is durable. A
// verification answers NONE for a partition in the transaction and
// INVALID_TXN_STATE for one that is not, from the durable state: a write
// of the id in flight does not make it CONCURRENT_TRANSACTIONS (see
// checkVerify).
func (c *Coordinator) AddPartitions(now time.Time, w Waiter, req *kmsg.AddPartitionsToTxnRequest, exists func(topic string, partition int32) bool) Output {
	var out Output
	var results []*addResult
	if req.Version < 4 {
		var parts []TopicPartition
		for _, rt := range req.Topics {
			for _, p := range rt.Partitions {
				parts = append(parts, TopicPartition{rt.Topic, p})
			}
		}
		results = append(results, c.addTxn(now, &out, req.TransactionalID, req.ProducerID, req.ProducerEpoch, false, parts, exists, req.Version))
	} else {
		for _, rt := range req.Transactions {
			var parts []TopicPartition
			for _, tt := range rt.Topics {
				for _, p := range tt.Partitions {
					parts = append(parts, TopicPartition{tt.Topic, p})
				}
			}
			results = append(results, c.addTxn(now, &out, rt.TransactionalID, rt.ProducerID, rt.ProducerEpoch, rt.VerifyOnly, parts, exists, req.Version))
		}
	}
	c.after(func(failure *kerr.Error, out *Output) {
		for _, r := range results {
			if r.wrote {
				for i := range r.codes {
					r.codes[i] = fencedCode(failure, req.Version, 2)
				}
			}
		}
		out.reply(w, addResponse(req.Version, results))
	})
	return c.seal(now, &out)
}

// addTxn adds (or verifies) parts to one transaction; see AddPartitions.
func (c *Coordinator) addTxn(now time.Time, out *Output, id string, pid int64, epoch int16, verify bool, parts []TopicPartition, exists func(string, int32) bool, version int16) *addResult {
	r := &addResult{id: id, parts: parts, codes: make([]int16, len(parts))}
	all := func(e *kerr.Error) *addResult {
		for i := range r.codes {
			r.codes[i] = fencedCode(e, version, 2)
		}
		return r
	}
	if exists != nil && slices.ContainsFunc(parts, func(tp TopicPartition) bool { return !exists(tp.Topic, tp.Partition) }) {
		for i, tp := range parts {
			r.codes[i] = kerr.OperationNotAttempted.Code
			if !exists(tp.Topic, tp.Partition) {
				r.codes[i] = kerr.UnknownTopicOrPartition.Code
			}
		}
		return r
	}
	if id == "" {
		return all(kerr.InvalidRequest)
	}
	t := c.txns[id]
	if verify {
		if e := c.checkVerify(t, pid, epoch); e != nil {
			return all(e)
		}
		for i, tp := range parts {
			if !t.has(tp) {
				r.codes[i] = kerr.InvalidTxnState.Code
			}
		}
		return r
	}
	if e := c.check(t, pid, epoch); e != nil {
		return all(e)
	}
	if t.state == Ongoing && !slices.ContainsFunc(parts, func(tp TopicPartition) bool { return !t.has(tp) }) {
		return r // all there already: nothing to write
	}
	to := t.meta.clone()
	if t.state != Ongoing {
		to.partitions, to.start = nil, now.UnixMilli()
	}
	for _, tp := range parts {
		if i, ok := slices.BinarySearchFunc(to.partitions, tp, compareTP); !ok {
			to.partitions = slices.Insert(to.partitions, i, tp)
		}
	}
	to.state, to.updated = Ongoing, now.UnixMilli()
	c.begin(out, t, to)
	r.wrote = true
	return r
}

// check validates a client's producer id and epoch against t, and that t
// can take a new partition now; nil: it can.
func (c *Coordinator) check(t *txn, pid int64, epoch int16) *kerr.Error {
	switch {
	case t == nil || !t.visible() || t.producerID != pid:
		return kerr.InvalidProducerIDMapping
	case t.epoch != epoch:
		return kerr.ProducerFenced
	case t.pending != nil, t.state == PrepareCommit, t.state == PrepareAbort:
		return kerr.ConcurrentTransactions
	case t.state == Empty, t.state == Ongoing, t.state == CompleteCommit, t.state == CompleteAbort:
		return nil
	}
	return kerr.InvalidTxnState
}

// checkVerify validates a partition leader's verification of producer
// pid at epoch against t, as Kafka's handleVerifyPartitionsInTransaction:
// it reads the durable state only, so a write of the id in flight does
// not refuse it. That write either adds partitions, and the ones verified
// are in the transaction already, or ends the transaction, whose markers
// then reach every partition verified now and void a verification whose
// batch is not yet appended (partition.VerificationGuard). Refusing it,
// as a client's add is refused, turned every produce that raced with the
// client's next AddPartitionsToTxn (franz-go sends one per broker) into a
// retry. A pending epoch fence counts as done, as Kafka bumps the epoch
// before it writes the fence. nil: the partitions can be checked.
func (c *Coordinator) checkVerify(t *txn, pid int64, epoch int16) *kerr.Error {
	switch {
	case t == nil || !t.visible() || t.producerID != pid:
		return kerr.InvalidProducerIDMapping
	case t.epoch != epoch:
		return kerr.ProducerFenced
	case t.pending != nil && t.pending.to.state == PrepareAbort && t.pending.to.epoch != epoch:
		return kerr.ProducerFenced // an epoch fence is being written
	case t.state == PrepareCommit, t.state == PrepareAbort:
		return kerr.ConcurrentTransactions
	}
	return nil
}

func addResponse(version int16, results []*addResult) *kmsg.AddPartitionsToTxnResponse {
	resp := kmsg.NewPtrAddPartitionsToTxnResponse()
	resp.Version = version
	for _, r := range results {
		var topics []kmsg.AddPartitionsToTxnResponseTransactionTopic
		for i, tp := range r.parts {
			j := slices.IndexFunc(topics, func(t kmsg.AddPartitionsToTxnResponseTransactionTopic) bool { return t.Topic == tp.Topic })
			if j < 0 {
				j = len(topics)
				topics = append(topics, kmsg.AddPartitionsToTxnResponseTransactionTopic{Topic: tp.Topic})
			}
			topics[j].Partitions = append(topics[j].Partitions, kmsg.AddPartitionsToTxnResponseTransactionTopicPartition{Partition: tp.Partition, ErrorCode: r.codes[i]})
		}
		if version < 4 {
			for _, t := range topics {
				rt := kmsg.AddPartitionsToTxnResponseTopic{Topic: t.Topic}
				for _, p := range t.Partitions {
					rt.Partitions = append(rt.Partitions, kmsg.AddPartitionsToTxnResponseTopicPartition{Partition: p.Partition, ErrorCode: p.ErrorCode})
				}
				resp.Topics = append(resp.Topics, rt)
			}
			continue
		}
		resp.Transactions = append(resp.Transactions, kmsg.AddPartitionsToTxnResponseTransaction{TransactionalID: r.id, Topics: topics})
	}
	return resp
}

// AddOffsets handles AddOffsetsToTxn (v0-v4): it adds partition, the
// group's __consumer_offsets partition as the caller computes it, to the
// transaction, with AddPartitions' errors (PRODUCER_FENCED is
// INVALID_PRODUCER_EPOCH before v2).
func (c *Coordinator) AddOffsets(now time.Time, w Waiter, req *kmsg.AddOffsetsToTxnRequest, partition int32) Output {
	var out Output
	r := c.addTxn(now, &out, req.TransactionalID, req.ProducerID, req.ProducerEpoch, false,
		[]TopicPartition{{OffsetsTopic, partition}}, nil, req.Version)
	c.after(func(failure *kerr.Error, out *Output) {
		resp := kmsg.NewPtrAddOffsetsToTxnResponse()
		resp.Version = req.Version
		resp.ErrorCode = r.codes[0]
		if r.wrote {
			resp.ErrorCode = fencedCode(failure, req.Version, 2)
		}
		out.reply(w, resp)
	})
	return c.seal(now, &out)
}
