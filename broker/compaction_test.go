package broker_test

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/runnel-io/runnel/broker/brokertest"
)

// Log compaction end to end with franz-go: many versions of keys and
// tombstones in 1 MiB segments, a cleaner that wakes every 20 ms, consumers
// reading from the start while it works, and the final log holding exactly
// the newest value per live key at the offsets it was produced at;
// tombstones gone once delete.retention.ms has passed.
func TestCompactionEndToEnd(t *testing.T) {
	b := brokertest.Start(t, map[string]string{"log.cleaner.backoff.ms": "20"})
	const topic = "compacted"
	dial := dialRaw(t, b.Addr())
	dial.createTopic(topic, 1, map[string]string{
		"cleanup.policy":            "compact",
		"segment.bytes":             "1048576",
		"min.cleanable.dirty.ratio": "0.01",
		"delete.retention.ms":       "6000",
	})
	// Rounds rotate over the four codecs, so the cleaner rebuilds batches of
	// each and kgo decodes them, gaps and all.
	var prods []*kgo.Client
	for _, c := range []kgo.CompressionCodec{kgo.ZstdCompression(), kgo.GzipCompression(), kgo.SnappyCompression(), kgo.Lz4Compression()} {
		prods = append(prods, newClient(t, b, kgo.DefaultProduceTopic(topic), kgo.ProducerBatchCompression(c), kgo.ProducerLinger(0)))
	}
	rng := rand.New(rand.NewPCG(1, 2))
	noise := func() string { // incompressible, so zstd does not shrink 1 MiB segments away
		b := make([]byte, 1000)
		for i := range b {
			b[i] = byte(rng.Uint32())
		}
		return string(b)
	}
	value := func(key string, round int) string {
		return fmt.Sprintf("%s@%d:%s", key, round, noise())
	}
	var mu sync.Mutex
	produced := map[int64]*kgo.Record{} // by offset
	produce := func(codec int, recs ...*kgo.Record) {
		t.Helper()
		res := prods[codec%len(prods)].ProduceSync(testCtx(t), recs...)
		if err := res.FirstErr(); err != nil {
			t.Errorf("produce: %v", err)
			return
		}
		mu.Lock()
		for _, r := range res {
			produced[r.Record.Offset] = r.Record
		}
		mu.Unlock()
	}
	round := func(r, fromKey, toKey int, tombstone bool) {
		var recs []*kgo.Record
		for k := fromKey; k < toKey; k++ {
			key := fmt.Sprintf("key-%03d", k)
			rec := &kgo.Record{Key: []byte(key), Value: []byte(value(key, r))}
			if tombstone {
				rec.Value = nil
			}
			recs = append(recs, rec)
		}
		produce(r, recs...)
	}
	const keys, deleted = 200, 20 // key-000 .. key-019 get tombstones
	for r := range 8 {
		round(r, 0, keys, false)
	}

	// Keep producing versions (and the tombstones) while consumers scan
	// from the start; each scan must see every live key.
	runsBefore := metric(t, b, "runnel_broker_log_cleaner_runs_total", topic)
	done := make(chan struct{})
	// The producer reports with t.Errorf: the test must not end (by a
	// t.Fatal below) while it still runs.
	defer func() { <-done }()
	go func() {
		defer close(done)
		for r := 8; r < 26; r++ {
			round(r, 0, keys, false)
			if r == 25 {
				round(r, 0, deleted, true)
			}
		}
	}()
	scans := 0
	for producing := true; producing || scans < 2; scans++ {
		select {
		case <-done:
			producing = false
		default:
		}
		scanAllKeys(t, b, topic, deleted, keys)
	}
	if runs := metric(t, b, "runnel_broker_log_cleaner_runs_total", topic); runs <= runsBefore {
		t.Fatalf("the cleaner did not run during the %d scans (runs %v -> %v)", scans, runsBefore, runs)
	}
	// Push every version out of the active segment with unique filler keys.
	var filler []*kgo.Record
	for i := range 1100 {
		filler = append(filler, &kgo.Record{Key: []byte(fmt.Sprintf("filler-%04d", i)), Value: []byte(noise())})
	}
	produce(0, filler...)
	last := filler[len(filler)-1].Offset

	// Wait until everything below the active segment is clean.
	waitFor(t, 30*time.Second, "the log is cleaned up to the active segment", func() bool {
		return metric(t, b, "runnel_broker_log_cleaner_dirty_ratio", topic) == 0
	})
	newest := map[string]*kgo.Record{}
	for off := int64(0); off <= last; off++ {
		if r := produced[off]; r != nil {
			newest[string(r.Key)] = r
		}
	}
	got := consumeUntil(t, b, topic, last)
	checkNewestPerKey(t, got, produced, newest, true)

	// Once delete.retention.ms has passed, the cleaner drops the tombstones.
	waitFor(t, 30*time.Second, "tombstones to go after delete.retention.ms", func() bool {
		for _, r := range consumeUntil(t, b, topic, last) {
			if r.Value == nil {
				return false
			}
		}
		return true
	})
	got = consumeUntil(t, b, topic, last)
	for k := range deleted {
		delete(newest, fmt.Sprintf("key-%03d", k))
	}
	checkNewestPerKey(t, got, produced, newest, false)
	if removed := metric(t, b, "runnel_broker_log_cleaner_records_removed_total", topic); removed < float64(keys*20) {
		t.Fatalf("records removed metric = %v, want at least %d", removed, keys*20)
	}

	// The compacted log, with its offset gaps, reopens as it was.
	b.Stop(t)
	b = brokertest.Start(t, map[string]string{"log.dirs": b.Dir, "log.cleaner.backoff.ms": "20"})
	checkNewestPerKey(t, consumeUntil(t, b, topic, last), produced, newest, false)
}

