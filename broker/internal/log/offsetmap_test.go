package log

import (
	"fmt"
	"testing"
)

func TestOffsetMap(t *testing.T) {
	m := NewOffsetMap(24*20_000, 0)
	if m.MaxEntries() != 18_000 {
		t.Fatalf("MaxEntries = %d, want 90%% of 20000 slots", m.MaxEntries())
	}
	if got := m.Get([]byte("absent")); got != -1 {
		t.Fatalf("Get on an empty map = %d", got)
	}
	for round := range 2 { // the second round after Reset reuses the memory
		for i := range m.MaxEntries() {
			m.Put(fmt.Appendf(nil, "key-%d", i), int64(i))
		}
		for i := range m.MaxEntries() { // newer offsets replace older ones
			if i%3 == 0 {
				m.Put(fmt.Appendf(nil, "key-%d", i), int64(100_000+i))
			}
		}
		if m.Len() != m.MaxEntries() {
			t.Fatalf("round %d: Len = %d, want %d", round, m.Len(), m.MaxEntries())
		}
		for i := range m.MaxEntries() {
			want := int64(i)
			if i%3 == 0 {
				want = 100_000 + int64(i)
			}
			if got := m.Get(fmt.Appendf(nil, "key-%d", i)); got != want {
				t.Fatalf("round %d: Get(key-%d) = %d, want %d", round, i, got, want)
			}
		}
		if got := m.Get([]byte("key-x")); got != -1 {
			t.Fatalf("Get of a key never put = %d", got)
		}
		if len(m.slots) > 20_000 {
			t.Fatalf("%d slots, over the 20000 the budget buys", len(m.slots))
		}
		m.Reset()
		if m.Len() != 0 || m.Get([]byte("key-1")) != -1 {
			t.Fatal("Reset kept keys")
		}
	}
}
