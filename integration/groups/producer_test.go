package groups

import (
	"context"
	"fmt"
	"hash/fnv"
	"sync/atomic"
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/runnel-io/runnel/internal/groupmember"
)

const (
	// roundRecords are produced per ProduceSync.
	roundRecords = 32
	// maxLag bounds how many records the producer may be ahead of the
	// slower group, so the run's size follows the consumers' pace (the
	// log keeps growing while a killed member's partitions wait for its
	// session to time out, up to this bound).
	maxLag = 4000
	keys   = 50
)

// seedValue is the value of the record at offset seq of partition p: the
// producer numbers records per partition, and on a fresh topic the number
// is the offset.
func seedValue(p int32, seq int64) string { return fmt.Sprintf("p%d-s%d", p, seq) }

// keyPartition places a key like a hashing partitioner; the producer
// computes it itself to number records per partition before sending them.
func keyPartition(key string) int32 {
	h := fnv.New32a()
	h.Write([]byte(key))
	return int32(h.Sum32() % seedPartitions)
}

// producer writes keyed, numbered records to the seed topic until stopped.
type producer struct {
	next    [seedPartitions]atomic.Int64 // acknowledged records per partition
	stopped atomic.Bool
	done    chan struct{}
	err     error
	t       *testing.T
}

func startProducer(t *testing.T, ctx context.Context, addr string, board *groupmember.Board, groups []*group) *producer {
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.DefaultProduceTopic(seedTopic),
		kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	pr := &producer{done: make(chan struct{}), t: t}
	lag := func() int64 {
		var produced, slowest int64
		for p := range seedPartitions {
			produced += pr.next[p].Load()
		}
		slowest = produced
		for _, g := range groups {
			var n int64
			for _, h := range g.progress() {
				n += h
			}
			slowest = min(slowest, n)
		}
		return produced - slowest
	}
	go func() {
		defer close(pr.done)
		defer cl.Close()
		for i := 0; !pr.stopped.Load(); {
			rs := make([]*kgo.Record, 0, roundRecords)
			var seq [seedPartitions]int64
			for p := range seq {
				seq[p] = pr.next[p].Load()
			}
			for range roundRecords {
				key := fmt.Sprintf("key-%d", i%keys)
				i++
				p := keyPartition(key)
				rs = append(rs, &kgo.Record{Key: []byte(key), Partition: p, Value: []byte(seedValue(p, seq[p]))})
				seq[p]++
			}
			if err := cl.ProduceSync(ctx, rs...).FirstErr(); err != nil {
				pr.err = fmt.Errorf("produce: %w", err)
				return
			}
			for p := range seq {
				pr.next[p].Store(seq[p])
			}
			if err := board.Wait(ctx, "the consumers to catch up with the producer", func() bool {
				return pr.stopped.Load() || lag() <= maxLag
			}); err != nil {
				pr.err = err
				return
			}
		}
	}()
	t.Cleanup(func() { pr.stopped.Store(true); <-pr.done })
	return pr
}

// produced returns the records acknowledged so far per partition.
func (pr *producer) produced() [seedPartitions]int64 {
	var out [seedPartitions]int64
	for p := range out {
		out[p] = pr.next[p].Load()
	}
	return out
}

// stop stops the producer and returns the end offsets: what was
// acknowledged per partition.
func (pr *producer) stop() [seedPartitions]int64 {
	pr.t.Helper()
	pr.stopped.Store(true)
	<-pr.done
	if pr.err != nil {
		pr.t.Fatal(pr.err)
	}
	return pr.produced()
}

// readLog reads every partition of the seed topic from 0 to ends without
// a group, checks that the broker's end offsets are ends and that each
// record carries its own offset's number, and returns the values.
func readLog(t *testing.T, ctx context.Context, addr string, ends [seedPartitions]int64) [seedPartitions][]string {
	t.Helper()
	adm := newAdmin(t, addr)
	listed, err := adm.ListEndOffsets(ctx, seedTopic)
	if err != nil {
		t.Fatal(err)
	}
	listed.Each(func(o kadm.ListedOffset) {
		if o.Err != nil || o.Offset != ends[o.Partition] {
			t.Fatalf("partition %d ends at %d (%v), %d records were acknowledged", o.Partition, o.Offset, o.Err, ends[o.Partition])
		}
	})
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ConsumeTopics(seedTopic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	var log [seedPartitions][]string
	remaining := 0
	for p := range ends {
		remaining += int(ends[p])
	}
	for remaining > 0 {
		fs := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			t.Fatalf("reading the log: %v", err)
		}
		fs.EachError(func(_ string, p int32, err error) { t.Fatalf("fetch partition %d: %v", p, err) })
		fs.EachRecord(func(r *kgo.Record) {
			p := r.Partition
			if r.Offset != int64(len(log[p])) {
				t.Fatalf("log: partition %d offset %d after %d", p, r.Offset, len(log[p])-1)
			}
			if want := seedValue(p, r.Offset); string(r.Value) != want {
				t.Fatalf("log: %d/%d holds %q, want %q", p, r.Offset, r.Value, want)
			}
			if keyPartition(string(r.Key)) != p {
				t.Fatalf("log: key %q on partition %d", r.Key, p)
			}
			log[p] = append(log[p], string(r.Value))
			remaining--
		})
	}
	return log
}
