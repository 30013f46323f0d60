package quorum

import (
	"bufio"
	"encoding/json"
	"errors"
	"io"
	"net"
	"testing"
	"time"

	"github.com/runnel-io/runnel/broker/internal/metadata"
)

// Bad bytes on the controller port close that connection and nothing
// else: an unknown protocol byte, an oversized forward frame, a forwarded
// proposal that is not records' JSON (refused before it reaches the log).
func TestControllerPortBadInput(t *testing.T) {
	c := newCluster(t, 1, nil)
	ctx := ctxT(t)
	c.leader()
	addr := c.voters[0].Addr()
	closed := func(what string, payload []byte) {
		t.Helper()
		conn, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		conn.SetDeadline(time.Now().Add(waitDeadline))
		if _, err := conn.Write(payload); err != nil {
			t.Fatal(err)
		}
		conn.(*net.TCPConn).CloseWrite()
		if _, err := conn.Read(make([]byte, 1)); !errors.Is(err, io.EOF) {
			t.Fatalf("%s: read %v, want the server to close the connection", what, err)
		}
	}
	closed("unknown protocol byte", []byte{'X'})
	closed("oversized forward frame", []byte{kindForward, 0xff, 0xff, 0xff, 0xff})
	closed("truncated forward frame", []byte{kindForward, 0, 0, 0, 9, '['})

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
