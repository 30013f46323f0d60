package quorum

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"testing"

	"github.com/hashicorp/raft"

	"github.com/runnel-io/runnel/broker/internal/metadata"
)

// FuzzFSM: any entry data and any snapshot bytes give an applied entry or
// an error, never a panic, and a refused entry leaves the image alone.
func FuzzFSM(f *testing.F) {
	cmd, _ := encode([]metadata.Record{topic("a"), {DeleteTopic: &metadata.DeleteTopic{Name: "a"}}})
	f.Add(cmd, []byte(`{"applied":3}`+"\n"+`{"version":1}`))
	f.Add([]byte(`[{}]`), []byte(`{"applied":1}`))
	f.Add([]byte(`null`), []byte(`{}`))
	f.Fuzz(func(t *testing.T, data, snap []byte) {
		m := newFSM()
		before := m.image.Load()
		if err, _ := m.Apply(&raft.Log{Index: 1, Data: data}).(error); err != nil && m.image.Load() != before {
			t.Fatalf("refused entry changed the image: %v", err)
		}
		if m.applied.Load() != 1 {
			t.Fatal("applied index did not move")
		}
		_ = m.Restore(io.NopCloser(bytes.NewReader(snap)))
	})
}

// FuzzForwardFrame: any bytes on a forward connection give a frame or an
// error, and any reply decodes to an error or success, never a panic.
func FuzzForwardFrame(f *testing.F) {
	var b bytes.Buffer
	writeFrame(&b, nil, []byte(`{"code":"topic_exists","message":"x"}`))
	f.Add(b.Bytes())
	f.Add([]byte{0xff, 0xff, 0xff, 0xff})
	f.Fuzz(func(t *testing.T, data []byte) {
		frame, err := readFrame(bufio.NewReader(bytes.NewReader(data)))
		if err != nil {
			return
		}
		if len(frame) > maxForwardFrame {
			t.Fatalf("frame of %d bytes over the limit", len(frame))
		}
		var r forwardReply
		if json.Unmarshal(frame, &r) == nil {
			_ = r.err()
		}
	})
}
