package streams_test

import (
	"context"
	"errors"
	"strconv"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/runnel-io/runnel/streams"
	"github.com/runnel-io/runnel/streams/serde"
)

// doubler reads int64 values from "in" and writes them doubled to "out".
func doubler(t *testing.T) *streams.Topology {
	t.Helper()
	b := streams.NewBuilder()
	streams.From[string, int64](b, "in").MapValues(func(v int64) int64 { return 2 * v }).To("out")
	topo, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	return topo
}

type badInput struct {
	t     *testing.T
	ctx   context.Context
	seeds []string
	cl    *kgo.Client
	adm   *kadm.Client
}

// newBadInput starts a kfake cluster holding, in one partition of "in":
// 1, 2, a value no int64 serde decodes (offset 2), 4.
func newBadInput(t *testing.T) *badInput {
	c, err := kfake.NewCluster(kfake.NumBrokers(1))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.ListenAddrs()...), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	adm := kadm.NewClient(cl)
	if _, err := adm.CreateTopics(ctx, 1, 1, nil, "in", "out", "dead-letters"); err != nil {
		t.Fatal(err)
	}
	for i, v := range [][]byte{enc(1), enc(2), []byte("bad"), enc(4)} {
		r := &kgo.Record{Topic: "in", Key: []byte(strconv.Itoa(i)), Value: v}
		if err := cl.ProduceSync(ctx, r).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	return &badInput{t: t, ctx: ctx, seeds: c.ListenAddrs(), cl: cl, adm: adm}
}

func (bi *badInput) app(id string, g streams.Guarantee, h streams.BadRecordHandler) *streams.App {
	app, err := streams.NewApp(doubler(bi.t), streams.Config{ApplicationID: id, Brokers: bi.seeds, Guarantee: g,
		CommitInterval: 50 * time.Millisecond, OnBadRecord: h})
	if err != nil {
		bi.t.Fatal(err)
	}
	return app
}

// read returns the values of topic's first n records (read committed).
func (bi *badInput) read(topic string, n int) []*kgo.Record {
	cl, err := kgo.NewClient(kgo.SeedBrokers(bi.seeds...), kgo.ConsumeTopics(topic),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		bi.t.Fatal(err)
	}
	defer cl.Close()
	var out []*kgo.Record
	for len(out) < n {
		fs := cl.PollFetches(bi.ctx)
		if bi.ctx.Err() != nil {
			bi.t.Fatalf("%s: %d records, want %d", topic, len(out), n)
		}
		out = append(out, fs.Records()...)
	}
	return out
}

// committed returns the group's committed offset of "in" (-1: none).
func (bi *badInput) committed(group string) int64 {
	offs, err := bi.adm.FetchOffsets(bi.ctx, group)
	if errors.Is(err, kerr.GroupIDNotFound) {
		return -1 // kfake's answer before the group's first join
	}
	if err != nil {
		bi.t.Fatal(err)
	}
	o, ok := offs.Lookup("in", 0)
	if !ok {
		return -1
	}
	return o.At
}

// runUntil runs app until cond holds (checked as the app runs), then stops it.
func (bi *badInput) runUntil(app *streams.App, cond func() bool) error {
	ctx, stop := context.WithCancel(bi.ctx)
	done := make(chan error, 1)
	go func() { done <- app.Run(ctx) }()
	for !cond() {
		select {
		case err := <-done:
			stop()
			return err
		case <-time.After(20 * time.Millisecond):
		}
		if bi.ctx.Err() != nil {
			bi.t.Fatal("condition not reached")
		}
	}
	stop()
	return <-done
}

func values(t *testing.T, recs []*kgo.Record) []int64 {
	var out []int64
	for _, r := range recs {
		v, err := serde.Int64.Decode(r.Value)
		if err != nil {
			t.Fatalf("out value %q: %v", r.Value, err)
		}
		out = append(out, v)
	}
	return out
}

func TestAppSkipsBadRecords(t *testing.T) {
	bi := newBadInput(t)
	err := bi.runUntil(bi.app("skip", streams.AtLeastOnce, streams.SkipBadRecords(nil)), func() bool { return bi.committed("skip") == 4 })
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	if got := values(t, bi.read("out", 3)); len(got) != 3 || got[0] != 2 || got[1] != 4 || got[2] != 8 {
		t.Errorf("out = %v, want [2 4 8]", got)
	}
}

