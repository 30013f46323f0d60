//go:build kfake

package compat

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kfake"
)

// startBroker, under `-tags kfake`, starts franz-go's in-memory kfake cluster
// instead of Runnel: a reference to tell a broker bug from a wrong test. What
// `make test` runs (no tag) tests Runnel (broker_test.go).
func startBroker(t *testing.T) (addr string) {
	t.Helper()
	c, err := kfake.NewCluster(kfake.NumBrokers(1))
	if err != nil {
		t.Fatalf("kfake: %v", err)
	}
	t.Cleanup(c.Close)
	return c.ListenAddrs()[0]
}
