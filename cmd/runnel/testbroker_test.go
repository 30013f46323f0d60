package main

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kfake"
)

// startTestBroker starts a single-node cluster on loopback for one test and
// returns its address. Every test reaches the broker only through this
// address, so swapping the implementation changes nothing else.
//
// TODO(lead): switch to brokertest.Start once broker/brokertest lands.
func startTestBroker(t *testing.T) (addr string) {
	t.Helper()
	c, err := kfake.NewCluster(kfake.NumBrokers(1))
	if err != nil {
		t.Fatalf("starting test broker: %v", err)
	}
	t.Cleanup(c.Close)
	return c.ListenAddrs()[0]
}
