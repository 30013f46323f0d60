package streamstest

import (
	"github.com/runnel-io/runnel/streams"
)

// KeyValueStore returns the contents of a key-value store across all its
// partitions (the tasks the driver has opened), or fails the test.
func KeyValueStore[K comparable, V any](d *Driver, name string) map[K]V {
	d.tb.Helper()
	sub, ok := d.eng.Stores()[name]
	if !ok {
		d.tb.Fatalf("streamstest: no store %q", name)
	}
	out := map[K]V{}
	for p := int32(0); p < d.subtopologyPartitions(sub); p++ {
		h, err := d.eng.Store(name, p)
		if err != nil {
			d.tb.Fatalf("streamstest: store %q: %v", name, err)
		}
		s, ok := h.(*streams.KeyValueStore[K, V])
		if !ok {
			d.tb.Fatalf("streamstest: store %q is a %T", name, h)
		}
		for kv, err := range s.All() {
			if err != nil {
				d.tb.Fatalf("streamstest: store %q: %v", name, err)
			}
			out[kv.Key] = kv.Value
		}
	}
	return out
}

// subtopologyPartitions is the partition count of a subtopology's input
// topics (the largest, should they differ).
func (d *Driver) subtopologyPartitions(sub int) int32 {
	var n int32 = 1
	for topic := range d.inputs {
		if s, ok := d.eng.SubtopologyOf(topic); ok && s == sub {
			if p, _ := d.partitions(topic); p > n {
				n = p
			}
		}
	}
	return n
}
