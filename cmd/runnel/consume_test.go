package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// jsonLines decodes -o json output.
func jsonLines(t *testing.T, out string) []jsonRecord {
	t.Helper()
	var rs []jsonRecord
	for _, l := range lines(out) {
		var r jsonRecord
		if err := json.Unmarshal([]byte(l), &r); err != nil {
			t.Fatalf("bad json line %q: %v", l, err)
		}
		rs = append(rs, r)
	}
	return rs
}

func str(s string) *string { return &s }

func TestProduceConsumeRoundTrip(t *testing.T) {
	c := newCLI(t)
	input := "k1:v1\nk2:v2\r\nno key\n\nk1:a:b\nlast:no newline"
	want := []jsonRecord{
		{Key: str("k1"), Value: str("v1")},
		{Key: str("k2"), Value: str("v2")},
		{Value: str("no key")},
		{Value: str("")},
		{Key: str("k1"), Value: str("a:b")},
		{Key: str("last"), Value: str("no newline")},
	}
	wantHeaders := []jsonHeader{{Key: "src", Value: str("cli")}, {Key: "trace", Value: str("a=b")}}
	for _, codec := range []string{"none", "gzip", "snappy", "lz4", "zstd"} {
		t.Run(codec, func(t *testing.T) {
			t.Parallel()
			c := &cli{t: t, addr: c.addr}
			topic := "rt-" + codec
			c.ok("", "topic", "create", topic, "-p", "1")
			_, stderr, err := c.run(input, "produce", topic, "-K", ":", "-H", "src=cli", "-H", "trace=a=b", "--compression", codec)
			if err != nil {
				t.Fatal(err)
			}
			if !strings.HasPrefix(stderr, fmt.Sprintf("Produced %d records to %q", len(want), topic)) {
				t.Errorf("produce stderr: %q", stderr)
			}
			out, stderr, err := c.run("", "consume", topic, "-o", "json")
			if err != nil {
				t.Fatal(err)
			}
			if want := fmt.Sprintf("Consumed %d records from %q.\n", len(want), topic); stderr != want {
				t.Errorf("consume stderr: got %q, want %q", stderr, want)
			}
			got := jsonLines(t, out)
			if len(got) != len(want) {
				t.Fatalf("got %d records, want %d:\n%s", len(got), len(want), out)
			}
			for i, r := range got {
				if r.Topic != topic || r.Partition != 0 || r.Offset != int64(i) {
					t.Errorf("record %d at %s[%d]@%d", i, r.Topic, r.Partition, r.Offset)
				}
				if !equalPtr(r.Key, want[i].Key) || !equalPtr(r.Value, want[i].Value) {
					t.Errorf("record %d: key %v value %v, want key %v value %v", i, deref(r.Key), deref(r.Value), deref(want[i].Key), deref(want[i].Value))
				}
				if !slices.EqualFunc(r.Headers, wantHeaders, func(a, b jsonHeader) bool { return a.Key == b.Key && equalPtr(a.Value, b.Value) }) {
					t.Errorf("record %d headers: %+v", i, r.Headers)
				}
			}
			// The text format with keys.
			out = c.ok("", "consume", topic, "-q", "--print-key", "-K", " => ")
			if want := "k1 => v1\nk2 => v2\n => no key\n => \nk1 => a:b\nlast => no newline\n"; out != want {
				t.Errorf("text output: got %q, want %q", out, want)
			}
		})
	}
}

func equalPtr(a, b *string) bool { return (a == nil) == (b == nil) && (a == nil || *a == *b) }

func deref(s *string) string {
	if s == nil {
		return "<nil>"
	}
	return strconv.Quote(*s)
}

