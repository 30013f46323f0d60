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
// through codec plugins) and consumes with a kafkajs consumer. A kafkajs
// consumer always joins a consumer group, so the group-consume subtests need
// the group coordinator (FindCoordinator, JoinGroup, SyncGroup, Heartbeat,
// OffsetFetch); the produce half does not.
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

			t.Run("group-consume", func(t *testing.T) {
				req := driverRequest{Brokers: []string{addr}, Topic: topic, Codec: codec, Count: len(want), Group: topic + ".group"}
				resp := runDriver(t, 60*time.Second, req, node, script, "consume")
				assertRecords(t, "kafkajs consume", resp.Consumed, want)
			})
		})
	}
}
