package group

import (
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// FuzzLoad feeds arbitrary records to Load (or, with a producer id, to
// LoadTxn, maybe followed by its marker), as a damaged or foreign
// __consumer_offsets partition would, then drives the loaded groups (a
// heartbeat, session expiry, a stable fetch, the transaction's end): an
// error or nothing, never a panic.
func FuzzLoad(f *testing.F) {
	o := offsetRecord("g", "t", 3, &committed{offset: 5, leaderEpoch: 1, metadata: "m", commitTime: time.UnixMilli(9)})
	g := newGroup("g", time.UnixMilli(1))
	g.protocolType, g.generation = "consumer", 2
	gr := groupRecord(g, nil)
	g.protocol, g.leader, g.state = "range", "m-1", Stable
	g.members = []*member{{id: "m-1", instanceID: "i", clientID: "c", sessionTimeout: time.Second, rebalanceTimeout: time.Second,
		protocols: []kmsg.JoinGroupRequestProtocol{{Name: "range", Metadata: []byte("s")}}, assignment: []byte("a")}}
	withMembers := groupRecord(g, nil)
	f.Add(o.Key, o.Value, int64(-1), byte(0))
	f.Add(gr.Key, gr.Value, int64(-1), byte(0))
	f.Add(withMembers.Key, withMembers.Value, int64(-1), byte(0))
	f.Add(gr.Key, []byte(nil), int64(-1), byte(0))
	f.Add([]byte{0, 9}, []byte{1}, int64(-1), byte(0))
	f.Add(o.Key, o.Value, int64(4), byte(0))
	f.Add(o.Key, o.Value, int64(4), byte(3))
	f.Add(o.Key, []byte(nil), int64(4), byte(2))
	f.Fuzz(func(t *testing.T, key, value []byte, producer int64, marker byte) {
		c := New(Config{})
		_ = c.LoadTxn(time.UnixMilli(1), producer, key, value)
		if marker&2 != 0 {
			c.LoadMarker(time.UnixMilli(1), producer, marker&1 != 0)
		}
		_ = c.Loaded(time.UnixMilli(1))
		_ = c.List()
		_ = c.Describe("g")
		_ = c.FetchOffsets("g", nil, false)
		_ = c.FetchOffsets("g", []kmsg.OffsetFetchRequestTopic{{Topic: "t", Partitions: []int32{3}}}, true)
		hb := kmsg.NewPtrHeartbeatRequest()
		hb.Group, hb.MemberID = "g", "m-1"
		_ = c.Heartbeat(time.UnixMilli(2), hb)
		_ = c.Tick(time.UnixMilli(2))
		_ = c.Tick(time.UnixMilli(1 << 40))
		_ = c.CompleteTxn(time.UnixMilli(1<<40), producer, marker&1 != 0)
	})
}
