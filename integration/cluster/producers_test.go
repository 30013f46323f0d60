package cluster

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// valueFormat is every produced value: producer id and sequence number.
const valueFormat = "p%03d-s%09d"

func encodeValue(producer, seq int) string { return fmt.Sprintf(valueFormat, producer, seq) }

func decodeValue(v string) (producer, seq int, ok bool) {
	_, err := fmt.Sscanf(v, valueFormat, &producer, &seq)
	return producer, seq, err == nil && v == encodeValue(producer, seq)
}

// ackedRecord is a record the broker acknowledged.
type ackedRecord struct {
	Topic     string
	Partition int32
	Offset    int64
	Value     string
	At        time.Time // when the acknowledgement arrived
}

// batchAck is a batch a node acknowledged (kgo's OnProduceBatchWritten
// hook): which node answered, for which partition, how many records, and
// when the hook ran (just after the records' promises).
type batchAck struct {
	Node      int32
	Partition int32
	Records   int
	At        time.Time
}

// failedRecord is a record whose produce failed: it may or may not be
// stored, but not twice.
type failedRecord struct {
	Value string
	Err   error
	At    time.Time
}

// produceLimits bound a producer set.
type produceLimits struct {
	Records     int           // per producer; 0: until Stop or the context ends
	Interval    time.Duration // between one producer's records; 0: as fast as its buffer allows
	MaxBuffered int           // records in flight per producer; 0: 100
	// Delivery bounds one record's retries (kgo.RecordDeliveryTimeout);
	// 0: 30 s.
	Delivery time.Duration
}

// producerSet is k franz-go producers, idempotent with acks=all, writing
// encodeValue(id, seq) with the sequence as key (so values spread over
// partitions) and recording every outcome.
type producerSet struct {
	topic string
	stop  chan struct{}
	once  sync.Once
	wg    sync.WaitGroup
	mu    struct {
		sync.Mutex
		sent    int
		acked   []ackedRecord
		batches []batchAck
		failed  []failedRecord
		errs    []error // client creation errors
	}
}

// flushTimeout bounds the wait for buffered records at Stop.
const flushTimeout = 30 * time.Second

// startProducers starts k producers (ids 0..k-1) on topic, their clients
// made with opts besides their own (a kgo.Dialer ...). They stop after
// lim.Records each, at Stop, or when ctx ends (which fails what is
// buffered).
func startProducers(ctx context.Context, seeds []string, topic string, k int, lim produceLimits, opts ...kgo.Opt) *producerSet {
	if lim.MaxBuffered == 0 {
		lim.MaxBuffered = 100
	}
	if lim.Delivery == 0 {
		lim.Delivery = 30 * time.Second
	}
	ps := &producerSet{topic: topic, stop: make(chan struct{})}
	for id := range k {
		ps.wg.Add(1)
		go func() {
			defer ps.wg.Done()
			ps.run(ctx, seeds, id, lim, opts)
		}()
	}
	return ps
}

func (ps *producerSet) run(ctx context.Context, seeds []string, id int, lim produceLimits, opts []kgo.Opt) {
	cl, err := kgo.NewClient(append([]kgo.Opt{
		kgo.SeedBrokers(seeds...),
		kgo.ClientID(fmt.Sprintf("producer-%d", id)),
		kgo.DefaultProduceTopic(ps.topic),
		kgo.RequiredAcks(kgo.AllISRAcks()), // idempotent: franz-go's default with acks=all
		kgo.MaxBufferedRecords(lim.MaxBuffered),
		kgo.RecordDeliveryTimeout(lim.Delivery),
		// Find a new leader soon after an error rather than after 5 s.
		kgo.MetadataMinAge(250 * time.Millisecond),
		kgo.WithHooks(batchHook{ps}),
	}, opts...)...)
	if err != nil {
		ps.mu.Lock()
		ps.mu.errs = append(ps.mu.errs, err)
		ps.mu.Unlock()
		return
	}
	defer cl.Close() // fails what is still buffered, calling each promise
	var tick <-chan time.Time
	if lim.Interval > 0 {
		t := time.NewTicker(lim.Interval)
		defer t.Stop()
		tick = t.C
	}
loop:
	for seq := 0; lim.Records == 0 || seq < lim.Records; seq++ {
		select {
		case <-ps.stop:
			break loop
		case <-ctx.Done():
			break loop
		default:
		}
		if tick != nil {
			select {
			case <-tick:
			case <-ps.stop:
				break loop
			case <-ctx.Done():
				break loop
			}
		}
		ps.mu.Lock()
		ps.mu.sent++
		ps.mu.Unlock()
		r := &kgo.Record{Key: []byte(strconv.Itoa(seq)), Value: []byte(encodeValue(id, seq))}
		cl.Produce(ctx, r, ps.promise)
	}
	fctx, cancel := context.WithTimeout(ctx, flushTimeout)
	defer cancel()
	cl.Flush(fctx)
}

