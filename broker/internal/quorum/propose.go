package quorum

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/hashicorp/raft"

	"github.com/runnel-io/runnel/broker/internal/metadata"
)

// Errors a proposal returns besides the image's own (metadata.ErrTopicExists
// and the like, which mean the proposal was refused and changed nothing).
var (
	// ErrClosed: the quorum is closed.
	ErrClosed = errors.New("quorum: closed")
	// ErrNotCommitted: the context ended before the proposal was known to
	// be committed and applied here; it wraps the context's error. If it
	// reached a leader it may still be applied later (Kafka's
	// REQUEST_TIMED_OUT); if no leader was reachable it was not sent.
	ErrNotCommitted = errors.New("quorum: proposal not committed before the context ended")
	// ErrNoQuorum: like ErrNotCommitted, and no leader with a quorum
	// answered before the context ended, so the proposal was never
	// accepted by a leader.
	ErrNoQuorum = errors.New("quorum: no leader with a quorum answered")
	// ErrLeadershipLost: the leader that took the proposal lost its
	// leadership (or the connection to it broke) before the commit was
	// known; the proposal may or may not be applied later.
	ErrLeadershipLost = errors.New("quorum: the leader changed before the proposal was known committed; it may still be applied")

	// errRetry marks errors after which the proposal certainly did not
	// enter the log, so Propose tries again.
	errRetry = errors.New("quorum: no leader took the proposal")
	// errNotLeader is what the forward RPC answers on a non-leader.
	errNotLeader = errors.New("quorum: not the leader")
)

// Backoff between attempts while no leader takes a proposal (during an
// election, or with no quorum).
const (
	minRetryBackoff = 10 * time.Millisecond
	maxRetryBackoff = 200 * time.Millisecond
)

// Propose commits recs as one entry of the metadata log, all records or
// none, from any node: the leader appends it, a follower forwards it to
// the leader. It returns once the entry is applied on this node, so the
// caller sees its change in Image(). A proposal the image refuses comes
// back with the image's error (e.g. metadata.ErrTopicExists) and changes
// nothing. While no leader is known it retries until ctx ends (then
// ErrNoQuorum and ErrNotCommitted). A watcher must not call Propose.
func (q *Quorum) Propose(ctx context.Context, recs ...metadata.Record) error {
	cmd, err := encode(recs)
	if err != nil {
		return err
	}
	backoff := minRetryBackoff
	for {
		if q.isClosed() {
			return ErrClosed
		}
		index, err := q.proposeOnce(ctx, cmd)
		if err == nil {
			return q.fsm.waitApplied(ctx, index, q.closing)
		}
		if !errors.Is(err, errRetry) {
			return err
		}
		t := time.NewTimer(backoff)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("%w: %w: %w (last attempt: %v)", ErrNoQuorum, ErrNotCommitted, ctx.Err(), err)
		case <-q.closing:
			t.Stop()
			return ErrClosed
		}
		backoff = min(2*backoff, maxRetryBackoff)
	}
}

// Sync returns once every entry committed before it was called is applied
// here: it commits an empty proposal and waits for it. The server calls it
// at start so the image it serves from is current.
//
// The entry is empty, so one lost with a leadership change (or not known
// committed) is simply proposed again until ctx ends.
func (q *Quorum) Sync(ctx context.Context) error {
	for {
		err := q.Propose(ctx)
		if !errors.Is(err, ErrLeadershipLost) && !(errors.Is(err, ErrNotCommitted) && ctx.Err() == nil) {
			return err
		}
		t := time.NewTimer(minRetryBackoff)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return err
		case <-q.closing:
			t.Stop()
			return ErrClosed
		}
	}
}

func (q *Quorum) proposeOnce(ctx context.Context, cmd []byte) (uint64, error) {
	addr, id := q.raft.LeaderWithID()
	switch id {
	case "":
		return 0, fmt.Errorf("%w: no leader known", errRetry)
	case q.id:
		return q.applyAsLeaderCtx(ctx, cmd)
	default:
		if q.mux == nil {
			return 0, fmt.Errorf("%w: standalone node with leader %s", errRetry, id)
		}
		return q.forward(ctx, string(addr), cmd)
	}
}

// applyAsLeaderCtx is applyAsLeader bounded by ctx: the wait for raft's
// future runs on a goroutine that Close waits for (raft resolves every
// future when it shuts down or steps down).
func (q *Quorum) applyAsLeaderCtx(ctx context.Context, cmd []byte) (uint64, error) {
	type result struct {
		index uint64
		err   error
	}
	ch := make(chan result, 1)
	if !q.goTracked(func() {
		index, err := q.applyAsLeader(cmd)
		ch <- result{index, err}
	}) {
		return 0, ErrClosed
	}
	select {
	case r := <-ch:
		return r.index, r.err
	case <-ctx.Done():
		return 0, fmt.Errorf("%w: %w", ErrNotCommitted, ctx.Err())
	case <-q.closing:
		return 0, ErrClosed
	}
}

// applyAsLeader appends cmd to the log and waits until the leader's FSM
// has applied it. errNotLeader (wrapped in errRetry) means the entry was
// never appended.
func (q *Quorum) applyAsLeader(cmd []byte) (uint64, error) {
	if q.raft.State() != raft.Leader {
		return 0, fmt.Errorf("%w: %w", errRetry, errNotLeader)
	}
	f := q.raft.Apply(cmd, 0)
	switch err := f.Error(); {
	case err == nil:
	case errors.Is(err, raft.ErrNotLeader):
		return 0, fmt.Errorf("%w: %w", errRetry, errNotLeader)
	case errors.Is(err, raft.ErrRaftShutdown):
		return 0, ErrClosed
	case errors.Is(err, raft.ErrLeadershipLost):
		return 0, fmt.Errorf("%w: %v", ErrLeadershipLost, err)
	default:
		return 0, fmt.Errorf("quorum: apply: %w", err)
	}
	if err, ok := f.Response().(error); ok && err != nil {
		return 0, err
	}
	return f.Index(), nil
}

// goTracked runs fn on a goroutine that Close waits for; false once
// closed.
func (q *Quorum) goTracked(fn func()) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.mu.closed {
		return false
	}
	q.wg.Go(fn)
	return true
}

func (q *Quorum) isClosed() bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.mu.closed
}
