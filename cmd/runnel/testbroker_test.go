package main

import (
	"testing"

	"github.com/runnel-io/runnel/broker/brokertest"
)

// startTestBroker starts a single-node Runnel broker on loopback for one
// test and returns its address. Every test reaches the broker only through
// this address.
func startTestBroker(t *testing.T) (addr string) {
	t.Helper()
	return brokertest.Start(t).Addr()
}
