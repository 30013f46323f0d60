package group

import (
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// FuzzLoad feeds arbitrary records to Load, as a damaged or foreign
// __consumer_offsets partition would, then drives the loaded groups (a
// heartbeat, session expiry): an error or nothing, never a panic.
func FuzzLoad(f *testing.F) {
	o := offsetRecord("g", "t", 3, &committed{offset: 5, leaderEpoch: 1, metadata: "m", commitTime: time.UnixMilli(9)})
	g := newGroup("g", time.UnixMilli(1))
	g.protocolType, g.generation = "consumer", 2
	gr := groupRecord(g, nil)
	g.protocol, g.leader, g.state = "range", "m-1", Stable
	g.members = []*member{{id: "m-1", instanceID: "i", clientID: "c", sessionTimeout: time.Second, rebalanceTimeout: time.Second,
		protocols: []kmsg.JoinGroupRequestProtocol{{Name: "range", Metadata: []byte("s")}}, assignment: []byte("a")}}
	withMembers := groupRecord(g, nil)
	f.Add(o.Key, o.Value)
	f.Add(gr.Key, gr.Value)
	f.Add(withMembers.Key, withMembers.Value)
	f.Add(gr.Key, []byte(nil))
	f.Add([]byte{0, 9}, []byte{1})
	f.Fuzz(func(t *testing.T, key, value []byte) {
		c := New(Config{})
		_ = c.Load(time.UnixMilli(1), key, value)
		_ = c.Loaded(time.UnixMilli(1))
		_ = c.List()
		_ = c.Describe("g")
		_ = c.FetchOffsets("g", nil)
		hb := kmsg.NewPtrHeartbeatRequest()
		hb.Group, hb.MemberID = "g", "m-1"
		_ = c.Heartbeat(time.UnixMilli(2), hb)
		_ = c.Tick(time.UnixMilli(2))
		_ = c.Tick(time.UnixMilli(1 << 40))
	})
}
