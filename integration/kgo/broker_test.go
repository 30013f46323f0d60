//go:build !kfake

package kgo

import (
	"testing"

	"github.com/runnel-io/runnel/broker/brokertest"
)

// startBroker starts a single-node Runnel broker on a free loopback port for
// one test and returns its address; every test reaches the broker through it.
func startBroker(t *testing.T) (addr string) {
	t.Helper()
	return brokertest.Start(t).Addr()
}
