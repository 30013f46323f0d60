package main

import (
	"testing"

	"github.com/runnel-io/runnel/broker/brokertest"
	"github.com/twmb/franz-go/pkg/kfake"
)

// startTestBroker starts a single-node Runnel broker on loopback for one
// test and returns its address. Every test reaches the broker only through
// this address.
func startTestBroker(t *testing.T) (addr string) {
	t.Helper()
	// Kafka's 3 s wait for more members before a new group's first
	// rebalance only slows tests that join one member at a time (as
	// Kafka's own test harness sets it).
	return brokertest.Start(t, map[string]string{"group.initial.rebalance.delay.ms": "0"}).Addr()
}

// startKfake starts franz-go's in-memory Kafka (kfake, one broker) on
// loopback and returns its address. The group tests run against it as a
// second target: it follows Apache Kafka's group coordinator closely, so a
// test that passes there and fails on Runnel points at the broker, and the
// CLI is shown to work against a Kafka that is not Runnel.
func startKfake(t *testing.T) (addr string) {
	t.Helper()
	c, err := kfake.NewCluster(kfake.NumBrokers(1))
	if err != nil {
		t.Fatalf("kfake: %v", err)
	}
	t.Cleanup(c.Close)
	return c.ListenAddrs()[0]
}
