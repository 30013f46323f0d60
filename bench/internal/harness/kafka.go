package harness

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// ProduceBufferBytes is how many bytes of record values one producer keeps
// buffered and in flight (MaxBufferedRecords = ProduceBufferBytes / value
// size): 32 MiB covers five 1 MB batches in flight per broker plus the next
// ones being filled, so the client never waits on its own buffer while the
// broker keeps up.
const ProduceBufferBytes = 32 << 20

// Payload returns size random bytes: the value every record carries.
// Random, so that no layer can make the bytes smaller than they are.
func Payload(size int) []byte {
	p := make([]byte, size)
	r := rand.NewChaCha8([32]byte{'r', 'u', 'n', 'n', 'e', 'l'})
	r.Read(p)
	return p
}

// NewClient returns a kgo client for seeds that logs its warnings to log
// (which may be nil). opts come last and win.
func NewClient(seeds []string, log *ClientLog, opts ...kgo.Opt) (*kgo.Client, error) {
	all := []kgo.Opt{kgo.SeedBrokers(seeds...)}
	if log != nil {
		all = append(all, kgo.WithLogger(log))
	}
	return kgo.NewClient(append(all, opts...)...)
}

// ProducerOpts are the producer settings of every benchmark: franz-go's
// defaults (acks=all, idempotent, linger 10ms, batches up to 1 MB, five
// requests in flight per broker, the uniform-bytes partitioner) except no
// compression, and a buffer of ProduceBufferBytes.
func ProducerOpts(valueSize int) []kgo.Opt {
	return []kgo.Opt{
		kgo.ProducerBatchCompression(kgo.NoCompression()),
		kgo.MaxBufferedRecords(max(1, ProduceBufferBytes/valueSize)),
	}
}

// Produce sends n records with value payload to topic through cl,
// asynchronously, and waits until every one is acknowledged. A record that
// fails, a flush that does not finish and a run without progress for
// StallTimeout are errors. health, when not nil, is polled and its error
// ends the run (a broker process that exited).
func Produce(ctx context.Context, cl *kgo.Client, topic string, n int64, payload []byte, health func() error) error {
	var t tally
	ctx, cancel := t.watch(ctx, cl, n, health, nil)
	defer cancel()
	for i := int64(0); i < n && t.failed.Load() == 0 && ctx.Err() == nil; i++ {
		cl.Produce(ctx, &kgo.Record{Topic: topic, Value: payload}, t.promise)
	}
	return t.result(ctx, n, cl.Flush(ctx))
}

// tally counts a producer's acknowledgements and keeps its first failure.
type tally struct {
	acked, failed atomic.Int64
	once          sync.Once
	first         error
}

// watch is Watch with the tally's acknowledgements as progress; more,
// when not nil, adds to the description of a stalled run.
func (t *tally) watch(ctx context.Context, cl *kgo.Client, n int64, health func() error, more func() string) (context.Context, context.CancelFunc) {
	return Watch(ctx, StallTimeout(), t.acked.Load, func() string {
		s := fmt.Sprintf("%d of %d records acknowledged, %d failed, %d buffered in the client",
			t.acked.Load(), n, t.failed.Load(), cl.BufferedProduceRecords())
		if more != nil {
			s += ", " + more()
		}
		return s
	}, health)
}

// promise is the kgo promise of every record.
func (t *tally) promise(r *kgo.Record, err error) {
	if err != nil {
		t.failed.Add(1)
		t.once.Do(func() { t.first = fmt.Errorf("produce to %s/%d: %w", r.Topic, r.Partition, err) })
		return
	}
	t.acked.Add(1)
}

// result is the outcome of a run that meant to have n records
// acknowledged, given the error of its last flush.
func (t *tally) result(ctx context.Context, n int64, flushErr error) error {
	if f := t.failed.Load(); f > 0 {
		t.once.Do(func() {}) // t.first is set once this returns
		return fmt.Errorf("%d of %d records failed (%d acknowledged), first: %w", f, n, t.acked.Load(), cause(ctx, t.first))
	}
	if flushErr != nil {
		return fmt.Errorf("flush: %w", cause(ctx, flushErr))
	}
	if a := t.acked.Load(); a != n {
		return fmt.Errorf("%d of %d records acknowledged", a, n)
	}
	return nil
}

// Dataset is what a topic holds for a consume run: records at offsets
// [Start[p], End[p]) of every partition p, each with a value of ValueSize
// bytes.
type Dataset struct {
	Topic      string
	Start, End map[int32]int64
	ValueSize  int
}

// Records is the number of records in d.
func (d Dataset) Records() int64 {
	var n int64
	for p, e := range d.End {
		n += e - d.Start[p]
	}
	return n
}

