package connect_test

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/runnel-io/runnel/broker/brokertest"
	"github.com/runnel-io/runnel/connect"
)

// readCommitted reads every committed record of topic (waiting for at
// least n).
func readCommitted(t *testing.T, seeds []string, topic string, n int) []*kgo.Record {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var out []*kgo.Record
	for len(out) < n {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("read %d of %d committed records of %s", len(out), n, topic)
		}
		out = append(out, fs.Records()...)
	}
	return out
}

// With exactly.once.source.support=enabled a source writes its records
// and their offsets in transactions: read_committed readers see each line
// once, and a restarted worker resumes exactly after the last committed
// transaction.
func TestExactlyOnceSource(t *testing.T) {
	b := brokertest.Start(t)
	seeds := []string{b.Addr()}
	dir := t.TempDir()
	in := filepath.Join(dir, "in.txt")
	var lines []string
	for i := range 300 {
		lines = append(lines, fmt.Sprintf("line %d", i))
	}
	appendLines(t, in, lines[:200]...)
	src := connect.Config{"name": "eos", "connector.class": "FileStreamSource", "file": in, "topic": "eos-lines", "poll.interval.ms": "10", "batch.size": "50"}
	// Offsets in the offsets topic (no file), written in the transactions.
	extra := connect.Config{"offset.storage.file.filename": "", "exactly.once.source.support": "enabled", "value.converter": "string"}
	w := startWorker(t, seeds, dir, extra, src)
	recs := readCommitted(t, seeds, "eos-lines", 200)
	for _, r := range recs {
		if !r.Attrs.IsTransactional() {
			t.Fatalf("record at offset %d is not transactional", r.Offset)
		}
	}
	w.Close()

	appendLines(t, in, lines[200:]...)
	startWorker(t, seeds, dir, extra, src)
	recs = readCommitted(t, seeds, "eos-lines", 300)
	if len(recs) != 300 {
		t.Fatalf("read %d records, want 300", len(recs))
	}
	for i, r := range recs {
		if string(r.Value) != lines[i] {
			t.Fatalf("record %d is %q, want %q", i, r.Value, lines[i])
		}
	}
}
