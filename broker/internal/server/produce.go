package server

// Produce: versions 3-11 (3 is Kafka 4.0's floor: record batch v2 only).
// Each partition's records must be exactly one batch. acks 0, 1 and -1
// (all); acks=1 is answered after the leader fsynced the batch (unless
// log.flush=never), acks=all once the ISR holds it too (the high watermark
// passed it: NOT_ENOUGH_REPLICAS when the ISR is below min.insync.replicas
// before the write, NOT_ENOUGH_REPLICAS_AFTER_APPEND when it fell below
// after, REQUEST_TIMED_OUT past timeout_ms), and acks=0 gets no response
// at all. Transactional batches are accepted (KIP-98): they need a
// transactional id in the request (else TRANSACTIONAL_ID_AUTHORIZATION_FAILED,
// as Kafka answers one without) and a producer id (else INVALID_RECORD); a
// producer with an open transaction may write only transactional batches
// (INVALID_TXN_STATE). The first transactional batch of a producer's
// transaction on a partition is verified with its transaction coordinator
// (KIP-890 part 1, see appendProduced): INVALID_TXN_STATE when the
// partition is not in the producer's transaction, INVALID_PRODUCER_EPOCH
// when the producer was fenced, NOT_ENOUGH_REPLICAS (retriable) when the
// coordinator cannot answer now.

import (
	"context"
	"slices"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/runnel-io/runnel/broker/internal/batch"
	"github.com/runnel-io/runnel/broker/internal/partition"
)

