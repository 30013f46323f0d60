package quorum

import (
	"bufio"
	"encoding/json"
	"errors"
	"io"
	"net"
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/runnel-io/runnel/broker/internal/metadata"
)

// Bad bytes on the controller port close that connection and nothing
// else: an unknown protocol byte, an oversized forward frame, a forwarded
// proposal that is not records' JSON (refused before it reaches the log).
func TestControllerPortBadInput(t *testing.T) {
	c := newCluster(t, 1, singleVoterTimeouts)
	ctx := ctxT(t)
	c.leader()
	addr := c.voters[0].Addr()
	// The server must close the connection by itself, well before its own
	// timeouts (routeTimeout, forwardReadTimeout: 10 s): the client keeps
	// its side open, and a read that times out is a failure. With
	// halfClose the client ends its side after payload, for input whose
	// bad part is the early end.
	closed := func(what string, payload []byte, halfClose bool) {
		t.Helper()
		conn, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		if _, err := conn.Write(payload); err != nil {
			t.Fatal(err)
		}
		if halfClose {
			conn.(*net.TCPConn).CloseWrite()
		}
		conn.SetReadDeadline(time.Now().Add(5 * time.Second))
		n, err := conn.Read(make([]byte, 1))
		switch {
		case n > 0:
			t.Fatalf("%s: the server answered, want it to close the connection", what)
		case errors.Is(err, os.ErrDeadlineExceeded):
			t.Fatalf("%s: the connection still open after 5s, want the server to close it", what)
		case errors.Is(err, io.EOF), errors.Is(err, syscall.ECONNRESET):
			// Closed (a reset if the server closed with input unread).
		default:
			t.Fatalf("%s: read %v, want the server to close the connection", what, err)
		}
	}
	closed("unknown protocol byte", []byte{'X'}, false)
	closed("oversized forward frame", []byte{kindForward, 0xff, 0xff, 0xff, 0xff}, false)
	closed("oversized call frame", []byte{kindCall, 0xff, 0xff, 0xff, 0xff}, false)
	closed("truncated call frame", []byte{kindCall, 0, 0, 0, 9, 'x'}, true)
	// The server cannot know a frame is truncated until the input ends.
	closed("truncated forward frame", []byte{kindForward, 0, 0, 0, 9, '['}, true)

	// After a Sync the leader's own entries (configuration, no-op) are in.
	if err := c.nodes[0].Sync(ctx); err != nil {
		t.Fatal(err)
	}
	last := c.nodes[0].raft.LastIndex()
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(waitDeadline))
	if err := writeFrame(conn, []byte{kindForward}, []byte(`{"not":"records"}`)); err != nil {
		t.Fatal(err)
	}
	b, err := readFrame(bufio.NewReader(conn))
	if err != nil {
		t.Fatal(err)
	}
	var r forwardReply
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatal(err)
	}
	if !errors.Is(r.err(), metadata.ErrBadRecord) {
		t.Fatalf("reply %+v, want bad_record", r)
	}
	if err := c.nodes[0].Propose(ctx, topic("ok")); err != nil {
		t.Fatal(err)
	}
	// Only the good proposal used an index of the log.
	if got := c.nodes[0].raft.LastIndex(); got != last+1 || c.nodes[0].MetadataOffset() != got {
		t.Fatalf("last index %d (metadata offset %d), want %d", got, c.nodes[0].MetadataOffset(), last+1)
	}
}
