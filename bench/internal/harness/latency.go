package harness

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// Paced is the load of an end-to-end latency run: a producer that hands
// Rate records per second to its client, Batch records at a time on a
// fixed schedule, for Duration, while a consumer reads them back.
type Paced struct {
	Topic string
	// ValueSize is each record's value size; at least 8 (the first 8
	// bytes carry the record's send time).
	ValueSize int
	// Rate is records per second, Batch the records handed over per tick
	// (so a tick every Batch/Rate seconds).
	Rate, Batch int
	Duration    time.Duration
}

// interval is the time between two batches.
func (p Paced) interval() time.Duration {
	return time.Duration(float64(time.Second) * float64(p.Batch) / float64(p.Rate))
}

// ticks is the number of batches of the run.
func (p Paced) ticks() int64 {
	return max(1, int64(p.Duration/p.interval()))
}

// Records is the number of records the run sends.
func (p Paced) Records() int64 { return p.ticks() * int64(p.Batch) }

// LatencyResult is what a paced run measured.
type LatencyResult struct {
	// Latencies has one sample per record, sorted: the time the consumer
	// had it, less the time it was due to be sent.
	Latencies []time.Duration
	// SendRate is records per second handed to the producer's client:
	// Records over the time from the first batch until the last one was
	// handed over, plus one interval (exactly Rate when every batch was
	// on time).
	SendRate float64
	// MaxBehind is how late the producer was against its schedule at
	// worst (time the machine or a full client buffer held it back).
	MaxBehind time.Duration
}

// Percentile returns the q quantile (0 < q ≤ 1) of the samples, exactly:
// the smallest sample at or above which a fraction q of them lie (nearest
// rank). It is 0 without samples.
func (r LatencyResult) Percentile(q float64) time.Duration {
	return percentile(r.Latencies, q)
}

// percentile is the nearest-rank q quantile of sorted.
func percentile(sorted []time.Duration, q float64) time.Duration {
	n := len(sorted)
	if n == 0 {
		return 0
	}
	rank := int(math.Ceil(q*float64(n) - 1e-9)) // 1e-9: q*n's rounding error
	return sorted[min(max(rank, 1), n)-1]
}

