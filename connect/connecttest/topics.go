package connecttest

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// CreateTopic creates topic with the given partitions, one replica and
// configs (nil for the brokers' defaults).
func CreateTopic(t testing.TB, seeds []string, topic string, partitions int32, configs map[string]*string) {
	t.Helper()
	cl := newClient(t, kgo.SeedBrokers(seeds...))
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := kadm.NewClient(cl).CreateTopic(ctx, partitions, 1, configs, topic); err != nil {
		t.Fatal(err)
	}
}

// EndOffset returns the sum of the end offsets of topic's partitions: the
// number of records it holds while none was deleted.
func EndOffset(t testing.TB, seeds []string, topic string) int64 {
	t.Helper()
	cl := newClient(t, kgo.SeedBrokers(seeds...))
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	ends, err := kadm.NewClient(cl).ListEndOffsets(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	var n int64
	ends.Each(func(o kadm.ListedOffset) { n += o.Offset })
	return n
}

// Consume reads topic from its start until it has at least n records and
// returns them; it fails the test if they do not come within 20 s. opts
// add to the client's options (kgo.FetchIsolationLevel(kgo.ReadCommitted())
// reads only committed records).
func Consume(t testing.TB, seeds []string, topic string, n int, opts ...kgo.Opt) []*kgo.Record {
	t.Helper()
	cl := newClient(t, append([]kgo.Opt{kgo.SeedBrokers(seeds...), kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart())}, opts...)...)
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var out []*kgo.Record
	for len(out) < n {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("read %d of %d records of %s", len(out), n, topic)
		}
		out = append(out, fs.Records()...)
	}
	return out
}

func newClient(t testing.TB, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		t.Fatal(err)
	}
	return cl
}
