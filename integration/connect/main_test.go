// Package connect tests Runnel Connect as users run it: `runnel connect`
// worker processes, killed and restarted, against brokers and a private
// PostgreSQL.
package connect

import (
	"testing"

	"github.com/runnel-io/runnel/broker/brokertest"
)

// TestMain removes the runnel binary brokertest.BuildRunnel built.
func TestMain(m *testing.M) { brokertest.Main(m) }
