package groups

import (
	"os"
	"testing"

	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/runnel-io/runnel/broker/brokertest"
	"github.com/runnel-io/runnel/internal/groupmember"
)

func TestMain(m *testing.M) {
	groupmember.MainIfChild()
	os.Exit(m.Run())
}

// startBroker starts a single-node Runnel broker on a free loopback port
// for one test and returns its address (kfake with RUNNEL_TEST_KFAKE=1).
func startBroker(t *testing.T) (addr string) {
	t.Helper()
	if os.Getenv("RUNNEL_TEST_KFAKE") == "1" {
		c, err := kfake.NewCluster(kfake.NumBrokers(1))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(c.Close)
		return c.ListenAddrs()[0]
	}
	return brokertest.Start(t).Addr()
}
