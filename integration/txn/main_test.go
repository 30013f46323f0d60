package txn

import (
	"testing"

	"github.com/runnel-io/runnel/broker/brokertest"
	"github.com/runnel-io/runnel/internal/groupmember"
)

func TestMain(m *testing.M) {
	// Pipeline members run in child processes: this binary.
	groupmember.MainIfChild()
	brokertest.Main(m)
}