// PacedLatency runs p against the cluster at seeds: a consumer client
// reads p.Topic from the start (no group) while a producer client
// (ProducerOpts) sends a warm-up record per partition, then p's batches
// on schedule. A record's latency runs from the time its batch was due
// (not when it was handed over, so a producer held back still counts the
// wait) until the consumer has it; both times come from this process's
// monotonic clock. Every record must be acknowledged and consumed once,
// in offset order per partition, with its value's size. health is as for
// Produce.
func PacedLatency(ctx context.Context, seeds []string, p Paced, partitions int32, log *ClientLog, health func() error) (LatencyResult, error) {
	if p.ValueSize < 8 || p.Rate <= 0 || p.Batch <= 0 {
		return LatencyResult{}, fmt.Errorf("paced run: bad load %+v", p)
	}
	var sent, acked, consumed atomic.Int64
	ctx, cancel := Watch(ctx, StallTimeout(), func() int64 { return sent.Load() + acked.Load() + consumed.Load() }, func() string {
		return fmt.Sprintf("%d records sent, %d acknowledged, %d consumed, of %d", sent.Load(), acked.Load(), consumed.Load(), p.Records())
	}, health)
	defer cancel()

	prod, err := NewClient(seeds, log, ProducerOpts(p.ValueSize)...)
	if err != nil {
		return LatencyResult{}, err
	}
	defer prod.Close()
	cons, err := NewClient(seeds, log,
		kgo.ConsumeTopics(p.Topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		return LatencyResult{}, err
	}
	defer cons.Close()

	// Values carry the nanoseconds from base to the time their batch was
	// due; 0 marks the warm-up records.
	base := time.Now()
	var (
		failed   atomic.Int64
		errOnce  sync.Once
		firstErr error
	)
	promise := func(r *kgo.Record, err error) {
		if err != nil {
			failed.Add(1)
			errOnce.Do(func() { firstErr = fmt.Errorf("produce to %s/%d: %w", r.Topic, r.Partition, err) })
			return
		}
		acked.Add(1)
	}

	// The consumer: one goroutine, which owns lat and next.
	total := p.Records()
	warm := int64(partitions)
	lat := make([]time.Duration, 0, total)
	warmSeen := make(chan struct{})
	consErr := make(chan error, 1)
	go func() {
		next := map[int32]int64{}
		var warmGot int64
		for consumed.Load() < total {
			fetches := cons.PollFetches(ctx)
			now := time.Since(base)
			if ctx.Err() != nil {
				consErr <- cause(ctx, ctx.Err())
				return
			}
			var ferr error
			fetches.EachError(func(t string, part int32, err error) {
				ferr = errors.Join(ferr, fmt.Errorf("fetch %s/%d at offset %d: %w", t, part, next[part], err))
			})
			if ferr != nil {
				consErr <- ferr
				return
			}
			for it := fetches.RecordIter(); !it.Done(); {
				r := it.Next()
				switch {
				case r.Offset != next[r.Partition]:
					consErr <- fmt.Errorf("consume %s/%d: got offset %d, want %d (a gap or a repeat)", r.Topic, r.Partition, r.Offset, next[r.Partition])
					return
				case len(r.Value) != p.ValueSize:
					consErr <- fmt.Errorf("consume %s/%d offset %d: value has %d bytes, want %d", r.Topic, r.Partition, r.Offset, len(r.Value), p.ValueSize)
					return
				}
				next[r.Partition]++
				stamp := time.Duration(binary.LittleEndian.Uint64(r.Value))
				if stamp == 0 {
					if warmGot++; warmGot == warm {
						close(warmSeen)
					}
					continue
				}
				lat = append(lat, now-stamp)
				consumed.Add(1)
			}
		}
		consErr <- nil
	}()

	// Warm up: metadata, a producer id, and the consumer's first fetches.
	// (The uniform-bytes partitioner need not put one on every partition:
	// the consumer waits for the count, not for each partition.)
	payload := Payload(p.ValueSize)
	zero := slices.Clone(payload)
	binary.LittleEndian.PutUint64(zero, 0)
	for range warm {
		prod.Produce(ctx, &kgo.Record{Topic: p.Topic, Value: zero}, promise)
	}
	if err := prod.Flush(ctx); err != nil {
		return LatencyResult{}, fmt.Errorf("warm-up flush: %w", cause(ctx, err))
	}
	select {
	case <-warmSeen:
	case err := <-consErr:
		return LatencyResult{}, fmt.Errorf("warm-up consume: %v", err)
	case <-ctx.Done():
		return LatencyResult{}, fmt.Errorf("warm-up consume: %w", cause(ctx, ctx.Err()))
	}
	acked.Store(0)

	// The paced run.
	var res LatencyResult
	interval := p.interval()
	start := time.Now()
	timer := time.NewTimer(0)
	defer timer.Stop()
	for k := range p.ticks() {
		due := start.Add(time.Duration(k) * interval)
		if wait := time.Until(due); wait > 0 {
			timer.Reset(wait)
			select {
			case <-timer.C:
			case <-ctx.Done():
				return LatencyResult{}, fmt.Errorf("paced produce: %w", cause(ctx, ctx.Err()))
			}
		}
		res.MaxBehind = max(res.MaxBehind, time.Since(due))
		v := slices.Clone(payload)
		binary.LittleEndian.PutUint64(v, uint64(due.Sub(base)))
		for range p.Batch {
			prod.Produce(ctx, &kgo.Record{Topic: p.Topic, Value: v}, promise)
		}
		sent.Add(int64(p.Batch))
		if failed.Load() > 0 {
			break
		}
	}
	res.SendRate = float64(sent.Load()) / (time.Since(start) + interval).Seconds()
	flushErr := prod.Flush(ctx)
	errOnce.Do(func() {})
	switch {
	case failed.Load() > 0:
		return LatencyResult{}, fmt.Errorf("%d of %d records failed, first: %w", failed.Load(), total, cause(ctx, firstErr))
	case flushErr != nil:
		return LatencyResult{}, fmt.Errorf("flush: %w", cause(ctx, flushErr))
	case acked.Load() != total:
		return LatencyResult{}, fmt.Errorf("%d of %d records acknowledged", acked.Load(), total)
	}
	if err := <-consErr; err != nil {
		return LatencyResult{}, fmt.Errorf("consume: %w", err)
	}
	slices.Sort(lat)
	res.Latencies = lat
	return res, nil
}
