package compat

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os/exec"
	"reflect"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// codecs are the compression codecs every client is asked to round-trip, in
// the names used by Kafka's compression.type (and by kcat, kafkajs and
// kafka-python).
var codecs = []string{"none", "gzip", "snappy", "lz4", "zstd"}

// codecIDs are the record batch attribute values (bits 0-2) of codecs.
var codecIDs = map[string]uint8{"none": 0, "gzip": 1, "snappy": 2, "lz4": 3, "zstd": 4}

// header is one record header. Headers are a list, not a map: order and
// repeated keys must survive the round trip.
type header struct {
	Key   string `json:"key"`
	Value string `json:"value"`
}

// record is what a client wrote or read, in the shape the node and python
// drivers exchange as JSON.
type record struct {
	Partition int32    `json:"partition"`
	Offset    int64    `json:"offset"`
	Key       string   `json:"key"`
	Value     string   `json:"value"`
	Headers   []header `json:"headers"`
	Timestamp int64    `json:"timestamp"` // milliseconds since the epoch, CreateTime
}

// sampleRecords returns n records for partition 0 of a fresh topic, so with
// offsets 0..n-1. Values are long and repetitive so that every codec actually
// shrinks the batch (librdkafka and franz-go send a batch uncompressed when
// compression does not pay). The headers repeat a key (adjacent, the one
// layout every client can express) and include an empty value.
func sampleRecords(n int, codec string) []record {
	base := time.Now().Add(-time.Hour).UnixMilli()
	recs := make([]record, n)
	for i := range recs {
		recs[i] = record{
			Partition: 0,
			Offset:    int64(i),
			Key:       fmt.Sprintf("key-%d", i),
			Value:     fmt.Sprintf("value %d (%s) größe ✓ %s", i, codec, strings.Repeat("runnel streams records ", 8)),
			Headers: []header{
				{"trace", fmt.Sprintf("t-%d", i)},
				{"trace", fmt.Sprintf("t-%d-again", i)},
				{"codec", codec},
				{"empty", ""},
			},
			Timestamp: base + int64(i)*7,
		}
	}
	return recs
}

var topicUnsafe = regexp.MustCompile(`[^a-zA-Z0-9._-]+`)

// topicName derives a topic name from the test's name, so that each test
// (and subtest) writes to its own topic.
func topicName(t *testing.T) string {
	return "compat." + strings.Trim(topicUnsafe.ReplaceAllString(t.Name(), "."), ".")
}

// testContext returns a context that ends at d from now, or earlier when the
// test binary's own deadline comes first.
func testContext(t *testing.T, d time.Duration) context.Context {
	t.Helper()
	deadline := time.Now().Add(d)
	if td, ok := t.Deadline(); ok && td.Add(-5*time.Second).Before(deadline) {
		deadline = td.Add(-5 * time.Second)
	}
	ctx, cancel := context.WithDeadline(context.Background(), deadline)
	t.Cleanup(cancel)
	return ctx
}

// newAdmin returns an admin client for addr, closed when the test ends.
func newAdmin(t *testing.T, addr string) *kadm.Client {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		t.Fatalf("admin client: %v", err)
	}
	t.Cleanup(cl.Close)
	return kadm.NewClient(cl)
}

// createTopic creates topic with the given partitions (replication factor 1)
// and waits until the broker's metadata shows every partition with a leader.
func createTopic(t *testing.T, addr, topic string, partitions int32) {
	t.Helper()
	ctx := testContext(t, 30*time.Second)
	adm := newAdmin(t, addr)
	resp, err := adm.CreateTopic(ctx, partitions, 1, nil, topic)
	if err == nil {
		err = resp.Err
	}
	if err != nil {
		t.Fatalf("create topic %s: %v", topic, err)
	}
	waitFor(t, ctx, "topic "+topic+" in metadata", func() error {
		md, err := adm.Metadata(ctx, topic)
		if err != nil {
			return err
		}
		td, ok := md.Topics[topic]
		switch {
		case !ok:
			return errors.New("not in metadata")
		case td.Err != nil:
			return td.Err
		case len(td.Partitions) != int(partitions):
			return fmt.Errorf("%d partitions, want %d", len(td.Partitions), partitions)
		}
		for _, p := range td.Partitions {
			if p.Err != nil || p.Leader < 0 {
				return fmt.Errorf("partition %d: leader %d, err %v", p.Partition, p.Leader, p.Err)
			}
		}
		return nil
	})
}

