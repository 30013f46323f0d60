package kgo

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kfake"
)

// startBroker starts a single-node broker for the suite on a free loopback
// port and returns its bootstrap address (host:port). It stops when the test
// ends.
//
// TODO(lead): switch to brokertest.Start (broker/brokertest), as in
// integration/compat/broker_test.go. Until then this is franz-go's kfake, which
// proves the runner; the allow-list below is what kfake passes.
func startBroker(t *testing.T) (addr string) {
	t.Helper()
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.AllowAutoTopicCreation())
	if err != nil {
		t.Fatalf("start broker: %v", err)
	}
	t.Cleanup(c.Close)
	return c.ListenAddrs()[0]
}
