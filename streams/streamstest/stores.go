package streamstest

import (
	"github.com/runnel-io/runnel/streams"
)

// KeyValueStore returns the contents of a key-value store across all its
// partitions (the tasks the driver has opened), or fails the test.
func KeyValueStore[K comparable, V any](d *Driver, name string) map[K]V {
	d.tb.Helper()
	out := map[K]V{}
	for _, s := range storeHandles[*streams.KeyValueStore[K, V]](d, name) {
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