// Keyless records are refused on compact and compact,delete topics alike.
func TestCompactionRejectsKeylessRecords(t *testing.T) {
	b := brokertest.Start(t)
	dial := dialRaw(t, b.Addr())
	for _, policy := range []string{"compact", "compact,delete", "delete,compact"} {
		topic := "keyless-" + strings.ReplaceAll(policy, ",", "-")
		dial.createTopic(topic, 1, map[string]string{"cleanup.policy": policy})
		cl := newClient(t, b, kgo.DefaultProduceTopic(topic), kgo.RecordRetries(0))
		err := cl.ProduceSync(testCtx(t), &kgo.Record{Value: []byte("no key")}).FirstErr()
		if err == nil || !strings.Contains(err.Error(), "INVALID_RECORD") {
			t.Fatalf("%s: keyless produce = %v, want INVALID_RECORD", policy, err)
		}
		if err := cl.ProduceSync(testCtx(t), &kgo.Record{Key: []byte("k"), Value: []byte("v")}).FirstErr(); err != nil {
			t.Fatalf("%s: keyed produce: %v", policy, err)
		}
	}
}

// checkNewestPerKey fails unless got holds exactly one record per key of
// newest, that record, at the offset it was produced at; with tombstones
// false no record may be a tombstone.
func checkNewestPerKey(t *testing.T, got []*kgo.Record, produced map[int64]*kgo.Record, newest map[string]*kgo.Record, tombstones bool) {
	t.Helper()
	seen := map[string]bool{}
	for _, r := range got {
		p := produced[r.Offset]
		if p == nil || string(p.Key) != string(r.Key) || string(p.Value) != string(r.Value) || (p.Value == nil) != (r.Value == nil) {
			t.Fatalf("offset %d holds %q, not what was produced there", r.Offset, r.Key)
		}
		k := string(r.Key)
		if seen[k] {
			t.Fatalf("key %q appears twice", k)
		}
		seen[k] = true
		if n := newest[k]; n == nil || n.Offset != r.Offset {
			t.Fatalf("key %q at offset %d is not its newest record", k, r.Offset)
		}
		if r.Value == nil && !tombstones {
			t.Fatalf("tombstone for %q still there", k)
		}
	}
	if len(seen) != len(newest) {
		t.Fatalf("consumed %d keys, want %d", len(seen), len(newest))
	}
}

// scanAllKeys consumes from the start until it has seen key-<from> ..
// key-<to-1>, failing after ioTimeout.
func scanAllKeys(t *testing.T, b *brokertest.Broker, topic string, from, to int) {
	t.Helper()
	cl := newClient(t, b, kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {0: kgo.NewOffset().AtStart()}}))
	defer cl.Close()
	ctx := testCtx(t)
	seen := map[string]bool{}
	for len(seen) < to-from {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("a consumer reading from the start during cleaning saw %d of %d live keys", len(seen), to-from)
		}
		for _, e := range fs.Errors() {
			t.Fatalf("consume during cleaning: %v", e.Err)
		}
		fs.EachRecord(func(r *kgo.Record) {
			var k int
			if _, err := fmt.Sscanf(string(r.Key), "key-%03d", &k); err == nil && k >= from && k < to {
				seen[string(r.Key)] = true
			}
		})
	}
}

// consumeUntil consumes from the start through offset last.
func consumeUntil(t *testing.T, b *brokertest.Broker, topic string, last int64) []*kgo.Record {
	t.Helper()
	cl := newClient(t, b, kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {0: kgo.NewOffset().AtStart()}}))
	defer cl.Close()
	ctx := testCtx(t)
	var out []*kgo.Record
	for len(out) == 0 || out[len(out)-1].Offset < last {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("consume %s through %d: stopped at %d records", topic, last, len(out))
		}
		for _, e := range fs.Errors() {
			t.Fatalf("consume %s: %v", topic, e.Err)
		}
		out = append(out, fs.Records()...)
	}
	return out
}

// metric scrapes the broker's /metrics and returns the sum of the samples of
// name whose labels include topic.
func metric(t *testing.T, b *brokertest.Broker, name, topic string) float64 {
	t.Helper()
	return sumSamples(t, scrape(t, b), name, `topic="`+topic+`"`)
}

// sumSamples sums the samples of metric name on a /metrics page whose
// lines contain every one of labels (say `topic="t"`).
func sumSamples(t *testing.T, page, name string, labels ...string) float64 {
	t.Helper()
	sum := 0.0
	for _, line := range strings.Split(page, "\n") {
		if !strings.HasPrefix(line, name+" ") && !strings.HasPrefix(line, name+"{") {
			continue
		}
		if slices.ContainsFunc(labels, func(l string) bool { return !strings.Contains(line, l) }) {
			continue
		}
		v, err := strconv.ParseFloat(line[strings.LastIndexByte(line, ' ')+1:], 64)
		if err != nil {
			t.Fatalf("metric line %q: %v", line, err)
		}
		sum += v
	}
	return sum
}

// waitFor polls cond until it holds, failing the test after d.
func waitFor(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", d, what)
		}
		<-tick.C
	}
}
