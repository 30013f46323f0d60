//go:build kfake

package kgo

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kfake"
)

// startBroker, under `-tags kfake`, starts franz-go's in-memory kfake cluster
// instead of Runnel: a reference to tell a broker bug from a wrong test. What
// `make test` runs (no tag) tests Runnel (broker_test.go).
func startBroker(t *testing.T) (addr string) {
	t.Helper()
	return startCluster(t, 1)[0]
}

// startCluster, under `-tags kfake`, starts a kfake cluster of n brokers.
func startCluster(t *testing.T, n int) (seeds []string) {
	t.Helper()
	c, err := kfake.NewCluster(kfake.NumBrokers(n))
	if err != nil {
		t.Fatalf("kfake: %v", err)
	}
	t.Cleanup(c.Close)
	return c.ListenAddrs()
}
