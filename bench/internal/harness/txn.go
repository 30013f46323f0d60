package harness

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// Commit says when a transactional producer commits: once its transaction
// holds Records records, or once Interval has passed since the transaction
// began, whichever comes first. A zero field is no such rule.
type Commit struct {
	Records  int64
	Interval time.Duration
}

// TxnResult is what a transactional run wrote besides its records.
type TxnResult struct {
	// Commits is the number of transactions committed.
	Commits int64
	// Markers is the number of commit markers: one per partition a
	// transaction wrote to. Each takes an offset of its partition.
	Markers int64
	// EndTxnTime is the time spent in EndTransaction (the EndTxn round
	// trip, with its retries), summed over the commits.
	EndTxnTime time.Duration
}

// ProduceTxn sends n records with value payload to topic through cl, a
// client with a transactional id, in transactions that commit as every
// says: each begins, produces asynchronously (as Produce does) until
// every's rule or the n-th record ends it, flushes, and commits. Every
// record must be acknowledged and every commit succeed; a run without
// progress for StallTimeout is an error. health is as for Produce.
func ProduceTxn(ctx context.Context, cl *kgo.Client, topic string, n int64, payload []byte, every Commit, health func() error) (TxnResult, error) {
	if every.Records <= 0 && every.Interval <= 0 {
		return TxnResult{}, errors.New("produce in transactions: no commit rule")
	}
	var t tally
	var commits atomic.Int64
	ctx, cancel := t.watch(ctx, cl, n, health, func() string {
		return fmt.Sprintf("%d transactions committed", commits.Load())
	})
	defer cancel()
	var res TxnResult
	var sent int64
	for sent < n && t.failed.Load() == 0 && ctx.Err() == nil {
		if err := cl.BeginTransaction(); err != nil {
			return res, fmt.Errorf("begin transaction %d: %w", res.Commits+1, err)
		}
		parts := &partitionSet{}
		promise := func(r *kgo.Record, err error) {
			if err == nil {
				parts.add(r.Partition)
			}
			t.promise(r, err)
		}
		// A transaction takes one record at least.
		began := time.Now()
		for k := int64(0); sent < n && t.failed.Load() == 0 && ctx.Err() == nil && (k == 0 ||
			(every.Records <= 0 || k < every.Records) && (every.Interval <= 0 || time.Since(began) < every.Interval)); k++ {
			cl.Produce(ctx, &kgo.Record{Topic: topic, Value: payload}, promise)
			sent++
		}
		// Flush returns once every promise of the transaction ran.
		if err := cl.Flush(ctx); err != nil || t.failed.Load() > 0 {
			return res, t.result(ctx, n, err)
		}
		endStart := time.Now()
		if err := cl.EndTransaction(ctx, kgo.TryCommit); err != nil {
			return res, fmt.Errorf("commit transaction %d (%d records acknowledged so far): %w", res.Commits+1, t.acked.Load(), cause(ctx, err))
		}
		res.EndTxnTime += time.Since(endStart)
		res.Commits++
		res.Markers += parts.len()
		commits.Store(res.Commits)
	}
	return res, t.result(ctx, n, nil)
}

// partitionSet is the set of partitions a transaction wrote to, filled
// by promises.
type partitionSet struct {
	mu struct {
		sync.Mutex
		ps map[int32]bool
	}
}

func (s *partitionSet) add(p int32) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.mu.ps == nil {
		s.mu.ps = map[int32]bool{}
	}
	s.mu.ps[p] = true
}

func (s *partitionSet) len() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return int64(len(s.mu.ps))
}

// AwaitDataset lists topic's offsets until its partitions hold want
// offsets in all (records, and transaction markers, which the coordinator
// writes after it answered the commit) and each partition's last stable
// offset equals its end offset (no transaction is left open), or until
// StallTimeout passes, which is an error that says what it saw.
func AwaitDataset(ctx context.Context, adm *kadm.Client, topic string, valueSize int, want int64) (Dataset, error) {
	deadline := time.Now().Add(StallTimeout())
	for {
		d, err := LoadDataset(ctx, adm, topic, valueSize)
		if err != nil {
			return Dataset{}, err
		}
		stable, err := adm.ListCommittedOffsets(ctx, topic)
		if err == nil {
			err = stable.Error()
		}
		if err != nil {
			return Dataset{}, fmt.Errorf("list last stable offsets of %s: %w", topic, err)
		}
		open := 0
		stable.Each(func(o kadm.ListedOffset) {
			if o.Offset != d.End[o.Partition] {
				open++
			}
		})
		got := d.Records()
		if got == want && open == 0 {
			return d, nil
		}
		if got > want || time.Now().After(deadline) {
			return Dataset{}, fmt.Errorf("%s: the end offsets hold %d records and markers, want %d; %d partitions have a last stable offset below their end", topic, got, want, open)
		}
		select {
		case <-ctx.Done():
			return Dataset{}, ctx.Err()
		case <-time.After(10 * time.Millisecond):
		}
	}
}