// waitFor polls cond until it returns nil, failing the test with cond's last
// error when ctx ends.
func waitFor(t *testing.T, ctx context.Context, what string, cond func() error) {
	t.Helper()
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		err := cond()
		if err == nil {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("waiting for %s: %v (%v)", what, err, ctx.Err())
		case <-tick.C:
		}
	}
}

// fromKgo converts a franz-go record.
func fromKgo(r *kgo.Record) record {
	hs := make([]header, 0, len(r.Headers))
	for _, h := range r.Headers {
		hs = append(hs, header{h.Key, string(h.Value)})
	}
	return record{
		Partition: r.Partition,
		Offset:    r.Offset,
		Key:       string(r.Key),
		Value:     string(r.Value),
		Headers:   hs,
		Timestamp: r.Timestamp.UnixMilli(),
	}
}

// readLog reads partitions [0, partitions) of topic from the start with
// franz-go (no consumer group) until it has n records, checks that the end
// offsets add up to exactly n, and checks that every batch carries the
// compression codec and a CreateTime timestamp type. Records come back ordered
// by partition, then offset.
func readLog(t *testing.T, addr, topic string, partitions int32, n int, codec string) []record {
	t.Helper()
	ctx := testContext(t, 30*time.Second)
	parts := make(map[int32]kgo.Offset, partitions)
	for p := range partitions {
		parts[p] = kgo.NewOffset().AtStart()
	}
	cl, err := kgo.NewClient(
		kgo.SeedBrokers(addr),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: parts}),
		kgo.FetchMaxWait(100*time.Millisecond),
	)
	if err != nil {
		t.Fatalf("reader client: %v", err)
	}
	defer cl.Close()

	byPart := make([][]record, partitions)
	got := 0
	for got < n {
		fs := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			t.Fatalf("reading %s back with franz-go: have %d of %d records: %v", topic, got, n, err)
		}
		fs.EachError(func(topic string, p int32, err error) {
			t.Fatalf("reading %s/%d back with franz-go: %v", topic, p, err)
		})
		fs.EachRecord(func(r *kgo.Record) {
			if c := r.Attrs.CompressionType(); c != codecIDs[codec] {
				t.Errorf("offset %d/%d: batch compression %d, want %d (%s)", r.Partition, r.Offset, c, codecIDs[codec], codec)
			}
			if tt := r.Attrs.TimestampType(); tt != 0 {
				t.Errorf("offset %d/%d: timestamp type %d, want 0 (CreateTime)", r.Partition, r.Offset, tt)
			}
			byPart[r.Partition] = append(byPart[r.Partition], fromKgo(r))
			got++
		})
	}

	ends, err := newAdmin(t, addr).ListEndOffsets(ctx, topic)
	if err != nil {
		t.Fatalf("list end offsets of %s: %v", topic, err)
	}
	var total int64
	ends.Each(func(o kadm.ListedOffset) {
		if o.Err != nil {
			t.Errorf("end offset of %s/%d: %v", o.Topic, o.Partition, o.Err)
		}
		total += o.Offset
	})
	if total != int64(n) {
		t.Errorf("%s holds %d records, want exactly %d", topic, total, n)
	}

	var all []record
	for _, rs := range byPart {
		all = append(all, rs...)
	}
	return all
}

// assertRecords fails the test unless got equals want exactly, in order.
func assertRecords(t *testing.T, who string, got, want []record) {
	t.Helper()
	if reflect.DeepEqual(got, want) {
		return
	}
	t.Errorf("%s: got %d records, want %d", who, len(got), len(want))
	for i := range max(len(got), len(want)) {
		var g, w any = "(none)", "(none)"
		if i < len(got) {
			g = got[i]
		}
		if i < len(want) {
			w = want[i]
		}
		if !reflect.DeepEqual(g, w) {
			t.Errorf("%s: record %d:\n got  %+v\n want %+v", who, i, g, w)
		}
	}
}

