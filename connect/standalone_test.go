package connect_test

import (
	"fmt"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/runnel-io/runnel/broker/brokertest"
	"github.com/runnel-io/runnel/connect"
	"github.com/runnel-io/runnel/connect/connecttest"
)

func fileConnectors(dir string) (source, sink connect.Config) {
	source = connect.Config{
		"name":             "lines-in",
		"connector.class":  "FileStreamSource",
		"file":             filepath.Join(dir, "in.jsonl"),
		"format":           "json",
		"topic":            "lines",
		"poll.interval.ms": "10",
	}
	sink = connect.Config{
		"name":            "lines-out",
		"connector.class": "FileStreamSink",
		"file":            filepath.Join(dir, "out.jsonl"),
		"topics":          "lines",
	}
	return source, sink
}

// copyFileThroughTopic runs file → topic → file on brokers at seeds, stops
// the worker half way, and checks every line arrives once the second
// worker resumed from the stored offsets.
func copyFileThroughTopic(t *testing.T, seeds []string) {
	dir := t.TempDir()
	source, sink := fileConnectors(dir)
	in, out := source["file"], sink["file"]
	var want []string
	for i := range 500 {
		want = append(want, fmt.Sprintf(`{"id":%d,"name":"item-%d"}`, i, i))
	}
	connecttest.AppendLines(t, in, want[:250]...)

	w := connecttest.StartWorker(t, seeds, dir, nil, nil, source, sink)
	connecttest.WaitFor(t, 20*time.Second, "the first 250 lines in the output file", func() bool { return len(connecttest.ReadLines(t, out)) >= 250 })
	w.Close()

	// The second worker resumes at the stored byte position: nothing is
	// read twice from the file, and lines appended meanwhile arrive.
	connecttest.AppendLines(t, in, want[250:]...)
	connecttest.StartWorker(t, seeds, dir, nil, nil, source, sink)
	connecttest.WaitFor(t, 20*time.Second, "all 500 lines in the output file", func() bool { return len(connecttest.ReadLines(t, out)) >= 500 })
	got := connecttest.ReadLines(t, out)
	slices.Sort(got)
	sorted := slices.Clone(want)
	slices.Sort(sorted)
	if !slices.Equal(got, sorted) {
		t.Fatalf("output has %d lines, want the 500 input lines once each", len(got))
	}
}

func TestStandaloneCopiesAFileThroughATopic(t *testing.T) {
	b := brokertest.Start(t)
	copyFileThroughTopic(t, []string{b.Addr()})
}

// The runtime depends only on the Kafka protocol: the same pipeline runs
// on franz-go's kfake.
func TestStandaloneCopiesAFileThroughATopicKfake(t *testing.T) {
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, "lines"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	copyFileThroughTopic(t, c.ListenAddrs())
}
