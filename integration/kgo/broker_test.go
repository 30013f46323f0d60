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

// clusterSettings are the settings of every node of the cluster run. They
// match what a three-node Kafka cluster runs with: internal topics and topics
// created without a replication factor get three replicas (Runnel's defaults
// are 1, for single nodes). min.insync.replicas stays at Kafka's default, 1:
// the suite creates topics with KGO_TEST_RF and sets no min.insync.replicas.
var clusterSettings = map[string]string{
	"offsets.topic.replication.factor":         "3",
	"transaction.state.log.replication.factor": "3",
	"default.replication.factor":               "3",
}

// startCluster starts an n-node Runnel cluster (brokertest.StartCluster) for
// one test and returns the nodes' addresses.
func startCluster(t *testing.T, n int) (seeds []string) {
	t.Helper()
	return brokertest.StartCluster(t, n, clusterSettings).Seeds()
}
