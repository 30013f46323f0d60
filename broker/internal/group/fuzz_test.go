package group

import (
	"testing"
	"time"
)

// FuzzLoad feeds arbitrary records to Load, as a damaged or foreign
// __consumer_offsets partition would: an error or nothing, never a panic.
func FuzzLoad(f *testing.F) {
	o := offsetRecord("g", "t", 3, &committed{offset: 5, leaderEpoch: 1, metadata: "m", commitTime: time.UnixMilli(9)})
	g := newGroup("g", time.UnixMilli(1))
	g.protocolType, g.generation = "consumer", 2
	gr := groupRecord(g, nil)
	f.Add(o.Key, o.Value)
	f.Add(gr.Key, gr.Value)
	f.Add(gr.Key, []byte(nil))
	f.Add([]byte{0, 9}, []byte{1})
	f.Fuzz(func(t *testing.T, key, value []byte) {
		c := New(Config{})
		_ = c.Load(time.UnixMilli(1), key, value)
		_ = c.List()
		_ = c.FetchOffsets("g", nil)
		_ = c.Tick(time.UnixMilli(2))
	})
}
