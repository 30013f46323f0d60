package cluster

import (
	"testing"

	"github.com/runnel-io/runnel/broker/brokertest"
)

// TestMain removes the runnel binary brokertest.BuildRunnel built for
// every node of every test.
func TestMain(m *testing.M) { brokertest.Main(m) }
