package log

import (
	"hash/maphash"
	"math/bits"
)

// OffsetMap maps record keys to the newest offset seen for them, within a
// fixed memory budget, for one cleaning pass. Like Kafka's SkimpyOffsetMap
// it stores a 128-bit hash of each key, not the key: 24 bytes a slot (two
// hash words and the offset), open addressing with linear probing, filled
// to at most a load factor of the slots the budget buys
// (log.cleaner.io.buffer.load.factor). Two keys whose 128-bit
// hashes collide would be taken for one (probability ~n²/2¹²⁹).
//
// The table starts small and doubles up to the budget, so a small log costs
// little memory. An OffsetMap is not safe for concurrent use; each cleaner
// goroutine owns one.
type OffsetMap struct {
	maxSlots int
	load     float64
	seed1    maphash.Seed
	seed2    maphash.Seed
	slots    []mapSlot
	n        int
}

type mapSlot struct {
	h1, h2 uint64
	off1   int64 // offset + 1; 0 marks an empty slot
}

// slotBytes is the memory one slot takes.
const slotBytes = 24

// DefaultLoadFactor is Kafka's log.cleaner.io.buffer.load.factor default.
const DefaultLoadFactor = 0.9

const minSlots = 1024

// NewOffsetMap returns a map whose table takes at most memory bytes (while
// it grows, the old table is held too, briefly about 1.5× that), its slots
// filled to at most load (0 < load <= 1; otherwise DefaultLoadFactor).
func NewOffsetMap(memory int64, load float64) *OffsetMap {
	if !(load > 0 && load <= 1) {
		load = DefaultLoadFactor
	}
	return &OffsetMap{
		maxSlots: int(max(memory/slotBytes, 16)),
		load:     load,
		seed1:    maphash.MakeSeed(),
		seed2:    maphash.MakeSeed(),
	}
}

// MaxEntries is how many keys fit in the budget.
func (m *OffsetMap) MaxEntries() int { return min(int(float64(m.maxSlots)*m.load), m.maxSlots-1) }

// Len is the number of keys held.
func (m *OffsetMap) Len() int { return m.n }

// Reset forgets every key, keeping the memory.
func (m *OffsetMap) Reset() {
	clear(m.slots)
	m.n = 0
}

// Put records offset for key; the caller puts offsets in increasing order
// and never more than MaxEntries keys.
func (m *OffsetMap) Put(key []byte, offset int64) {
	if float64(m.n+1) > float64(len(m.slots))*m.load && len(m.slots) < m.maxSlots {
		m.grow()
	}
	h1, h2 := maphash.Bytes(m.seed1, key), maphash.Bytes(m.seed2, key)
	i := m.find(h1, h2)
	if m.slots[i].off1 == 0 {
		m.n++
	}
	m.slots[i] = mapSlot{h1, h2, offset + 1}
}

// Get returns the offset recorded for key, or -1.
func (m *OffsetMap) Get(key []byte) int64 {
	if m.n == 0 {
		return -1
	}
	h1, h2 := maphash.Bytes(m.seed1, key), maphash.Bytes(m.seed2, key)
	return m.slots[m.find(h1, h2)].off1 - 1
}

// find returns the slot holding the hash, or the empty slot where it goes.
func (m *OffsetMap) find(h1, h2 uint64) int {
	n := len(m.slots)
	hi, _ := bits.Mul64(h1, uint64(n)) // h1 scaled to [0, n)
	for i := int(hi); ; i++ {
		if i == n {
			i = 0
		}
		s := &m.slots[i]
		if s.off1 == 0 || (s.h1 == h1 && s.h2 == h2) {
			return i
		}
	}
}

func (m *OffsetMap) grow() {
	size := min(max(2*len(m.slots), minSlots), m.maxSlots)
	old := m.slots
	m.slots = make([]mapSlot, size)
	for _, s := range old {
		if s.off1 != 0 {
			m.slots[m.find(s.h1, s.h2)] = s
		}
	}
}
