package server

// Fetch: versions 4-16 (4 is Kafka 4.0's floor). Long poll with max_wait,
// min_bytes, max_bytes and partition_max_bytes (KIP-74: the first batch of
// the first non-empty partition is returned whole even when larger). Topic
// ids from v13. Isolation levels: read_uncommitted reads to the high
// watermark and answers a null aborted transactions list; read_committed
// (1) reads to the last stable offset and lists the aborted transactions
// the records overlap (empty, not null, when none), as Kafka; both are told
// the last stable offset. A read_committed long poll wakes when the high
// watermark moves, which is when the last stable offset can. Incremental fetch
// sessions (KIP-227) from v7: see fetch_session.go. Only a partition's
// leader serves it (NOT_LEADER_OR_FOLLOWER elsewhere). A follower's fetch
// (replica id >= 0: ReplicaID before v15, ReplicaState from v15) reads up
// to the log end rather than the high watermark, reports the follower's
// log end to the partition (which may move the high watermark or propose
// an ISR expansion), and waits for appends as well as for the high
// watermark. The response is written hand-framed, its records not copied
// (wire.AppendFetchResponse).

import (
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/runnel-io/runnel/broker/internal/batch"
	"github.com/runnel-io/runnel/broker/internal/partition"
)

// noRecords is an empty, non-null records field: librdkafka rejects a null
// one (size -1), and Kafka always sends an empty set.
var noRecords = []byte{}

func handleFetch(c *conn, r *request) kmsg.Response {
	req := r.kreq.(*kmsg.FetchRequest)
	// The session is resolved here, on the connection's reader, so that
	// fetches pipelined on one session have their epochs checked in request
	// order, as Kafka does; the reads and the wait run later.
	plan, err := c.s.sessions.begin(req)
	if err != nil {
		resp := req.ResponseKind().(*kmsg.FetchResponse)
		resp.ErrorCode = c.s.metrics.code(kmsg.Fetch, err)
		return resp
	}
	r.later = func() kmsg.Response {
		buf := recordBuffers.get()
		resp := c.fetch(req, plan, buf)
		r.release = func() { recordBuffers.put(buf) }
		return resp
	}
	return nil
}

// fetchTarget is one requested partition this node can serve.
type fetchTarget struct {
	t      tp
	p      *partition.Partition
	ti, pi int
	offset int64
	max    int32
}

// fetch answers req for the partitions of plan, reading records into *buf
// (which the response then aliases until it is written).
func (c *conn) fetch(req *kmsg.FetchRequest, plan fetchPlan, buf *[]byte) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.FetchResponse)
	resp.SessionID = plan.sessionID
	topicIDs := req.Version >= 13
	defer c.s.sessions.finish(plan, resp, topicIDs)

	im := c.s.meta.Image()
	replica := req.ReplicaID
	if req.Version >= 15 {
		replica = req.ReplicaState.ID
	}
	var targets []fetchTarget
	for i, fp := range plan.parts {
		// Consecutive partitions of a topic share its response entry.
		if i == 0 || fp.key.topic != plan.parts[i-1].key.topic || fp.key.id != plan.parts[i-1].key.id {
			st := kmsg.NewFetchResponseTopic()
			st.Topic, st.TopicID = fp.key.topic, fp.key.id
			resp.Topics = append(resp.Topics, st)
		}
		st := &resp.Topics[len(resp.Topics)-1]
		name, unknown := fp.key.topic, kerr.UnknownTopicOrPartition
		if topicIDs {
			name, unknown = "", kerr.UnknownTopicID
			if t := im.TopicsByID[fp.key.id]; t != nil {
				name = t.Name
			}
		}
		sp := kmsg.NewFetchResponseTopicPartition()
		sp.Partition = fp.key.part
		sp.HighWatermark, sp.LastStableOffset, sp.LogStartOffset = -1, -1, -1
		sp.RecordBatches = noRecords
		switch p := c.s.partition(name, fp.key.part); {
		case p == nil:
			sp.ErrorCode = unknown.Code
		case !leads(p):
			sp.ErrorCode = kerr.NotLeaderForPartition.Code
		default:
			if code := checkLeaderEpoch(p, fp.leaderEpoch); code != 0 {
				sp.ErrorCode = code
				break
			}
			targets = append(targets, fetchTarget{t: tp{name, fp.key.part}, p: p, ti: len(resp.Topics) - 1, pi: len(st.Partitions), offset: fp.offset, max: fp.maxBytes})
		}
		st.Partitions = append(st.Partitions, sp)
	}

	if replica >= 0 {
		now := c.s.now()
		for _, t := range targets {
			if u := t.p.UpdateFollower(replica, t.offset, now); u.ExpandISR != nil {
				c.s.alterISR(t.t, t.p, u.ExpandISR)
			}
		}
	}
	deadline := time.Now().Add(time.Duration(req.MaxWaitMillis) * time.Millisecond)
	var wake chan struct{}
	for {
		total, failed := c.readTargets(req, resp, targets, buf, replica)
		if total >= int(req.MinBytes) || failed || len(targets) == 0 || !time.Now().Before(deadline) {
			c.countFetched(resp)
			return resp
		}
		if wake == nil {
			wake = make(chan struct{}, 1)
			for _, t := range targets {
				t.p.Wait(wake)
				defer t.p.Unwait(wake)
				if replica >= 0 {
					t.p.WaitAppend(wake)
					defer t.p.UnwaitAppend(wake)
				}
			}
			// Data may have arrived between the read and registering.
			continue
		}
		timer := time.NewTimer(time.Until(deadline))
		select {
		case <-wake:
		case <-timer.C:
		case <-c.closing():
		}
		timer.Stop()
		select {
		case <-c.closing():
			return resp
		default:
		}
	}
}

