package quorum

import (
	"strconv"
	"testing"
)

// BenchmarkPropose measures one proposal at a time (each committed on a
// majority, fsynced by bbolt, applied, and for a follower forwarded and
// applied locally too) on a three-voter loopback cluster.
func BenchmarkPropose(b *testing.B) {
	for _, from := range []string{"leader", "follower"} {
		b.Run(from, func(b *testing.B) {
			c := newCluster(b, 3, nil)
			leader := c.leader()
			q := c.nodes[leader]
			if from == "follower" {
				q = c.nodes[c.follower(leader)]
			}
			ctx := b.Context()
			b.ResetTimer()
			for i := range b.N {
				if err := q.Propose(ctx, topic(from+strconv.Itoa(i))); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