func (ps *producerSet) promise(r *kgo.Record, err error) {
	now := time.Now()
	ps.mu.Lock()
	defer ps.mu.Unlock()
	if err != nil {
		ps.mu.failed = append(ps.mu.failed, failedRecord{Value: string(r.Value), Err: err, At: now})
		return
	}
	ps.mu.acked = append(ps.mu.acked, ackedRecord{Topic: r.Topic, Partition: r.Partition, Offset: r.Offset, Value: string(r.Value), At: now})
}

// batchHook records the node that acknowledged each batch.
type batchHook struct{ ps *producerSet }

var _ kgo.HookProduceBatchWritten = batchHook{}

func (h batchHook) OnProduceBatchWritten(meta kgo.BrokerMetadata, _ string, partition int32, m kgo.ProduceBatchMetrics) {
	now := time.Now()
	h.ps.mu.Lock()
	defer h.ps.mu.Unlock()
	h.ps.mu.batches = append(h.ps.mu.batches, batchAck{Node: meta.NodeID, Partition: partition, Records: m.NumRecords, At: now})
}

// Stop ends production, waits up to flushTimeout for buffered records and
// returns once every producer is closed (every promise called). It is
// idempotent.
func (ps *producerSet) Stop() {
	ps.once.Do(func() { close(ps.stop) })
	ps.wg.Wait()
}

// Acked returns the acknowledged records so far, in acknowledgement order.
func (ps *producerSet) Acked() []ackedRecord {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	return slices.Clone(ps.mu.acked)
}

// Batches returns the acknowledged batches so far, with the node that
// acknowledged each.
func (ps *producerSet) Batches() []batchAck {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	return slices.Clone(ps.mu.batches)
}

// Failed returns the failed records so far.
func (ps *producerSet) Failed() []failedRecord {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	return slices.Clone(ps.mu.failed)
}

// Counts returns how many records were handed to the clients, acknowledged
// and failed so far, and the clients that could not be created.
func (ps *producerSet) Counts() (sent, acked, failed int, errs []error) {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	return ps.mu.sent, len(ps.mu.acked), len(ps.mu.failed), slices.Clone(ps.mu.errs)
}

// ackedSince reports whether every one of partitions has an acknowledgement
// that arrived after t.
func (ps *producerSet) ackedSince(t time.Time, partitions []int32) bool {
	return len(ps.failoverTimes(t, partitions).Missing) == 0
}

// failover is, per partition, the time from an event (a leader kill) to
// the first acknowledgement after it.
type failover struct {
	Per         map[int32]time.Duration
	Median, Max time.Duration
	Missing     []int32 // partitions without an acknowledgement since the event
}

func (f failover) String() string {
	return fmt.Sprintf("median %v, max %v over %d partitions (none yet on %v)",
		f.Median.Round(time.Millisecond), f.Max.Round(time.Millisecond), len(f.Per), f.Missing)
}

// failoverTimes measures, for each of partitions, the time from event to
// the first acknowledgement that arrived after it. Take the event's time
// after the kill returned (the process is gone), so that no answer of the
// killed node counts.
func (ps *producerSet) failoverTimes(event time.Time, partitions []int32) failover {
	first := map[int32]time.Time{}
	ps.mu.Lock()
	for _, a := range ps.mu.acked {
		firstAfter(first, event, a.Partition, a.At)
	}
	ps.mu.Unlock()
	return failoverOf(event, partitions, first)
}

// failoverAway is failoverTimes counting only the batches a node other
// than from acknowledged (from, cut off at event, may still have answered
// just after it).
func (ps *producerSet) failoverAway(event time.Time, partitions []int32, from int32) failover {
	first := map[int32]time.Time{}
	ps.mu.Lock()
	for _, b := range ps.mu.batches {
		if b.Node != from {
			firstAfter(first, event, b.Partition, b.At)
		}
	}
	ps.mu.Unlock()
	return failoverOf(event, partitions, first)
}

// firstAfter keeps in first, per partition, the earliest time after event.
func firstAfter(first map[int32]time.Time, event time.Time, partition int32, at time.Time) {
	if at.After(event) {
		if t, ok := first[partition]; !ok || at.Before(t) {
			first[partition] = at
		}
	}
}

// failoverOf summarizes, for each of partitions, the time from event to
// its first acknowledgement after it.
func failoverOf(event time.Time, partitions []int32, first map[int32]time.Time) failover {
	f := failover{Per: map[int32]time.Duration{}}
	var ds []time.Duration
	for _, p := range partitions {
		t, ok := first[p]
		if !ok {
			f.Missing = append(f.Missing, p)
			continue
		}
		f.Per[p] = t.Sub(event)
		ds = append(ds, t.Sub(event))
	}
	if len(ds) > 0 {
		slices.Sort(ds)
		f.Max = ds[len(ds)-1]
		f.Median = ds[len(ds)/2]
		if len(ds)%2 == 0 {
			f.Median = (ds[len(ds)/2-1] + ds[len(ds)/2]) / 2
		}
	}
	return f
}
