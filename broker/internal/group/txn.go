package group

import (
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// txnOffset is one offset a transaction commits: open (in
// Coordinator.txns) until its producer's marker, or a tombstone or a failed
// write, closes it.
type txnOffset struct {
	producer  int64
	g         *group
	topic     string
	partition int32
	o         committed
	// durable: Written reported its record durable, or it was loaded.
	durable bool
	// closed: no longer open; commit says whether it is to take effect
	// (its transaction committed), which it does once durable too.
	closed, commit bool
}

// TxnCommitOffsets handles a TxnOffsetCommit (Kafka's
// commitTransactionalOffset). It checks the request as Kafka 4.0 does: a
// partition of an unknown topic gets UNKNOWN_TOPIC_OR_PARTITION; a group
// the coordinator does not know may commit with generation -1 (a simple
// group is created), else ILLEGAL_GENERATION; a known group checks the
// member id, group instance id (UNKNOWN_MEMBER_ID, FENCED_INSTANCE_ID) and
// generation (ILLEGAL_GENERATION) when any of them is given (v3+; older
// versions give none, and are not checked), and accepts a commit during a
// rebalance, unlike CommitOffsets; metadata over offset.metadata.max.bytes
// gets OFFSET_METADATA_TOO_LARGE. A producer id below 0 gets
// INVALID_PRODUCER_ID_MAPPING (Runnel's choice: no transactional batch can
// carry it).
//
// The records are the offset records CommitOffsets writes, in an Atomic
// Output whose Producer asks the owner to write them as one transactional
// batch of req's producer id and epoch. The offsets are open, pending per
// producer id, until CompleteTxn (or LoadMarker) commits or aborts them:
// invisible to FetchOffsets (which answers UNSTABLE_OFFSET_COMMIT for their
// partitions with requireStable), Offsets, Describe and expiry. If the
// write fails (Written with an error) they are dropped.
func (c *Coordinator) TxnCommitOffsets(now time.Time, req *kmsg.TxnOffsetCommitRequest, exists TopicExists) (*kmsg.TxnOffsetCommitResponse, Output) {
	var out Output
	resp := req.ResponseKind().(*kmsg.TxnOffsetCommitResponse)
	var parts []commitPart
	for _, rt := range req.Topics {
		for _, rp := range rt.Partitions {
			epoch := rp.LeaderEpoch
			if req.Version < 2 {
				epoch = -1
			}
			parts = append(parts, commitPart{topic: rt.Topic, partition: rp.Partition, offset: rp.Offset, epoch: epoch, metadata: rp.Metadata})
		}
	}
	var staged []*txnOffset
	c.commitParts(now, req.Group, parts, exists, true, c.txnCommitCheck(req), &out, func(g *group, p *commitPart, o committed) {
		staged = append(staged, &txnOffset{producer: req.ProducerID, g: g, topic: p.topic, partition: p.partition, o: o})
	})
	i := 0
	for _, rt := range req.Topics {
		st := kmsg.NewTxnOffsetCommitResponseTopic()
		st.Topic = rt.Topic
		for _, rp := range rt.Partitions {
			sp := kmsg.NewTxnOffsetCommitResponseTopicPartition()
			sp.Partition, sp.ErrorCode = rp.Partition, parts[i].code
			st.Partitions = append(st.Partitions, sp)
			i++
		}
		resp.Topics = append(resp.Topics, st)
	}
	if len(staged) > 0 {
		c.stage().txn = staged
		out.Atomic = true
		out.Producer = &Producer{ID: req.ProducerID, Epoch: req.ProducerEpoch}
	}
	c.seal(now, &out)
	for _, t := range staged {
		t.o.pos = c.pos(out.Write)
		c.openTxn(t.producer, t)
	}
	return resp, out
}

// txnCommitCheck returns the error every partition of a TxnOffsetCommit
// gets, or nil: Kafka 4.0's validateTransactionalOffsetCommit and the
// classic group's validateOffsetCommit with isTransactional set.
func (c *Coordinator) txnCommitCheck(req *kmsg.TxnOffsetCommitRequest) *kerr.Error {
	if req.Group == "" {
		return kerr.InvalidGroupID
	}
	if req.ProducerID < 0 {
		return kerr.InvalidProducerIDMapping
	}
	g := c.groups[req.Group]
	switch {
	case g == nil && req.Generation < 0:
		return nil
	case g == nil:
		return kerr.IllegalGeneration
	case g.state == Dead:
		return kerr.CoordinatorNotAvailable
	case req.Generation < 0 && g.state == Empty:
		return nil
	case req.Generation < 0 && req.MemberID == "" && req.InstanceID == nil:
		// Versions before 3 name no member: not checked, as in Kafka.
		return nil
	}
	if req.InstanceID != nil {
		switch id, ok := g.statics[*req.InstanceID]; {
		case !ok:
			return kerr.UnknownMemberID
		case id != req.MemberID:
			return kerr.FencedInstanceID
		}
	} else if g.member(req.MemberID) == nil {
		return kerr.UnknownMemberID
	}
	if req.Generation != g.generation {
		return kerr.IllegalGeneration
	}
	return nil
}

// CompleteTxn applies a transaction marker of producerID once it is durable
// in this partition (the owner calls it after writing the marker): commit
// moves the producer's open offsets into the committed offsets, where one
// takes effect unless the partition's current offset has a later record
// (Kafka's rule: a plain commit written after the transactional record
// wins); abort drops them. An offset whose own write is still in flight
// takes effect when Written reports it durable. No records are written; a
// producer with nothing open is a no-op.
func (c *Coordinator) CompleteTxn(now time.Time, producerID int64, commit bool) Output {
	c.completeTxn(producerID, commit)
	var out Output
	c.seal(now, &out)
	return out
}

// LoadTxn replays one record of a transactional batch of producerID, in
// log order, at start (see Load): an offset record is open under the
// producer until LoadMarker replays its marker; tombstones and group
// records replay as Load does them. A producerID below 0 is Load.
func (c *Coordinator) LoadTxn(now time.Time, producerID int64, key, value []byte) error {
	return c.load(now, producerID, key, value)
}

// LoadMarker replays a transaction marker (a control batch) of producerID
// in log order: the producer's open offsets are committed or dropped as
// CompleteTxn does. Offsets whose marker is not in the log stay open after
// Loaded, until the transaction coordinator writes it and the owner calls
// CompleteTxn.
func (c *Coordinator) LoadMarker(_ time.Time, producerID int64, commit bool) {
	c.completeTxn(producerID, commit)
}

func (c *Coordinator) completeTxn(producer int64, commit bool) {
	for _, t := range c.txns[producer] {
		t.closed, t.commit = true, commit
		if commit && t.durable {
			c.commitTxnOffset(t)
		}
	}
	delete(c.txns, producer)
}

// txnWritten reports the outcome of t's record: it is dropped if the write
// failed, takes effect if its transaction committed meanwhile, and is
// durable (and still open) otherwise.
func (c *Coordinator) txnWritten(t *txnOffset, failure *kerr.Error) {
	switch {
	case failure != nil:
		c.closeTxnOffset(t)
	case t.closed:
		if t.commit {
			c.commitTxnOffset(t)
		}
	default:
		t.durable = true
	}
}

// commitTxnOffset makes a committed transaction's offset take effect,
// unless its group was deleted since.
func (c *Coordinator) commitTxnOffset(t *txnOffset) {
	if c.groups[t.g.id] == t.g {
		t.g.commit(t.topic, t.partition, t.o)
	}
}

func (c *Coordinator) openTxn(producer int64, t *txnOffset) {
	t.producer = producer
	c.txns[producer] = append(c.txns[producer], t)
}

// closeTxnOffset drops an open offset (a tombstone, a deletion or a
// failed write).
func (c *Coordinator) closeTxnOffset(t *txnOffset) {
	if t.closed {
		return
	}
	t.closed, t.commit = true, false
	open := c.txns[t.producer]
	for i, o := range open {
		if o == t {
			open = append(open[:i:i], open[i+1:]...)
			break
		}
	}
	if len(open) == 0 {
		delete(c.txns, t.producer)
	} else {
		c.txns[t.producer] = open
	}
}

// openTxnOffsets returns g's open transactional offsets.
func (c *Coordinator) openTxnOffsets(g *group) []*txnOffset {
	var out []*txnOffset
	for _, open := range c.txns {
		for _, t := range open {
			if t.g == g {
				out = append(out, t)
			}
		}
	}
	return out
}

// openTxnSet reports whether a partition of g has open transactional
// offsets.
func (c *Coordinator) openTxnSet(g *group) func(topic string, part int32) bool {
	set := map[string]map[int32]bool{}
	for _, t := range c.openTxnOffsets(g) {
		if set[t.topic] == nil {
			set[t.topic] = map[int32]bool{}
		}
		set[t.topic][t.partition] = true
	}
	return func(topic string, part int32) bool { return set[topic][part] }
}

func (c *Coordinator) txnOpen(g *group, topic string, part int32) bool {
	return c.openTxnSet(g)(topic, part)
}

// cancelTxn drops g's open transactional offsets of a partition: a
// tombstone follows their records.
func (c *Coordinator) cancelTxn(g *group, topic string, part int32) {
	for _, t := range c.openTxnOffsets(g) {
		if t.topic == topic && t.partition == part {
			c.closeTxnOffset(t)
		}
	}
}