// LoadDataset lists the start and end offsets of topic.
func LoadDataset(ctx context.Context, adm *kadm.Client, topic string, valueSize int) (Dataset, error) {
	d := Dataset{Topic: topic, Start: map[int32]int64{}, End: map[int32]int64{}, ValueSize: valueSize}
	for _, list := range []struct {
		fn  func(context.Context, ...string) (kadm.ListedOffsets, error)
		dst map[int32]int64
	}{{adm.ListStartOffsets, d.Start}, {adm.ListEndOffsets, d.End}} {
		offs, err := list.fn(ctx, topic)
		if err == nil {
			err = offs.Error()
		}
		if err != nil {
			return Dataset{}, fmt.Errorf("list offsets of %s: %w", topic, err)
		}
		offs.Each(func(o kadm.ListedOffset) { list.dst[o.Partition] = o.Offset })
	}
	if len(d.End) == 0 {
		return Dataset{}, fmt.Errorf("list offsets of %s: no partitions", topic)
	}
	return d, nil
}

// Consume reads n records of d through clients for seeds, in passes: each
// pass is a new client that starts at d.Start and reads all of d (the last
// pass may stop early). Every record is checked: offsets per partition
// must follow each other without gaps or repeats and stay below d.End, and
// every value must have d.ValueSize bytes. opts are added to each client.
func Consume(ctx context.Context, seeds []string, d Dataset, n int64, log *ClientLog, health func() error, opts ...kgo.Opt) error {
	total := d.Records()
	if total <= 0 {
		return fmt.Errorf("consume %s: data set is empty", d.Topic)
	}
	var got atomic.Int64
	ctx, cancel := Watch(ctx, StallTimeout(), got.Load, func() string {
		return fmt.Sprintf("%d of %d records consumed", got.Load(), n)
	}, health)
	defer cancel()
	for got.Load() < n {
		if err := consumePass(ctx, seeds, d, min(total, n-got.Load()), &got, log, opts); err != nil {
			return err
		}
	}
	return nil
}

func consumePass(ctx context.Context, seeds []string, d Dataset, want int64, got *atomic.Int64, log *ClientLog, opts []kgo.Opt) error {
	starts := map[int32]kgo.Offset{}
	next := map[int32]int64{}
	for p, o := range d.Start {
		starts[p] = kgo.NewOffset().At(o)
		next[p] = o
	}
	cl, err := NewClient(seeds, log, append([]kgo.Opt{
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{d.Topic: starts}),
	}, opts...)...)
	if err != nil {
		return err
	}
	defer cl.Close()
	var read int64
	for read < want {
		fetches := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			return fmt.Errorf("consume %s: %w", d.Topic, cause(ctx, ctx.Err()))
		}
		var ferr error
		fetches.EachError(func(t string, p int32, err error) {
			ferr = errors.Join(ferr, fmt.Errorf("fetch %s/%d at offset %d: %w", t, p, next[p], err))
		})
		if ferr != nil {
			return ferr
		}
		for it := fetches.RecordIter(); !it.Done() && read < want; {
			r := it.Next()
			p := r.Partition
			switch {
			case r.Offset != next[p]:
				return fmt.Errorf("consume %s/%d: got offset %d, want %d (a gap or a repeat)", d.Topic, p, r.Offset, next[p])
			case r.Offset >= d.End[p]:
				return fmt.Errorf("consume %s/%d: got offset %d at or past the end offset %d", d.Topic, p, r.Offset, d.End[p])
			case len(r.Value) != d.ValueSize:
				return fmt.Errorf("consume %s/%d offset %d: value has %d bytes, want %d", d.Topic, p, r.Offset, len(r.Value), d.ValueSize)
			}
			next[p]++
			read++
			got.Add(1)
		}
	}
	return nil
}

// CreateTopic creates topic with partitions and replication factor 1.
func CreateTopic(ctx context.Context, adm *kadm.Client, topic string, partitions int32, configs map[string]*string) error {
	return CreateReplicatedTopic(ctx, adm, topic, partitions, 1, configs)
}

// CreateReplicatedTopic creates topic with partitions and replication
// factor rf.
func CreateReplicatedTopic(ctx context.Context, adm *kadm.Client, topic string, partitions int32, rf int16, configs map[string]*string) error {
	resp, err := adm.CreateTopic(ctx, partitions, rf, configs, topic)
	if err == nil {
		err = resp.Err
	}
	if err != nil {
		return fmt.Errorf("create topic %s (%d partitions, RF=%d): %w %s", topic, partitions, rf, err, resp.ErrMessage)
	}
	return nil
}

// DeleteTopic deletes topic.
func DeleteTopic(ctx context.Context, adm *kadm.Client, topic string) error {
	resp, err := adm.DeleteTopic(ctx, topic)
	if err == nil {
		err = resp.Err
	}
	if err != nil {
		return fmt.Errorf("delete topic %s: %w %s", topic, err, resp.ErrMessage)
	}
	return nil
}

var topicSeq atomic.Int64

// TopicName returns a topic name not returned before by this process.
func TopicName(prefix string) string {
	return fmt.Sprintf("%s-%d-%d", prefix, time.Now().Unix()%100000, topicSeq.Add(1))
}
