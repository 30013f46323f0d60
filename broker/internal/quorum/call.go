package quorum

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"time"

	"github.com/hashicorp/raft"
)

// The call RPC lets any node ask the current leader something and wait
// for its answer: brokers send their heartbeats, registrations and
// AlterPartition requests to the active controller this way. The payload
// and the answer are opaque bytes (the caller and the handler agree on
// their encoding); one call per connection, like the forward RPC:
//
//	caller → leader: 'C', uint32 length, payload
//	leader → caller: status byte, uint32 length, body
//
// status callOK: body is the answer; callNotLeader and callNoHandler:
// the leader did not handle it (the caller tries again, at whichever node
// leads by then); callFailed: the handler returned an error, body is its
// text.
const (
	callOK        byte = 0
	callNotLeader byte = 1
	callNoHandler byte = 2
	callFailed    byte = 3
)

// Errors of CallLeader besides ErrClosed and ErrNoQuorum.
var (
	// ErrCallFailed: the leader's handler returned an error; its text
	// follows. Application errors belong in the answer, so this means the
	// leader could not answer at all.
	ErrCallFailed = errors.New("quorum: the leader's call handler failed")
	// ErrCallLost: the connection to the leader broke (or ctx ended) after
	// the call was sent: the handler may or may not have run.
	ErrCallLost = errors.New("quorum: the call's answer was lost; the leader may have handled it")
)

// CallHandler answers a call on the leader. ctx ends when the quorum
// closes (or, for a call from this node, when the caller's ctx ends).
type CallHandler func(ctx context.Context, payload []byte) ([]byte, error)

// calls holds the handler this node answers calls with while it leads.
type calls struct {
	ctx    context.Context // ends on Close
	cancel context.CancelFunc

	mu struct {
		sync.Mutex
		fn CallHandler
	}
}

func (c *calls) init() { c.ctx, c.cancel = context.WithCancel(context.Background()) }

func (c *calls) handler() CallHandler {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.mu.fn
}

// HandleCalls sets the handler that answers CallLeader while this node is
// the leader (nil removes it). A leader without a handler answers "try
// again", so a caller waits (retrying with backoff) until the active
// controller is ready. fn runs on the connection's goroutine, several at
// once; it must not wait for the FSM (Propose is fine, as it is not
// called from a watcher).
func (q *Quorum) HandleCalls(fn CallHandler) {
	q.calls.mu.Lock()
	q.calls.mu.fn = fn
	q.calls.mu.Unlock()
}

// CallLeader sends payload to the current leader's CallHandler and returns
// its answer. While no leader is known, the leader has no handler, or the
// node called is no longer the leader, it tries again (10 ms doubling to
// 200 ms) until ctx ends (ErrNoQuorum, wrapping ctx's error): the call was
// not handled. Once a leader took the call, a broken connection or an
// ended ctx gives ErrCallLost. A handler's error gives ErrCallFailed. On
// the leader itself the handler is called directly.
func (q *Quorum) CallLeader(ctx context.Context, payload []byte) ([]byte, error) {
	if len(payload) > maxForwardFrame {
		return nil, fmt.Errorf("quorum: call payload of %d bytes exceeds %d", len(payload), maxForwardFrame)
	}
	backoff := minRetryBackoff
	for {
		if q.isClosed() {
			return nil, ErrClosed
		}
		answer, err := q.callOnce(ctx, payload)
		if !errors.Is(err, errRetry) {
			return answer, err
		}
		t := time.NewTimer(backoff)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return nil, fmt.Errorf("%w: %w (last attempt: %v)", ErrNoQuorum, ctx.Err(), err)
		case <-q.closing:
			t.Stop()
			return nil, ErrClosed
		}
		backoff = min(2*backoff, maxRetryBackoff)
	}
}

func (q *Quorum) callOnce(ctx context.Context, payload []byte) ([]byte, error) {
	addr, id := q.raft.LeaderWithID()
	switch id {
	case "":
		return nil, fmt.Errorf("%w: no leader known", errRetry)
	case q.id:
		status, body := q.answerCall(ctx, payload)
		return callResult(status, body, "this node")
	default:
		if q.mux == nil {
			return nil, fmt.Errorf("%w: standalone node with leader %s", errRetry, id)
		}
		return q.callRemote(ctx, string(addr), payload)
	}
}

// answerCall runs the handler if this node leads and has one.
func (q *Quorum) answerCall(ctx context.Context, payload []byte) (byte, []byte) {
	if q.raft.State() != raft.Leader {
		return callNotLeader, nil
	}
	fn := q.calls.handler()
	if fn == nil {
		return callNoHandler, nil
	}
	answer, err := fn(ctx, payload)
	if err != nil {
		return callFailed, []byte(err.Error())
	}
	return callOK, answer
}

// callResult turns a status and body into CallLeader's result.
func callResult(status byte, body []byte, who string) ([]byte, error) {
	switch status {
	case callOK:
		return body, nil
	case callNotLeader:
		return nil, fmt.Errorf("%w: %s is not the leader any more", errRetry, who)
	case callNoHandler:
		return nil, fmt.Errorf("%w: %s leads but has no call handler yet", errRetry, who)
	case callFailed:
		return nil, fmt.Errorf("%w: %s: %s", ErrCallFailed, who, body)
	default:
		return nil, fmt.Errorf("%w: %s answered with status %d", ErrCallLost, who, status)
	}
}

func (q *Quorum) callRemote(ctx context.Context, addr string, payload []byte) ([]byte, error) {
	c, err := q.mux.dial(ctx, addr, kindCall)
	if err != nil {
		if errors.Is(err, ErrClosed) {
			return nil, err
		}
		return nil, fmt.Errorf("%w: dial leader %s: %v", errRetry, addr, err)
	}
	defer c.Close()
	stop := context.AfterFunc(ctx, func() { c.Close() })
	defer stop()
	lost := func(err error) error {
		if q.isClosed() {
			return ErrClosed
		}
		if ctx.Err() != nil {
			return fmt.Errorf("%w: %w", ErrCallLost, ctx.Err())
		}
		return fmt.Errorf("%w: leader %s: %v", ErrCallLost, addr, err)
	}
	if err := writeFrame(c, nil, payload); err != nil {
		return nil, lost(err)
	}
	status, body, err := readCallReply(bufio.NewReader(c))
	if err != nil {
		return nil, lost(err)
	}
	return callResult(status, body, addr)
}

// readCallReply reads a status byte and a frame.
func readCallReply(r io.Reader) (byte, []byte, error) {
	var s [1]byte
	if _, err := io.ReadFull(r, s[:]); err != nil {
		return 0, nil, err
	}
	body, err := readFrame(r)
	if err != nil {
		return 0, nil, err
	}
	return s[0], body, nil
}

// serveCall answers one call (the leader's side). It runs on a mux
// routing goroutine, which Close waits for; the handler's ctx ends on
// Close.
func (q *Quorum) serveCall(c net.Conn) {
	defer c.Close()
	c.SetReadDeadline(time.Now().Add(forwardReadTimeout))
	payload, err := readFrame(bufio.NewReader(c))
	if err != nil {
		q.logger.Warn("quorum: bad call", "remote", c.RemoteAddr(), "err", err)
		return
	}
	c.SetReadDeadline(time.Time{})
	status, body := q.answerCall(q.calls.ctx, payload)
	writeFrame(c, []byte{status}, body)
}