func TestConsumeJSONShape(t *testing.T) {
	c := newCLI(t)
	c.ok("", "topic", "create", "shape", "-p", "2")
	c.ok("k\xff:v\xfe\x00\n", "produce", "shape", "-p", "1", "-K", ":", "-H", "h=x")
	out := c.ok("", "consume", "shape", "-o", "json")
	var m map[string]any
	if err := json.Unmarshal([]byte(out), &m); err != nil {
		t.Fatalf("%q: %v", out, err)
	}
	keys := slices.Sorted(maps.Keys(m))
	wantKeys := []string{"headers", "key", "key_encoding", "offset", "partition", "timestamp", "topic", "value", "value_encoding"}
	if !slices.Equal(keys, wantKeys) {
		t.Errorf("fields: got %q, want %q", keys, wantKeys)
	}
	if m["topic"] != "shape" || m["partition"] != 1.0 || m["offset"] != 0.0 {
		t.Errorf("position: %v", m)
	}
	if m["key"] != "a/8=" || m["key_encoding"] != "base64" || m["value"] != "dv4A" || m["value_encoding"] != "base64" {
		t.Errorf("binary key/value: %v", m)
	}
	if ts, _ := m["timestamp"].(float64); time.Since(time.UnixMilli(int64(ts))).Abs() > time.Hour {
		t.Errorf("timestamp %v is not unix milliseconds of now", m["timestamp"])
	}
	hs, _ := m["headers"].([]any)
	if len(hs) != 1 || fmt.Sprint(hs[0]) != "map[key:h value:x]" {
		t.Errorf("headers: %v", m["headers"])
	}

	// A null key is null, and a record without headers has [] (never null).
	cl := c.client(kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err := cl.ProduceSync(t.Context(), &kgo.Record{Topic: "shape", Partition: 0, Value: []byte("v")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	out = c.ok("", "consume", "shape", "-o", "json", "-p", "0")
	if !strings.Contains(out, `"key":null,"value":"v","headers":[]}`) {
		t.Errorf("null key / no headers: %s", out)
	}
}

// produceAt writes n records to partition 0 of topic, record i with value
// "v<i>" and timestamp base+i seconds.
func produceAt(t *testing.T, c *cli, topic string, n int, base time.Time) {
	t.Helper()
	cl := c.client(kgo.RecordPartitioner(kgo.ManualPartitioner()))
	var rs []*kgo.Record
	for i := range n {
		rs = append(rs, &kgo.Record{Topic: topic, Value: []byte("v" + strconv.Itoa(i)), Timestamp: base.Add(time.Duration(i) * time.Second)})
	}
	if err := cl.ProduceSync(t.Context(), rs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
}

func TestConsumeFrom(t *testing.T) {
	c := newCLI(t)
	c.ok("", "topic", "create", "from", "-p", "1")
	base := time.Date(2024, 5, 1, 12, 0, 0, 0, time.UTC)
	produceAt(t, c, "from", 10, base)

	vals := func(from ...int) string {
		var b strings.Builder
		for _, i := range from {
			fmt.Fprintf(&b, "v%d\n", i)
		}
		return b.String()
	}
	all := vals(0, 1, 2, 3, 4, 5, 6, 7, 8, 9)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{nil, all}, // beginning, as nothing is followed
		{[]string{"--from", "beginning"}, all},
		{[]string{"--from", "earliest"}, all},
		{[]string{"--from", "end"}, ""},
		{[]string{"--from", "7"}, vals(7, 8, 9)},
		{[]string{"--from", "0", "-p", "0"}, all},
		{[]string{"--from", "500"}, ""}, // past the end: clamped to the end
		{[]string{"--from", "-3"}, vals(7, 8, 9)},
		{[]string{"--from", "-50"}, all},
		{[]string{"--from", "@" + strconv.FormatInt(base.Add(6*time.Second).UnixMilli(), 10)}, vals(6, 7, 8, 9)},
		{[]string{"--from", "s@" + strconv.FormatInt(base.Add(8*time.Second).UnixMilli(), 10)}, vals(8, 9)},
		{[]string{"--from", "2024-05-01T12:00:04.5Z"}, vals(5, 6, 7, 8, 9)},
		{[]string{"--from", "2024-05-01T14:00:05+02:00"}, vals(5, 6, 7, 8, 9)},
		{[]string{"--from", "2030-01-01T00:00:00Z"}, ""},
		{[]string{"-n", "4"}, vals(0, 1, 2, 3)},
		{[]string{"--from", "5", "-n", "2"}, vals(5, 6)},
		{[]string{"-n", "50"}, all}, // not following: the end comes first
	} {
		out, stderr, err := c.run("", append([]string{"consume", "from"}, tc.args...)...)
		if err != nil {
			t.Errorf("consume %q: %v", tc.args, err)
			continue
		}
		if out != tc.want {
			t.Errorf("consume %q: got %q, want %q", tc.args, out, tc.want)
		}
		if want := fmt.Sprintf("Consumed %d ", len(lines(tc.want))); !strings.HasPrefix(stderr, want) {
			t.Errorf("consume %q: stderr %q, want %q...", tc.args, stderr, want)
		}
	}
}

func TestConsumeFollow(t *testing.T) {
	c := newCLI(t)
	c.ok("", "topic", "create", "tail", "-p", "3")
	c.ok("old\n", "produce", "tail")

	ctx, interrupt := context.WithCancel(t.Context())
	out := newSyncBuffer()
	type result struct {
		stderr string
		err    error
	}
	done := make(chan result, 1)
	go func() {
		_, stderr, err := c.runCtx(ctx, strings.NewReader(""), out, "consume", "tail", "-f", "--from", "beginning")
		done <- result{stderr, err}
	}()
	out.waitFor(t, "the record produced before consume started", func(s string) bool { return s == "old\n" })
	c.ok("new1\nnew2\nnew3\n", "produce", "tail", "-K", ":")
	out.waitFor(t, "records produced while following", func(s string) bool { return len(lines(s)) == 4 })
	interrupt() // Ctrl-C
	r := <-done
	if r.err != nil {
		t.Fatalf("consume -f after Ctrl-C: %v, want a clean exit", r.err)
	}
	got := lines(out.String())
	slices.Sort(got[1:]) // three partitions: no order across them
	if want := []string{"old", "new1", "new2", "new3"}; !slices.Equal(got, want) {
		t.Errorf("got %q, want %q", got, want)
	}
	if r.stderr != "Consumed 4 records from \"tail\".\n" {
		t.Errorf("stderr: %q", r.stderr)
	}
}

func TestConsumeFollowDefaultsToEnd(t *testing.T) {
	c := newCLI(t)
	c.ok("", "topic", "create", "tail", "-p", "1")
	c.ok("old\n", "produce", "tail")
	ctx, interrupt := context.WithCancel(t.Context())
	defer interrupt()
	out := newSyncBuffer()
	done := make(chan error, 1)
	go func() {
		_, _, err := c.runCtx(ctx, strings.NewReader(""), out, "consume", "tail", "-f", "-n", "1")
		done <- err
	}()
	// The consumer may start after any number of these: keep producing
	// (each a full round trip) until one reaches it. Only new records may
	// be printed, never "old".
	deadline := time.Now().Add(10 * time.Second)
	for i := 0; ; i++ {
		c.ok(fmt.Sprintf("new%d\n", i), "produce", "tail", "-q")
		select {
		case err := <-done:
			if err != nil {
				t.Fatal(err)
			}
			if got := out.String(); !strings.HasPrefix(got, "new") || len(lines(got)) != 1 {
				t.Errorf("consume -f -n 1 printed %q, want one new record", got)
			}
			return
		default:
		}
		if time.Now().After(deadline) {
			t.Fatal("consume -f never saw a new record")
		}
	}
}

// TestConsumeReadCommitted checks that read_committed skips an aborted
// transaction's records between two committed ones, and that consume
// without -f ends at a log end that is a transaction marker.
func TestConsumeReadCommitted(t *testing.T) {
	onBrokers(t, testConsumeReadCommitted)
}

func testConsumeReadCommitted(t *testing.T, c *cli) {
	c.ok("", "topic", "create", "txn", "-p", "1")
	cl := c.client(kgo.TransactionalID("test-txn"), kgo.DefaultProduceTopic("txn"))
	for _, tc := range []struct {
		values []string
		commit kgo.TransactionEndTry
	}{
		{[]string{"c1", "c2"}, kgo.TryCommit},
		{[]string{"a1", "a2"}, kgo.TryAbort},
		{[]string{"c3"}, kgo.TryCommit},
	} {
		if err := cl.BeginTransaction(); err != nil {
			t.Fatal(err)
		}
		for _, v := range tc.values {
			if err := cl.ProduceSync(t.Context(), &kgo.Record{Value: []byte(v)}).FirstErr(); err != nil {
				t.Fatal(err)
			}
		}
		if err := cl.EndTransaction(t.Context(), tc.commit); err != nil {
			t.Fatal(err)
		}
	}
	// EndTxn is answered before the markers are written (Kafka and
	// Runnel; kfake writes them first), and read_committed ends at the
	// last stable offset listed at its start: until the last commit's
	// marker is in, c3 is not yet readable.
	waitTxnState(t, c, "test-txn", completedState(t))
	// Both end at the log end, which is a transaction marker: the
	// consumer must see it to know it is done.
	if got := c.ok("", "consume", "txn", "--isolation", "read_committed"); got != "c1\nc2\nc3\n" {
		t.Errorf("read_committed: got %q", got)
	}
	if got := c.ok("", "consume", "txn"); got != "c1\nc2\na1\na2\nc3\n" {
		t.Errorf("read_uncommitted: got %q", got)
	}
}

func TestConsumeGroup(t *testing.T) {
	onBrokers(t, testConsumeGroup)
}

func testConsumeGroup(t *testing.T, c *cli) {
	c.ok("", "topic", "create", "grp", "-p", "2")
	c.ok("a\nb\nc\nd\ne\n", "produce", "grp")

	if got := lines(c.ok("", "consume", "grp", "-g", "readers", "-n", "2", "-q")); len(got) != 2 {
		t.Fatalf("first run: got %q, want 2 records", got)
	}
	// The group committed what it printed: the rest follows, then the end.
	rest := lines(c.ok("", "consume", "grp", "-g", "readers", "-q"))
	if len(rest) != 3 {
		t.Fatalf("second run: got %q, want the 3 records not yet read", rest)
	}
	if got := c.ok("", "consume", "grp", "-g", "readers"); got != "" {
		t.Errorf("third run: got %q, want nothing: the group is at the end", got)
	}
	if err := c.fail("", "consume", "grp", "-g", "readers", "-p", "0"); !strings.Contains(err.Error(), "-p cannot be combined with -g") {
		t.Errorf("-g with -p: %v", err)
	}
}

func TestProduceErrors(t *testing.T) {
	c := newCLI(t)
	c.ok("", "topic", "create", "e", "-p", "2")
	// produce lets the broker auto-create a topic, as Kafka producers do;
	// a broker that does not gets an error that says how to create it.
	if _, _, err := c.run("x\n", "produce", "missing"); err == nil {
		if !strings.Contains(c.ok("", "topic", "list"), "\nmissing ") {
			t.Error("produce to a missing topic succeeded, but no topic was auto-created")
		}
	} else if !errors.Is(err, errTopicMissing) || !strings.Contains(err.Error(), "runnel topic create missing") {
		t.Errorf("missing topic: %v", err)
	}
	if err := c.fail("", "consume", "nope"); !errors.Is(err, errTopicMissing) {
		t.Errorf("consume missing topic: %v", err)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"produce", "e", "-p", "2"}, `partition 2 does not exist: topic "e" has 2 partitions (0-1)`},
		{[]string{"produce", "e", "--acks", "2"}, "want all, 1 or 0"},
		{[]string{"produce", "e", "--compression", "brotli"}, "want none, gzip, snappy, lz4 or zstd"},
		{[]string{"produce", "e", "--acks", "1", "--idempotent"}, "--idempotent needs --acks all"},
		{[]string{"produce", "e", "-H", "novalue"}, "want key=value"},
		{[]string{"produce", "e", "-f", "/nonexistent/file"}, "no such file"},
		{[]string{"consume", "e", "-p", "5"}, "partition 5 does not exist"},
		{[]string{"consume", "e", "--from", "yesterday"}, "RFC3339"},
		{[]string{"consume", "e", "-o", "xml"}, "want text or json"},
		{[]string{"consume", "e", "--isolation", "serializable"}, "want read_uncommitted or read_committed"},
	} {
		if err := c.fail("", tc.args...); !strings.Contains(err.Error(), tc.want) {
			t.Errorf("runnel %s: got %q, want it to contain %q", strings.Join(tc.args, " "), err, tc.want)
		}
	}
	// acks 1 and 0 work without --idempotent.
	for _, acks := range []string{"1", "0"} {
		if _, stderr, err := c.run("x\n", "produce", "e", "--acks", acks); err != nil || !strings.HasPrefix(stderr, "Produced 1 record ") {
			t.Errorf("--acks %s: %v %q", acks, err, stderr)
		}
	}
}

func TestProduceLargeFile(t *testing.T) {
	c := newCLI(t)
	c.ok("", "topic", "create", "big", "-p", "4")
	const n = 10000
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, "key-%d:%s\n", i, strings.Repeat("x", i%300))
	}
	path := t.TempDir() + "/records.txt"
	if err := writeFile(path, b.String()); err != nil {
		t.Fatal(err)
	}
	_, stderr, err := c.run("", "produce", "big", "-f", path, "-K", ":", "--compression", "zstd")
	if err != nil || !strings.HasPrefix(stderr, fmt.Sprintf("Produced %d records to \"big\"", n)) {
		t.Fatalf("produce -f: %v %q", err, stderr)
	}
	out := c.ok("", "consume", "big", "--print-key", "-K", ":")
	got := lines(out)
	if len(got) != n {
		t.Fatalf("consumed %d records, want %d", len(got), n)
	}
	slices.Sort(got)
	want := lines(b.String())
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Error("consumed records differ from the file")
	}
}
