package quorum

import (
	"bufio"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"time"

	"github.com/runnel-io/runnel/broker/internal/metadata"
)

// The forward RPC carries a follower's proposal to the leader: one request
// per connection (proposals are rare; a loopback or LAN dial costs less
// than a pool's bookkeeping), hand-framed because it is two messages:
//
//	follower → leader: 'F', uint32 length, the Raft command (records' JSON)
//	leader → follower: uint32 length, JSON forwardReply
//
// The leader answers once the entry is applied on the leader, with its
// index; the follower then waits for its own FSM to reach that index.
// hashicorp/raft has no built-in forwarding (Consul and Nomad each add an
// RPC of their own), hence this one.

// maxForwardFrame bounds both frames: a metadata proposal is a few KiB.
const maxForwardFrame = 16 << 20

// forwardReadTimeout bounds how long the leader waits for a request.
const forwardReadTimeout = 10 * time.Second

type forwardReply struct {
	Index uint64 `json:"index,omitempty"`
	// Code names the error (see errorCodes); "" is success.
	Code    string `json:"code,omitempty"`
	Message string `json:"message,omitempty"`
}

// errorCodes carries the errors a proposer tests with errors.Is across the
// wire. An error not listed arrives as codeOther with its text.
var errorCodes = []struct {
	code string
	err  error
}{
	{"not_leader", errNotLeader},
	{"leadership_lost", ErrLeadershipLost},
	{"topic_exists", metadata.ErrTopicExists},
	{"unknown_topic", metadata.ErrUnknownTopic},
	{"bad_record", metadata.ErrBadRecord},
	{"partition_count", metadata.ErrPartitionCount},
	{"stale_epoch", metadata.ErrStaleEpoch},
	{"cluster_id", metadata.ErrClusterID},
}

const codeOther = "other"

func replyFor(index uint64, err error) forwardReply {
	if err == nil {
		return forwardReply{Index: index}
	}
	for _, c := range errorCodes {
		if errors.Is(err, c.err) {
			return forwardReply{Code: c.code, Message: err.Error()}
		}
	}
	return forwardReply{Code: codeOther, Message: err.Error()}
}

// remoteError is an error the leader returned: its text, and the local
// sentinel for errors.Is.
type remoteError struct {
	msg      string
	sentinel error
}

func (e *remoteError) Error() string { return e.msg }
func (e *remoteError) Unwrap() error { return e.sentinel }

func (r forwardReply) err() error {
	if r.Code == "" {
		return nil
	}
	for _, c := range errorCodes {
		if c.code == r.Code {
			return &remoteError{msg: r.Message, sentinel: c.err}
		}
	}
	return &remoteError{msg: r.Message}
}

// serveForward answers one forwarded proposal (the leader's side). It runs
// on a mux routing goroutine; while it waits for the commit the goroutine
// belongs to Close's wait.
func (q *Quorum) serveForward(c net.Conn) {
	defer c.Close()
	c.SetReadDeadline(time.Now().Add(forwardReadTimeout))
	cmd, err := readFrame(bufio.NewReader(c))
	if err != nil {
		q.logger.Warn("quorum: bad forwarded proposal", "remote", c.RemoteAddr(), "err", err)
		return
	}
	c.SetReadDeadline(time.Time{})
	var index uint64
	var recs []metadata.Record
	if err = json.Unmarshal(cmd, &recs); err != nil {
		// Refused before it reaches the log.
		err = fmt.Errorf("%w: forwarded proposal: %v", metadata.ErrBadRecord, err)
	} else {
		index, err = q.applyAsLeader(cmd)
	}
	if errors.Is(err, ErrClosed) {
		// The entry may be in the leader's log already; for the follower
		// this is a lost leader, not a closed quorum.
		err = fmt.Errorf("%w: the leader is shutting down", ErrLeadershipLost)
	}
	b, _ := json.Marshal(replyFor(index, err))
	writeFrame(c, nil, b)
}

// forward sends cmd to the leader at addr and returns the entry's index.
// Errors wrapping errRetry mean the leader did not take the proposal, so
// trying again cannot apply it twice.
func (q *Quorum) forward(ctx context.Context, addr string, cmd []byte) (uint64, error) {
	c, err := q.mux.dial(ctx, addr, kindForward)
	if err != nil {
		if errors.Is(err, ErrClosed) {
			return 0, err
		}
		return 0, fmt.Errorf("%w: dial leader %s: %v", errRetry, addr, err)
	}
	defer c.Close()
	stop := context.AfterFunc(ctx, func() { c.Close() })
	defer stop()
	if err := writeFrame(c, nil, cmd); err != nil {
		return 0, q.lostForward(ctx, addr, err)
	}
	b, err := readFrame(bufio.NewReader(c))
	if err != nil {
		return 0, q.lostForward(ctx, addr, err)
	}
	var r forwardReply
	if err := json.Unmarshal(b, &r); err != nil {
		return 0, fmt.Errorf("%w: leader %s sent a bad reply: %v", ErrLeadershipLost, addr, err)
	}
	if err := r.err(); err != nil {
		if errors.Is(err, errNotLeader) {
			return 0, fmt.Errorf("%w: %s is not the leader any more", errRetry, addr)
		}
		return 0, err
	}
	return r.Index, nil
}

// lostForward is the error once the request may have reached the leader:
// it may still commit, so it must not be retried.
func (q *Quorum) lostForward(ctx context.Context, addr string, err error) error {
	if q.isClosed() {
		return ErrClosed // Close closed the connection
	}
	if ctx.Err() != nil {
		return fmt.Errorf("%w: forwarded to %s: %w", ErrNotCommitted, addr, ctx.Err())
	}
	return fmt.Errorf("%w: connection to leader %s: %v", ErrLeadershipLost, addr, err)
}

func writeFrame(w io.Writer, prefix, b []byte) error {
	buf := binary.BigEndian.AppendUint32(prefix, uint32(len(b)))
	_, err := w.Write(append(buf, b...))
	return err
}

func readFrame(r io.Reader) ([]byte, error) {
	var h [4]byte
	if _, err := io.ReadFull(r, h[:]); err != nil {
		return nil, err
	}
	n := binary.BigEndian.Uint32(h[:])
	if n > maxForwardFrame {
		return nil, fmt.Errorf("quorum: forward frame of %d bytes exceeds %d", n, maxForwardFrame)
	}
	b := make([]byte, n)
	if _, err := io.ReadFull(r, b); err != nil {
		return nil, err
	}
	return b, nil
}
