package broker_test

import (
	"testing"
	"time"

	"github.com/runnel-io/runnel/broker/brokertest"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func TestScratchManyPartitions(t *testing.T) {
	b := brokertest.Start(t)
	rc := dialRaw(t, b.Addr())
	start := time.Now()
	got := rc.createTopics(false, topicReq("huge", 20000, 1, nil))
	t.Logf("create 20000 partitions: %s %q in %v", errName(got[0].ErrorCode), deref(got[0].ErrorMessage), time.Since(start))
	other := dialRaw(t, b.Addr())
	other.metadataOK()
	req := kmsg.NewPtrMetadataRequest()
	req.Version = 12
	_ = req
}
