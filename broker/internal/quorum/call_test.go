package quorum

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"
)

// echoFrom answers a call with the node's id and the payload.
func echoFrom(id int) CallHandler {
	return func(_ context.Context, p []byte) ([]byte, error) {
		if string(p) == "fail" {
			return nil, errors.New("handler says no")
		}
		return fmt.Appendf(nil, "node %d: %s", id, p), nil
	}
}

// Three voters on loopback: a call from any node reaches the leader's
// handler (a follower's over the controller port, the leader's own
// directly); a handler error comes back as ErrCallFailed; a leader without
// a handler makes callers wait until it has one; after the leader stops,
// calls reach the new one.
func TestCallLeader(t *testing.T) {
	c := newCluster(t, 3, failoverTimeouts)
	ctx := ctxT(t)
	for i, q := range c.nodes {
		q.HandleCalls(echoFrom(i + 1))
	}
	// A stall may move the leadership between c.leader() and the call;
	// the answer then names the node that led when it was handled, which
	// callsReach accepts only if it leads now.
	callsReach := func(want int) {
		t.Helper()
		for i, q := range c.nodes {
			if q == nil {
				continue
			}
			got, err := q.CallLeader(ctx, []byte(fmt.Sprint("from ", i+1)))
			if err != nil {
				t.Fatalf("call from node %d: %v", i+1, err)
			}
			if w := fmt.Sprintf("node %d: from %d", want+1, i+1); string(got) != w {
				if l := c.leader(); l != want {
					t.Logf("leadership moved from node %d to %d during the calls", want+1, l+1)
					want = l
					continue
				}
				t.Fatalf("call from node %d answered %q, want %q", i+1, got, w)
			}
		}
	}
	leader := c.leader()
	callsReach(leader)

	f := c.follower(leader)
	if _, err := c.nodes[f].CallLeader(ctx, []byte("fail")); !errors.Is(err, ErrCallFailed) || !strings.Contains(err.Error(), "handler says no") {
		t.Fatalf("failing handler via a follower: %v, want ErrCallFailed with its text", err)
	}
	if _, err := c.nodes[leader].CallLeader(ctx, []byte("fail")); !errors.Is(err, ErrCallFailed) {
		t.Fatalf("failing handler on the leader: %v, want ErrCallFailed", err)
	}

	// No handler on the leader: callers retry until one is set.
	c.nodes[leader].HandleCalls(nil)
	short, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	_, err := c.nodes[f].CallLeader(short, []byte("x"))
	cancel()
	if !errors.Is(err, ErrNoQuorum) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("call to a leader without a handler: %v, want ErrNoQuorum and the deadline", err)
	}
	done := make(chan error, 1)
	go func() {
		got, err := c.nodes[f].CallLeader(ctx, []byte("waited"))
		if err == nil && !strings.HasSuffix(string(got), ": waited") {
			err = fmt.Errorf("answer %q", got)
		}
		done <- err
	}()
	c.nodes[leader].HandleCalls(echoFrom(leader + 1))
	if err := <-done; err != nil {
		t.Fatalf("call waiting for a handler: %v", err)
	}

	// Failover: the calls follow the leadership.
	c.stop(leader)
	next := c.leader()
	callsReach(next)

	// A closed node refuses at once.
	q := c.nodes[next]
	c.stop(next)
	if _, err := q.CallLeader(ctx, []byte("x")); !errors.Is(err, ErrClosed) {
		t.Fatalf("call on a closed node: %v, want ErrClosed", err)
	}
}

// A quorum of one without voters (no port) answers its own calls.
func TestCallLeaderStandalone(t *testing.T) {
	c := newCluster(t, 1, func(cfg *Config) {
		singleVoterTimeouts(cfg)
		cfg.Voters = nil
	})
	c.leader()
	c.nodes[0].HandleCalls(echoFrom(1))
	got, err := c.nodes[0].CallLeader(ctxT(t), []byte("hi"))
	if err != nil || string(got) != "node 1: hi" {
		t.Fatalf("standalone call: %q, %v", got, err)
	}
}

// FuzzCallFrame: any bytes as a call request or reply give a frame or an
// error, never a panic or a frame over the limit; every status maps to an
// answer or an error.
func FuzzCallFrame(f *testing.F) {
	var b bytes.Buffer
	writeFrame(&b, []byte{callOK}, []byte("answer"))
	f.Add(b.Bytes())
	f.Add([]byte{callFailed, 0, 0, 0, 2, 'n', 'o'})
	f.Add([]byte{9, 0xff, 0xff, 0xff, 0xff})
	f.Fuzz(func(t *testing.T, data []byte) {
		if frame, err := readFrame(bufio.NewReader(bytes.NewReader(data))); err == nil && len(frame) > maxForwardFrame {
			t.Fatalf("request frame of %d bytes over the limit", len(frame))
		}
		status, body, err := readCallReply(bufio.NewReader(bytes.NewReader(data)))
		if err != nil {
			return
		}
		if len(body) > maxForwardFrame {
			t.Fatalf("reply frame of %d bytes over the limit", len(body))
		}
		answer, err := callResult(status, body, "x")
		if (err == nil) != (status == callOK) || (err == nil && !bytes.Equal(answer, body)) {
			t.Fatalf("status %d gave answer %q, error %v", status, answer, err)
		}
	})
}
