package assign

import (
	"fmt"
	"testing"
)

// BenchmarkRebalance is one leader balance of a large group: 50 members
// that own a balanced share of 2x512 tasks, one of them gone, standbys 1.
// It runs once per rebalance (not per record), so it only needs to stay
// far below a session timeout.
func BenchmarkRebalance(b *testing.B) {
	cfg := Config{Subtopologies: [][]string{{"a", "b"}, {"c"}}, Standbys: 1}
	counts := map[string]int32{"a": 512, "b": 512, "c": 512}
	s := newSim(b, cfg, counts)
	for i := range 51 {
		s.add(fmt.Sprintf("m%02d", i))
	}
	s.converge()
	s.remove("m07")
	members := s.joinMembers()
	leader := s.members[0].b
	b.ReportAllocs()
	for b.Loop() {
		balance(b, leader, members, counts)
	}
}
