package connect_test

import (
	"testing"

	"go.uber.org/goleak"
)

// Workers start and stop many goroutines (tasks, topic readers, the
// group, the REST server): Close must wait for every one.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m,
		// pebble's and the broker's background goroutines belong to the
		// in-process brokers the tests start; the brokers stop with them.
		goleak.IgnoreTopFunction("github.com/cockroachdb/pebble/v2.(*DB).maybeScheduleCompaction"),
	)
}
