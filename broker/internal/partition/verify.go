package partition

import (
	"fmt"

	"github.com/runnel-io/runnel/broker/internal/batch"
)

// VerificationGuard ties a client's transactional batch to the check,
// made with the producer's transaction coordinator, that this partition is
// in its ongoing transaction (Kafka's VerificationGuard, KIP-890 part 1).
// Zero is no guard.
type VerificationGuard uint64

// verifications is the guard of each producer being verified here, and
// the last guard handed out; owned by the partition under appendMu.
type verifications struct {
	last    VerificationGuard
	pending map[int64]VerificationGuard
}

// StartVerification begins the check of a transactional batch of producer
// pid. It returns zero when the producer has a transaction open here
// already (there is nothing to check), else a new guard: the caller asks
// the coordinator, and on success appends with AppendVerified and the
// guard. The guard is void once a marker of the producer is appended (its
// transaction ended) or another verification of it starts, so a batch
// that was verified before its transaction ended cannot open a new one
// that no marker would ever close.
func (p *Partition) StartVerification(pid int64) VerificationGuard {
	p.appendMu.Lock()
	defer p.appendMu.Unlock()
	if e := p.producers[pid]; e != nil && e.TxnFirst >= 0 {
		return 0
	}
	v := &p.verify
	if v.pending == nil {
		v.pending = map[int64]VerificationGuard{}
	}
	v.last++
	v.pending[pid] = v.last
	return v.last
}

// AppendVerified is Append for a client's batch whose transaction was
// verified with guard (StartVerification): a transactional batch of a
// producer without an open transaction here is refused with
// ErrInvalidTxnState unless guard is the producer's current one.
func (p *Partition) AppendVerified(b []byte, acks int16, guard VerificationGuard) (AppendResult, error) {
	return p.append(b, acks, false, &guard)
}

// checkGuardLocked refuses a transactional batch h that would open a
// transaction without a current verification guard. appendMu held.
func (p *Partition) checkGuardLocked(h *batch.Header, guard VerificationGuard) error {
	if !h.IsTransactional() {
		return nil
	}
	if e := p.producers[h.ProducerID]; e != nil && e.TxnFirst >= 0 {
		return nil
	}
	if guard == 0 || p.verify.pending[h.ProducerID] != guard {
		return fmt.Errorf("%w: producer %d has no transaction open here, and none was verified for this batch (it ended since, or was never started)", ErrInvalidTxnState, h.ProducerID)
	}
	return nil
}

// endVerificationLocked voids producer pid's guard: its transaction opened
// or ended. appendMu held.
func (p *Partition) endVerificationLocked(pid int64) {
	delete(p.verify.pending, pid)
}
