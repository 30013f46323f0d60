package compat

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

// debianPython is the interpreter Debian's python3-kafka installs for. The
// first python3 on PATH may be another one (pyenv) without kafka-python.
const debianPython = "/usr/bin/python3"

// pythonDriver returns Debian's python and the kafka-python driver, failing
// the test when kafka-python or one of its codecs is not installed.
func pythonDriver(t *testing.T) (python, script string) {
	t.Helper()
	if _, err := os.Stat(debianPython); err != nil {
		t.Fatalf("%s is missing: run `make tools`: %v", debianPython, err)
	}
	script, err := filepath.Abs(filepath.Join("..", "clients", "python", "roundtrip.py"))
	if err != nil {
		t.Fatal(err)
	}
	ctx := testContext(t, 30*time.Second)
	for _, mod := range []string{"kafka", "snappy", "lz4", "zstandard"} {
		runToolOr(t, ctx, "python module "+mod+" is not installed for "+debianPython+": run `make tools`",
			debianPython, "-c", "import "+mod)
	}
	return debianPython, script
}

// TestKafkaPython produces with kafka-python's KafkaProducer and consumes with
// its KafkaConsumer on an assigned partition (no group), once per codec.
func TestKafkaPython(t *testing.T) {
	t.Parallel()
	python, script := pythonDriver(t)
	addr := startBroker(t)
	for _, codec := range codecs {
		t.Run(codec, func(t *testing.T) {
			topic := topicName(t)
			createTopic(t, addr, topic, 1)
			want := sampleRecords(20, codec)

			req := driverRequest{Brokers: []string{addr}, Topic: topic, Codec: codec, Records: want}
			resp := runDriver(t, 60*time.Second, req, python, script, "produce")
			assertProduced(t, "kafka-python", resp.Produced, want)

			assertRecords(t, "log after kafka-python produce", readLog(t, addr, topic, 1, len(want), codec), want)

			req = driverRequest{Brokers: []string{addr}, Topic: topic, Codec: codec, Count: len(want)}
			resp = runDriver(t, 60*time.Second, req, python, script, "consume")
			assertRecords(t, "kafka-python consume", resp.Consumed, want)
		})
	}
}
