package connect_test

import (
	"fmt"
	"path/filepath"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/runnel-io/runnel/broker/brokertest"
	"github.com/runnel-io/runnel/connect"
	"github.com/runnel-io/runnel/connect/connecttest"
)

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
	connecttest.AppendLines(t, in, lines[:200]...)
	src := connect.Config{"name": "eos", "connector.class": "FileStreamSource", "file": in, "topic": "eos-lines", "poll.interval.ms": "10", "batch.size": "50"}
	// Offsets in the offsets topic (no file), written in the transactions.
	extra := connect.Config{"offset.storage.file.filename": "", "exactly.once.source.support": "enabled", "value.converter": "string"}
	w := connecttest.StartWorker(t, seeds, dir, nil, extra, src)
	readCommitted := kgo.FetchIsolationLevel(kgo.ReadCommitted())
	recs := connecttest.Consume(t, seeds, "eos-lines", 200, readCommitted)
	for _, r := range recs {
		if !r.Attrs.IsTransactional() {
			t.Fatalf("record at offset %d is not transactional", r.Offset)
		}
	}
	w.Close()

	connecttest.AppendLines(t, in, lines[200:]...)
	connecttest.StartWorker(t, seeds, dir, nil, extra, src)
	recs = connecttest.Consume(t, seeds, "eos-lines", 300, readCommitted)
	if len(recs) != 300 {
		t.Fatalf("read %d records, want 300", len(recs))
	}
	for i, r := range recs {
		if string(r.Value) != lines[i] {
			t.Fatalf("record %d is %q, want %q", i, r.Value, lines[i])
		}
	}
}