func handleProduce(c *conn, r *request) kmsg.Response {
	req := r.kreq.(*kmsg.ProduceRequest)
	resp := req.ResponseKind().(*kmsg.ProduceResponse)
	m := c.s.metrics
	var refuse *kerr.Error
	switch {
	case req.Acks != 0 && req.Acks != 1 && req.Acks != -1:
		refuse = kerr.InvalidRequiredAcks
	case req.TransactionID == nil && hasTransactional(req):
		refuse = kerr.TransactionalIDAuthorizationFailed
	}

	// appended locates a partition's answer in resp, to complete it
	// after the fsync.
	type appended struct {
		p      *partition.Partition
		ti, pi int
		end    int64 // the offset after the batch
	}
	var toCommit []appended
	im := c.s.meta.Image()
	for _, rt := range req.Topics {
		st := kmsg.NewProduceResponseTopic()
		st.Topic = rt.Topic
		// Clients may not write to internal topics (__consumer_offsets),
		// as in Kafka.
		internal := false
		if t := im.Topic(rt.Topic); t != nil {
			internal = t.Internal
		}
		for _, rp := range rt.Partitions {
			sp := kmsg.NewProduceResponseTopicPartition()
			sp.Partition = rp.Partition
			sp.BaseOffset, sp.LogAppendTime, sp.LogStartOffset = -1, -1, -1
			switch p := c.s.partition(rt.Topic, rp.Partition); {
			case refuse != nil:
				sp.ErrorCode = refuse.Code
			case internal:
				sp.ErrorCode = kerr.InvalidTopicException.Code
				msg := "cannot append to internal topic " + rt.Topic
				sp.ErrorMessage = &msg
			case p == nil:
				sp.ErrorCode = kerr.UnknownTopicOrPartition.Code
			default:
				if err := checkProduceRecords(req.Version, rp.Records); err != nil {
					sp.ErrorCode = m.code(kmsg.Produce, err)
					sp.ErrorMessage = errMessage(err)
					break
				}
				res, err := c.s.appendProduced(req, rt.Topic, p, rp)
				if err != nil {
					sp.ErrorCode = m.code(kmsg.Produce, err)
					sp.ErrorMessage = errMessage(err)
					c.s.logger.Debug("produce rejected", "topic", rt.Topic, "partition", rp.Partition, "err", err)
					break
				}
				sp.BaseOffset, sp.LogAppendTime = res.BaseOffset, res.LogAppendTime
				if !res.Duplicate {
					m.topicBytesIn.WithLabelValues(rt.Topic).Add(float64(len(rp.Records)))
					m.topicRecordsIn.WithLabelValues(rt.Topic).Add(float64(res.LastOffset - res.BaseOffset + 1))
				}
				toCommit = append(toCommit, appended{p, len(resp.Topics), len(st.Partitions), res.LastOffset + 1})
			}
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
	}
	r.noReply = req.Acks == 0
	if r.noReply {
		for _, st := range resp.Topics {
			for _, sp := range st.Partitions {
				r.closeAfter = r.closeAfter || sp.ErrorCode != 0
			}
		}
	}
	if len(toCommit) == 0 {
		return resp
	}
	r.later = func() kmsg.Response {
		// Each partition is its own file: fsync them concurrently, not
		// one after another.
		var parts []*partition.Partition
		for _, a := range toCommit {
			if !slices.Contains(parts, a.p) {
				parts = append(parts, a.p)
			}
		}
		results := make([]error, len(parts))
		var wg sync.WaitGroup
		// acks=all also waits until the ISR holds the batch (the high
		// watermark passed it), bounded by the request's timeout.
		ends := map[*partition.Partition]int64{}
		for _, a := range toCommit {
			ends[a.p] = max(ends[a.p], a.end)
		}
		ctx, cancel := context.WithTimeout(c.s.bg, time.Duration(max(req.TimeoutMillis, 1))*time.Millisecond)
		defer cancel()
		for i, p := range parts {
			wg.Add(1)
			go func() {
				defer wg.Done()
				start := time.Now()
				results[i] = p.Commit()
				m.commitLatency.Observe(time.Since(start).Seconds())
				if results[i] == nil && req.Acks == -1 {
					results[i] = p.WaitReplicated(ctx, ends[p])
				}
			}()
		}
		wg.Wait()
		errs := make(map[*partition.Partition]error, len(parts))
		for i, p := range parts {
			errs[p] = results[i]
		}
		for _, a := range toCommit {
			sp := &resp.Topics[a.ti].Partitions[a.pi]
			if err := errs[a.p]; err != nil {
				sp.ErrorCode = m.code(kmsg.Produce, err)
				sp.ErrorMessage = errMessage(err)
				sp.BaseOffset = -1
				continue
			}
			sp.LogStartOffset = a.p.Offsets().LogStart
		}
		return resp
	}
	return nil
}

// checkProduceRecords makes the checks Kafka makes on a produce request's
// records before the batch itself is validated, in Kafka's order: there is
// a batch, it is a v2 batch, it is the only one, and zstd comes with produce
// v7 or later.
func checkProduceRecords(version int16, records []byte) error {
	if len(records) == 0 {
		return kafkaErr(kerr.InvalidRecord, "produce requests must contain a record batch")
	}
	if len(records) > 16 && (records[16] == 0 || records[16] == 1) {
		return batch.ErrLegacyMagic
	}
	h, err := batch.ParseHeader(records)
	if err != nil {
		return err // the batch validation says what is wrong
	}
	if h.Size() < len(records) {
		return kafkaErr(kerr.InvalidRecord, "produce requests must contain exactly one record batch per partition")
	}
	if h.Codec() == batch.CodecZstd && version < 7 {
		return kafkaErr(kerr.UnsupportedCompressionType, "zstd needs produce v7 or later, got v%d", version)
	}
	return nil
}

// hasTransactional reports whether any partition's batch is transactional
// (Kafka's ProduceRequest.hasTransactionalRecords).
func hasTransactional(req *kmsg.ProduceRequest) bool {
	for _, rt := range req.Topics {
		for _, rp := range rt.Partitions {
			if h, err := batch.ParseHeader(rp.Records); err == nil && h.IsTransactional() {
				return true
			}
		}
	}
	return false
}

// appendProduced appends one partition's batch of a Produce. A client's
// transactional batch that would open the producer's transaction on p is
// first verified with the transaction's coordinator (KIP-890 part 1, as
// Kafka's transaction.partition.verification.enable), under a guard that a
// marker arriving meanwhile voids, so a batch late for its transaction
// cannot open one that no marker would close. The check runs on the
// connection's reader, keeping the connection's produces in order; it
// costs one coordinator round trip per transaction and partition.
func (s *Server) appendProduced(req *kmsg.ProduceRequest, topic string, p *partition.Partition, rp kmsg.ProduceRequestTopicPartition) (partition.AppendResult, error) {
	h, err := batch.ParseHeader(rp.Records)
	if err != nil || !h.IsTransactional() || !h.HasProducerID() || req.TransactionID == nil {
		return p.Append(rp.Records, req.Acks) // validated there
	}
	guard := p.StartVerification(h.ProducerID)
	if guard != 0 {
		ctx, cancel := context.WithTimeout(s.bg, time.Duration(max(req.TimeoutMillis, 1))*time.Millisecond)
		code := s.verifyTxn(ctx, *req.TransactionID, h.ProducerID, h.ProducerEpoch, topic, rp.Partition)
		cancel()
		if code != 0 {
			return partition.AppendResult{}, kafkaErr(produceVerifyError(code), "the transaction coordinator did not verify %s-%d in transaction %q of producer %d epoch %d: %s",
				topic, rp.Partition, *req.TransactionID, h.ProducerID, h.ProducerEpoch, kerr.ErrorForCode(code))
		}
	}
	return p.AppendVerified(rp.Records, req.Acks, guard)
}

// produceVerifyError is what a Produce answers when its transaction was not
// verified with code, as Kafka maps it: transient coordinator errors become
// NOT_ENOUGH_REPLICAS, which every client retries; a fenced producer
// INVALID_PRODUCER_EPOCH; a partition not in the transaction (or an
// unknown producer) INVALID_TXN_STATE.
func produceVerifyError(code int16) *kerr.Error {
	switch code {
	case kerr.ConcurrentTransactions.Code, kerr.CoordinatorLoadInProgress.Code, kerr.CoordinatorNotAvailable.Code, kerr.NotCoordinator.Code, kerr.RequestTimedOut.Code:
		return kerr.NotEnoughReplicas
	case kerr.ProducerFenced.Code, kerr.InvalidProducerEpoch.Code:
		return kerr.InvalidProducerEpoch
	}
	return kerr.InvalidTxnState
}