func TestAppDeadLettersBadRecords(t *testing.T) {
	for _, g := range []streams.Guarantee{streams.AtLeastOnce, streams.ExactlyOnce} {
		t.Run(g.String(), func(t *testing.T) {
			bi := newBadInput(t)
			err := bi.runUntil(bi.app("dlq", g, streams.DeadLetterTopic("dead-letters")), func() bool { return bi.committed("dlq") == 4 })
			if err != nil {
				t.Fatalf("Run: %v", err)
			}
			if got := values(t, bi.read("out", 3)); len(got) != 3 || got[2] != 8 {
				t.Errorf("out = %v, want [2 4 8]", got)
			}
			dl := bi.read("dead-letters", 1)[0]
			if string(dl.Value) != "bad" || string(dl.Key) != "2" {
				t.Errorf("dead letter %q=%q, want the record's bytes unchanged", dl.Key, dl.Value)
			}
			h := map[string]string{}
			for _, kv := range dl.Headers {
				h[kv.Key] = string(kv.Value)
			}
			if h[streams.HeaderErrorTopic] != "in" || h[streams.HeaderErrorPartition] != "0" || h[streams.HeaderErrorOffset] != "2" || h[streams.HeaderErrorMessage] == "" {
				t.Errorf("dead-letter headers = %v", h)
			}
		})
	}
}

// TestAppFailsOnBadRecordWithoutCommittingIt: the default handler stops
// the app with an error naming the record, and the group's offset stays at
// or before it; a restart that skips it loses none of the records after it.
func TestAppFailsOnBadRecordWithoutCommittingIt(t *testing.T) {
	for _, g := range []streams.Guarantee{streams.AtLeastOnce, streams.ExactlyOnce} {
		t.Run(g.String(), func(t *testing.T) {
			bi := newBadInput(t)
			err := bi.runUntil(bi.app("fail", g, nil), func() bool { return false })
			if !errors.Is(err, streams.ErrBadRecord) {
				t.Fatalf("Run = %v, want ErrBadRecord", err)
			}
			if c := bi.committed("fail"); c > 2 {
				t.Fatalf("committed offset %d is past the bad record at 2", c)
			}
			err = bi.runUntil(bi.app("fail", g, streams.SkipBadRecords(nil)), func() bool { return bi.committed("fail") == 4 })
			if err != nil {
				t.Fatalf("Run after fixing: %v", err)
			}
			seen := map[int64]bool{}
			for _, v := range values(t, bi.read("out", 3)) {
				seen[v] = true
			}
			if !seen[2] || !seen[4] || !seen[8] {
				t.Errorf("out has %v, want 2, 4 and 8", seen)
			}
		})
	}
}

func enc(v int64) []byte {
	b, _ := serde.Int64.Encode(nil, v)
	return b
}

// TestAppSourceWithLatestReset: a source with WithOffsetReset(Latest)
// skips what its topic held before the app's first start, and reads what
// is written after.
func TestAppSourceWithLatestReset(t *testing.T) {
	bi := newBadInput(t) // "in" holds 4 records, one undecodable: a Latest source never sees them
	b := streams.NewBuilder()
	streams.From[string, int64](b, "in", streams.WithOffsetReset(streams.Latest)).To("out")
	app, err := streams.NewApp(build(t, b), streams.Config{ApplicationID: "latest", Brokers: bi.seeds, CommitInterval: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	wrote := false
	err = bi.runUntil(app, func() bool {
		if !wrote && bi.committed("latest") == 4 { // started at the end: now write one more
			wrote = true
			if err := bi.cl.ProduceSync(bi.ctx, &kgo.Record{Topic: "in", Key: []byte("new"), Value: enc(42)}).FirstErr(); err != nil {
				t.Fatal(err)
			}
		}
		return bi.committed("latest") == 5
	})
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	if got := values(t, bi.read("out", 1)); len(got) != 1 || got[0] != 42 {
		t.Errorf("out = %v, want only the record written after the start: [42]", got)
	}
}
