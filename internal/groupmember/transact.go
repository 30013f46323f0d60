package groupmember

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// sessionBackoff is the pause before a pipeline stage opens a new
// session after its last one failed.
const sessionBackoff = 250 * time.Millisecond

// errSessionFailed: loading the producer id or End failed, after which
// franz-go's session must not go on.
var errSessionFailed = errors.New("groupmember: transact session failed")

// RunTransact runs one stage of an exactly-once consume-transform-produce
// pipeline until ctx ends: a kgo.GroupTransactSession used as franz-go
// documents it (its examples/transactions/eos). It loads its producer id
// first (InitProducerId, as Kafka's initTransactions), then in a loop
// polls cfg.Topic read_committed, begins a transaction, produces each
// record's key and value to cfg.Output, and ends the transaction with a
// commit if every produce succeeded (kgo.AbortingFirstErrPromise); the
// session commits the polled offsets in the same transaction
// (TxnOffsetCommit) and aborts instead when the group rebalanced
// meanwhile. A transaction copies what one poll returns: about
// cfg.FetchMaxPartitionBytes of each partition the stage owns.
//
// It emits Assigned, Revoked and Lost like Run, and for every transaction
// Committed (the offsets committed, N records copied), Aborted (N records
// abandoned, Err why if a produce failed) or, when End fails, Failed. It
// does not emit Polled: a pipeline copies too many records to report
// each.
//
// An error from End leaves the session unusable (franz-go: "no returned
// error is retryable"): the stage reports it as Failed, closes the
// session and opens a new one with the same transactional id, whose
// InitProducerId fences the old producer and aborts its transaction; so
// does an error loading the producer id. The
// same happens when the process is SIGKILLed and started again with the
// same Config. When ctx ends the stage finishes the transaction in hand,
// then leaves the group.
func RunTransact(ctx context.Context, cfg Config, emit func([]Event)) error {
	if cfg.TransactionalID == "" {
		return errors.New("groupmember: a pipeline stage needs a TransactionalID")
	}
	for {
		err := transactSession(ctx, cfg, emit)
		if !errors.Is(err, errSessionFailed) {
			return err
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(sessionBackoff):
		}
	}
}

// transactSession runs one GroupTransactSession until ctx ends (nil) or
// it fails (errSessionFailed, reported as Failed).
func transactSession(ctx context.Context, cfg Config, emit func([]Event)) error {
	opts, err := groupOpts(cfg, emit)
	if err != nil {
		return err
	}
	opts = append(opts,
		kgo.TransactionalID(cfg.TransactionalID),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.DefaultProduceTopic(cfg.Output),
	)
	if cfg.TransactionTimeout > 0 {
		opts = append(opts, kgo.TransactionTimeout(cfg.TransactionTimeout))
	}
	sess, err := kgo.NewGroupTransactSession(opts...)
	if err != nil {
		return err
	}
	defer sess.Close()
	// Load the producer id before polling, as Kafka's initTransactions:
	// InitProducerId fences a predecessor with our transactional id and
	// aborts its open transaction at once. Loaded lazily, at the first
	// produce, it would come after the group's OffsetFetch, which
	// (require_stable) may wait for that very transaction's offsets.
	if _, _, err := sess.Client().ProducerID(ctx); err != nil {
		if ctx.Err() != nil {
			return nil
		}
		emit([]Event{{Kind: Failed, Err: fmt.Sprintf("init producer id: %v; starting a new session", err)}})
		return errSessionFailed
	}
	// A transaction begun is ended even when ctx ends meanwhile: End
	// with a cancelled context leaves the client in an invalid state.
	txnCtx := context.WithoutCancel(ctx)
	for {
		// PollFetches, not PollRecords: a poll takes what every owned
		// partition has buffered, where a bound on records would drain
		// one partition while the others wait.
		fs := sess.PollFetches(ctx)
		if ctx.Err() != nil {
			return nil // no transaction is open: it begins after the poll
		}
		var evs []Event
		fs.EachError(func(t string, p int32, err error) {
			evs = append(evs, Event{Kind: Failed, Partition: p, Err: fmt.Sprintf("fetch %s/%d: %v", t, p, err)})
		})
		if len(evs) > 0 {
			emit(evs)
		}
		if fs.NumRecords() == 0 {
			continue
		}
		if err := sess.Begin(); err != nil {
			return fmt.Errorf("groupmember: begin: %w", err)
		}
		e := kgo.AbortingFirstErrPromise(sess.Client())
		next := map[int32]int64{}
		n := 0
		fs.EachRecord(func(r *kgo.Record) {
			sess.Produce(txnCtx, &kgo.Record{Key: r.Key, Value: r.Value}, e.Promise())
			next[r.Partition] = r.Offset + 1
			n++
		})
		produceErr := e.Err()
		committed, err := sess.End(txnCtx, kgo.TransactionEndTry(produceErr == nil))
		switch {
		case err != nil: // committed or not: the session cannot tell
			emit([]Event{{Kind: Failed, Err: fmt.Sprintf("end transaction of %d records: %v; starting a new session", n, err)}})
			return errSessionFailed
		case committed:
			emit([]Event{{Kind: Committed, Offsets: next, N: n}})
		case produceErr != nil:
			emit([]Event{{Kind: Aborted, N: n, Err: "produce: " + produceErr.Error()}})
		default: // the group rebalanced, or the offset commit failed
			emit([]Event{{Kind: Aborted, N: n}})
		}
	}
}
