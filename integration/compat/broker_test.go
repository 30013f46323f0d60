package compat

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kfake"
)

// startBroker starts a single-node broker for one test on a free loopback port
// and returns its bootstrap address (host:port). The broker stops when the
// test ends. Every test in this package gets its broker here and nowhere else.
//
// TODO(lead): switch to brokertest.Start (broker/brokertest) once the Runnel
// broker serves these clients. Until then this is franz-go's kfake, which
// proves the tests and the client plumbing.
func startBroker(t *testing.T) (addr string) {
	t.Helper()
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.AllowAutoTopicCreation())
	if err != nil {
		t.Fatalf("start broker: %v", err)
	}
	t.Cleanup(c.Close)
	return c.ListenAddrs()[0]
}
