package compat

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

// nodeDriver returns the path of the kafkajs driver, failing the test when
// node or the driver's npm packages are not installed.
func nodeDriver(t *testing.T) (node, script string) {
	t.Helper()
	node = lookTool(t, "node")
	dir, err := filepath.Abs(filepath.Join("..", "clients", "node"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "kafkajs", "package.json")); err != nil {
		t.Fatalf("kafkajs is not installed in %s: run `make tools`: %v", dir, err)
	}
	return node, filepath.Join(dir, "roundtrip.js")
}

// TestKafkaJS produces with kafkajs (one send per codec; snappy, lz4 and zstd
// through codec plugins), checks the log holds exactly those records, and
// consumes them with kafkajs, which always does so in a consumer group.
func TestKafkaJS(t *testing.T) {
	t.Parallel()
	node, script := nodeDriver(t)
	addr := startBroker(t)
	for _, codec := range codecs {
		t.Run(codec, func(t *testing.T) {
			topic := topicName(t)
			createTopic(t, addr, topic, 1)
			want := sampleRecords(20, codec)

			req := driverRequest{Brokers: []string{addr}, Topic: topic, Codec: codec, Records: want}
			resp := runDriver(t, 60*time.Second, req, node, script, "produce")
			assertProduced(t, "kafkajs", resp.Produced, want)

			assertRecords(t, "log after kafkajs produce", readLog(t, addr, topic, 1, len(want), codec), want)

			req = driverRequest{Brokers: []string{addr}, Topic: topic, Group: topic + ".group", Count: len(want)}
			resp = runDriver(t, 60*time.Second, req, node, script, "consume")
			assertRecords(t, "kafkajs consume", resp.Consumed, want)
		})
	}
}