// withTimestamps returns recs with each timestamp replaced by ts(i).
func withTimestamps(recs []record, ts func(i int) int64) []record {
	out := make([]record, len(recs))
	for i, r := range recs {
		r.Timestamp = ts(i)
		out[i] = r
	}
	return out
}

// lookTool returns the path of an external client, failing the test (never
// skipping it) when the client is not installed.
func lookTool(t *testing.T, name string) string {
	t.Helper()
	path, err := exec.LookPath(name)
	if err != nil {
		t.Fatalf("%s is not installed: run `make tools` (make test does it first): %v", name, err)
	}
	return path
}

// runTool runs an external client under ctx with stdin, and returns its
// stdout. A non-zero exit fails the test with the client's stderr.
func runTool(t *testing.T, ctx context.Context, stdin []byte, name string, args ...string) []byte {
	t.Helper()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.WaitDelay = 5 * time.Second // a killed child's pipes must not hold us up
	cmd.Stdin = bytes.NewReader(stdin)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		if errors.Is(err, exec.ErrNotFound) {
			t.Fatalf("%s is not installed: run `make tools`: %v", name, err)
		}
		t.Fatalf("%s %s: %v (context: %v)\nstderr:\n%s\nstdout:\n%s",
			name, strings.Join(args, " "), err, ctx.Err(), stderr.Bytes(), stdout.Bytes())
	}
	if stderr.Len() > 0 {
		t.Logf("%s stderr:\n%s", name, stderr.Bytes())
	}
	return stdout.Bytes()
}

// driverRequest is what the node and python drivers read on stdin.
type driverRequest struct {
	Brokers   []string `json:"brokers"`
	Topic     string   `json:"topic"`
	Codec     string   `json:"codec"`
	Records   []record `json:"records,omitempty"` // produce: what to write
	Count     int      `json:"count,omitempty"`   // consume: how many to read
	Group     string   `json:"group,omitempty"`   // consume: consumer group, when the client needs one
	TimeoutMS int64    `json:"timeout_ms"`
}

// driverResponse is what the drivers print on stdout.
type driverResponse struct {
	Produced []record `json:"produced"` // partition and offset the broker acknowledged, per record
	Consumed []record `json:"consumed"`
}

// runDriver runs a client driver script (node or python) in one mode with req
// and decodes its JSON answer.
func runDriver(t *testing.T, timeout time.Duration, req driverRequest, name string, args ...string) driverResponse {
	t.Helper()
	ctx := testContext(t, timeout)
	if dl, ok := ctx.Deadline(); ok {
		// The driver gives up on its own a little before we kill it, so
		// that it can say what it was waiting for.
		req.TimeoutMS = time.Until(dl).Milliseconds() * 4 / 5
	}
	in, err := json.Marshal(req)
	if err != nil {
		t.Fatal(err)
	}
	out := runTool(t, ctx, in, name, args...)
	var resp driverResponse
	if err := json.Unmarshal(out, &resp); err != nil {
		t.Fatalf("%s: decoding its answer: %v\n%s", name, err, out)
	}
	return resp
}

// assertProduced checks the partitions and offsets a client reports for the
// records it produced.
func assertProduced(t *testing.T, who string, got []record, want []record) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d produce acknowledgements, want %d", who, len(got), len(want))
	}
	for i := range got {
		if got[i].Partition != want[i].Partition || got[i].Offset != want[i].Offset {
			t.Errorf("%s: record %d acknowledged at %d/%d, want %d/%d",
				who, i, got[i].Partition, got[i].Offset, want[i].Partition, want[i].Offset)
		}
	}
}

// runToolOr runs a check command under ctx, failing the test with msg and the
// command's output when it does not succeed.
func runToolOr(t *testing.T, ctx context.Context, msg, name string, args ...string) {
	t.Helper()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.WaitDelay = 5 * time.Second
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%s: %s %s: %v\n%s", msg, name, strings.Join(args, " "), err, out)
	}
}
