package streamstest

import (
	"github.com/runnel-io/runnel/streams"
)

// WindowStore returns the live windows of a window store (a windowed
// aggregation's, or one made with streams.NewWindowStore) across all its
// partitions, by key and window, or fails the test.
func WindowStore[K comparable, V any](d *Driver, name string) map[streams.Windowed[K]]V {
	d.tb.Helper()
	out := map[streams.Windowed[K]]V{}
	for _, s := range storeHandles[*streams.WindowStore[K, V]](d, name) {
		for kv, err := range s.All() {
			if err != nil {
				d.tb.Fatalf("streamstest: store %q: %v", name, err)
			}
			out[kv.Key] = kv.Value
		}
	}
	return out
}

// SessionStore returns the live sessions of the given keys in a session
// store (a session-windowed aggregation's, or one made with
// streams.NewSessionStore) across all its partitions, or fails the test.
// A session store can only be read key by key, as in Kafka Streams.
func SessionStore[K comparable, V any](d *Driver, name string, keys ...K) map[streams.Windowed[K]]V {
	d.tb.Helper()
	out := map[streams.Windowed[K]]V{}
	for _, s := range storeHandles[*streams.SessionStore[K, V]](d, name) {
		for _, k := range keys {
			for kv, err := range s.Fetch(k) {
				if err != nil {
					d.tb.Fatalf("streamstest: store %q: %v", name, err)
				}
				out[kv.Key] = kv.Value
			}
		}
	}
	return out
}

// storeHandles returns the typed handles of a store's partitions, or fails
// the test.
func storeHandles[S any](d *Driver, name string) []S {
	d.tb.Helper()
	sub, ok := d.eng.Stores()[name]
	if !ok {
		d.tb.Fatalf("streamstest: no store %q", name)
	}
	var out []S
	for p := int32(0); p < d.subtopologyPartitions(sub); p++ {
		h, err := d.eng.Store(name, p)
		if err != nil {
			d.tb.Fatalf("streamstest: store %q: %v", name, err)
		}
		s, ok := h.(S)
		if !ok {
			var want S
			d.tb.Fatalf("streamstest: store %q is a %T, not a %T", name, h, want)
		}
		out = append(out, s)
	}
	return out
}