// readTargets reads every target into resp and returns the bytes read and
// whether any partition failed (which answers the fetch at once).
func (c *conn) readTargets(req *kmsg.FetchRequest, resp *kmsg.FetchResponse, targets []fetchTarget, buf *[]byte, replica int32) (int, bool) {
	committed := replica < 0 && req.IsolationLevel == 1
	budget := int(req.MaxBytes)
	if budget <= 0 {
		budget = 1<<31 - 1
	}
	// Every partition's records go into one pooled buffer; where each
	// lands is kept as offsets, since appending may move the buffer.
	type span struct {
		sp         *kmsg.FetchResponseTopicPartition
		start, end int
	}
	spans := make([]span, 0, len(targets))
	all := (*buf)[:0]
	defer func() {
		for _, s := range spans {
			s.sp.RecordBatches = all[s.start:s.end:s.end]
		}
		*buf = all
	}()
	total, failed := 0, false
	for _, t := range targets {
		sp := &resp.Topics[t.ti].Partitions[t.pi]
		sp.RecordBatches = noRecords
		sp.AbortedTransactions = nil
		if committed {
			sp.AbortedTransactions = []kmsg.FetchResponseTopicPartitionAbortedTransaction{} // empty, not null
		}
		max := min(int(t.max), budget-total)
		if max <= 0 && total > 0 {
			o := t.p.Offsets()
			sp.HighWatermark, sp.LastStableOffset, sp.LogStartOffset = o.HighWatermark, o.LastStable, o.LogStart
			continue
		}
		start := len(all)
		var o partition.Offsets
		var err error
		switch {
		case replica >= 0:
			all, o, err = t.p.ReadReplica(all, t.offset, max)
		case committed:
			var aborted []partition.AbortedTxn
			all, o, aborted, err = t.p.ReadCommitted(all, t.offset, max, total == 0)
			for _, a := range aborted {
				at := kmsg.NewFetchResponseTopicPartitionAbortedTransaction()
				at.ProducerID, at.FirstOffset = a.ProducerID, a.FirstOffset
				sp.AbortedTransactions = append(sp.AbortedTransactions, at)
			}
		default:
			all, o, err = t.p.Read(all, t.offset, max, total == 0)
		}
		sp.HighWatermark, sp.LastStableOffset, sp.LogStartOffset = o.HighWatermark, o.LastStable, o.LogStart
		if err != nil {
			sp.AbortedTransactions = nil
			sp.ErrorCode = c.s.metrics.code(kmsg.Fetch, err)
			failed = true
			continue
		}
		sp.ErrorCode = 0
		if n := len(all) - start; n > 0 {
			spans = append(spans, span{sp, start, len(all)})
			total += n
		}
	}
	return total, failed
}

func (c *conn) countFetched(resp *kmsg.FetchResponse) {
	m := c.s.metrics
	for _, st := range resp.Topics {
		var bytes, records int
		for _, sp := range st.Partitions {
			bytes += len(sp.RecordBatches)
			for b := sp.RecordBatches; len(b) >= batch.HeaderSize; {
				h, err := batch.ParseHeader(b)
				if err != nil || h.Size() > len(b) {
					break
				}
				records += int(h.NumRecords)
				b = b[h.Size():]
			}
		}
		if bytes > 0 {
			name := st.Topic
			if name == "" {
				if t := c.s.meta.Image().TopicsByID[st.TopicID]; t != nil {
					name = t.Name
				}
			}
			m.topicBytesOut.WithLabelValues(name).Add(float64(bytes))
			m.topicRecordsOut.WithLabelValues(name).Add(float64(records))
		}
	}
}

// leads reports whether this node leads p.
func leads(p *partition.Partition) bool {
	leader, _ := p.Role()
	return leader
}

// checkLeaderEpoch compares a client's view of the leader epoch with the
// partition's (KIP-320): an older epoch is fenced, a newer one unknown here.
func checkLeaderEpoch(p *partition.Partition, clientEpoch int32) int16 {
	if clientEpoch < 0 {
		return 0
	}
	epoch := p.Offsets().Epoch
	switch {
	case clientEpoch < epoch:
		return kerr.FencedLeaderEpoch.Code
	case clientEpoch > epoch:
		return kerr.UnknownLeaderEpoch.Code
	}
	return 0
}
