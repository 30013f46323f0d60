package server

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/runnel-io/runnel/broker/internal/batch"
	"github.com/runnel-io/runnel/broker/internal/group"
	"github.com/runnel-io/runnel/broker/internal/metadata"
	"github.com/runnel-io/runnel/broker/internal/partition"
	"github.com/runnel-io/runnel/broker/internal/txn"
)

// txnStateTopic is Kafka's internal topic of transaction state.
const txnStateTopic = "__transaction_state"

// txnTickInterval is how often the transaction cores' timers are fired;
// the cores themselves look for timed-out transactions and expired ids
// only every transaction.abort.timed.out.transaction.cleanup.interval.ms
// and transaction.remove.expired.transaction.cleanup.interval.ms.
const txnTickInterval = 100 * time.Millisecond

// txnCoordinator is the thin IO shell around the deterministic
// txn.Coordinator cores: one core per __transaction_state partition this
// node leads, each guarded by its shard's mutex, as groupCoordinator does
// for groups. A request locks its transactional id's shard, steps the
// core, appends the records to the shard's partition as one batch (under
// the lock, so records land in the order the core made them), unlocks,
// waits for the fsync and the ISR, reports the outcome to the core
// (Coordinator.Written), delivers the replies, and writes the transaction
// markers the core asks for (txn_markers.go).
type txnCoordinator struct {
	s          *Server
	nextWaiter atomic.Uint64
	mu         struct {
		sync.Mutex
		shards []*txnShard // nil until __transaction_state is open
	}
}

// txnShard is one __transaction_state partition and the core that owns
// its transactional ids.
type txnShard struct {
	tc   *txnCoordinator
	part *partition.Partition
	// epoch is the leader epoch of part the shard was loaded in: the
	// coordinator epoch stamped on its markers.
	epoch    int32
	dropped  chan struct{}
	dropOnce sync.Once
	mu       struct {
		sync.Mutex
		core    *txn.Coordinator
		waiters map[txn.Waiter]chan kmsg.Response
	}
}

func (s *Server) txnConfig(coordinatorEpoch int32) txn.Config {
	c := s.cfg
	ms := func(v int32) time.Duration { return time.Duration(v) * time.Millisecond }
	return txn.Config{
		MaxTimeout:          ms(c.TransactionMaxTimeoutMs),
		IDExpiration:        ms(c.TransactionalIDExpirationMs),
		AbortCheckInterval:  ms(c.TransactionAbortCheckIntervalMs),
		ExpiryCheckInterval: ms(c.TransactionExpiryCheckIntervalMs),
		CoordinatorEpoch:    coordinatorEpoch,
		NewProducerID: func() (int64, *kerr.Error) {
			ctx, cancel := context.WithTimeout(s.bg, groupReplicationTimeout)
			defer cancel()
			id, err := s.pids.allocate(ctx)
			if err != nil {
				s.logger.Warn("no producer id for a transactional producer", "err", err)
				return -1, kerr.CoordinatorNotAvailable
			}
			return id, nil
		},
	}
}

// topic returns __transaction_state, creating it if it does not exist, and
// sizes the shard table to its partitions.
func (tc *txnCoordinator) topic(ctx context.Context) (*metadata.Topic, error) {
	s := tc.s
	t, err := s.internalTopic(ctx, topicSpec{
		name: txnStateTopic, partitions: s.cfg.TransactionStateLogNumPartitions,
		replicas: s.cfg.TransactionStateLogReplicationFactor,
		configs: map[string]string{
			"cleanup.policy":      "compact",
			"compression.type":    "producer",
			"segment.bytes":       strconv.Itoa(int(s.cfg.TransactionStateLogSegmentBytes)),
			"min.insync.replicas": strconv.Itoa(int(min(s.cfg.TransactionStateLogMinISR, int32(s.cfg.TransactionStateLogReplicationFactor), int32(len(s.meta.Image().BrokerIDs()))))),
		},
	})
	if err != nil {
		return nil, err
	}
	tc.mu.Lock()
	if tc.mu.shards == nil {
		tc.mu.shards = make([]*txnShard, len(t.Partitions))
	}
	tc.mu.Unlock()
	return t, nil
}

// shards loads every partition of __transaction_state this node leads
// (the topic must exist) and returns the loaded shards.
func (tc *txnCoordinator) shards(ctx context.Context) ([]*txnShard, error) {
	if _, err := tc.topic(ctx); err != nil {
		return nil, err
	}
	tc.mu.Lock()
	defer tc.mu.Unlock()
	var out []*txnShard
	for i := range tc.mu.shards {
		sh, err := tc.currentLocked(i)
		if err != nil && !errors.Is(err, kerr.NotCoordinator) {
			return out, err
		}
		if sh != nil {
			out = append(out, sh)
		}
	}
	return out, nil
}

// shard returns the shard that coordinates transactional id, opening (and
// if need be creating) __transaction_state first. An id whose partition
// this node does not lead gives NOT_COORDINATOR.
func (tc *txnCoordinator) shard(id string) (*txnShard, error) {
	t, err := tc.topic(context.Background())
	if err != nil {
		return nil, err
	}
	tc.mu.Lock()
	defer tc.mu.Unlock()
	return tc.currentLocked(groupPartition(id, len(t.Partitions)))
}

// coordinator returns the node that coordinates transactional id: the
// leader of its __transaction_state partition (which it creates if need
// be), or COORDINATOR_NOT_AVAILABLE while that partition has no leader.
func (tc *txnCoordinator) coordinator(ctx context.Context, id string) (metadata.Broker, error) {
	t, err := tc.topic(ctx)
	if err != nil {
		return metadata.Broker{}, err
	}
	i := groupPartition(id, len(t.Partitions))
	pm := t.Partitions[i]
	b, ok := tc.s.meta.Image().Brokers[pm.Leader]
	if !ok || b.Fenced {
		return metadata.Broker{}, kafkaErr(kerr.CoordinatorNotAvailable, "%s-%d has no leader", txnStateTopic, i)
	}
	if pm.Leader == tc.s.cfg.NodeID {
		if _, err := tc.shard(id); err != nil {
			return metadata.Broker{}, err
		}
	}
	return b, nil
}

// currentLocked returns the shard of partition i if this node leads it,
// loading it first if it is not loaded for the current leader epoch (as
// groupCoordinator.currentLocked). tc.mu held.
func (tc *txnCoordinator) currentLocked(i int) (*txnShard, error) {
	s := tc.s
	p := s.partition(txnStateTopic, int32(i))
	leader, epoch := false, int32(0)
	if p != nil {
		leader, epoch = p.Role()
	}
	old := tc.mu.shards[i]
	if leader && old != nil && old.part == p && old.epoch == epoch && !old.isDropped() {
		return old, nil
	}
	if old != nil {
		old.drop()
		tc.mu.shards[i] = nil
	}
	if !leader {
		return nil, kafkaErr(kerr.NotCoordinator, "this node does not lead %s-%d", txnStateTopic, i)
	}
	sh := &txnShard{tc: tc, part: p, epoch: epoch, dropped: make(chan struct{})}
	sh.mu.core = txn.New(s.txnConfig(epoch))
	sh.mu.waiters = map[txn.Waiter]chan kmsg.Response{}
	if err := sh.load(); err != nil {
		return nil, fmt.Errorf("load %s-%d: %w", txnStateTopic, i, err)
	}
	// Loaded resends the markers of transactions left prepared.
	now := s.now()
	ld, _ := sh.step(0, func(c *txn.Coordinator) txn.Output { return c.Loaded(now) })
	tc.mu.shards[i] = sh
	s.markers.wg.Go(func() { ld.finish() })
	return sh, nil
}

// loaded returns the shards loaded for partitions this node still leads in
// the epoch they were loaded in (dropping the others).
func (tc *txnCoordinator) loaded() []*txnShard {
	tc.mu.Lock()
	defer tc.mu.Unlock()
	var out []*txnShard
	for i, sh := range tc.mu.shards {
		if sh == nil {
			continue
		}
		if leader, epoch := sh.part.Role(); !leader || epoch != sh.epoch || sh.isDropped() || tc.s.partition(txnStateTopic, int32(i)) != sh.part {
			sh.drop()
			tc.mu.shards[i] = nil
			continue
		}
		out = append(out, sh)
	}
	return out
}

// load replays the partition into the core, up to the log end (as
// groupShard.load: a new leader's log is the partition's).
func (sh *txnShard) load() error {
	core := sh.mu.core
	return readAll(sh.part, func(h *batch.Header, b []byte) error {
		if h.IsControl() {
			return nil
		}
		return batch.ForEachRecord(b, 64<<20, func(r *batch.Record) error {
			if err := core.Load(r.Key, r.Value); err != nil {
				// One unreadable record must not keep the partition's
				// other transactional ids from loading.
				sh.tc.s.logger.Warn("skipping a transaction state record", "partition", sh.part.Index, "offset", h.BaseOffset+int64(r.OffsetDelta), "err", err)
			}
			return nil
		})
	})
}

// readAll calls fn with every batch of p from its log start to its log
// end, in order: up to the log end, not the high watermark, since a new
// leader's log is the partition's (it never truncates) and its high
// watermark may lag until the followers fetch again.
func readAll(p *partition.Partition, fn func(h *batch.Header, b []byte) error) error {
	off := p.Offsets().LogStart
	var buf []byte
	for {
		var err error
		var o partition.Offsets
		buf, o, err = p.ReadReplica(buf[:0], off, 1<<20)
		if err != nil {
			return err
		}
		if len(buf) == 0 {
			return nil
		}
		for b := buf; len(b) >= batch.HeaderSize; {
			h, err := batch.ParseHeader(b)
			if err != nil || h.Size() > len(b) {
				return fmt.Errorf("bad batch at offset %d: %v", off, err)
			}
			if err := fn(&h, b[:h.Size()]); err != nil {
				return err
			}
			off = h.LastOffset() + 1
			b = b[h.Size():]
		}
		if off >= o.LogEnd {
			return nil
		}
	}
}

// step runs fn on the core under the shard's lock and appends the records
// it made as one batch. w, if non-zero, is registered first so its answer
// is not missed. A failed append is reported to the core at once, under
// the same lock. The caller then calls finish, off the connection's reader
// when it may block on an fsync.
func (sh *txnShard) step(w txn.Waiter, fn func(c *txn.Coordinator) txn.Output) (txnPending, chan kmsg.Response) {
	var ch chan kmsg.Response
	sh.mu.Lock()
	defer sh.mu.Unlock()
	if w != 0 {
		ch = make(chan kmsg.Response, 1)
		sh.mu.waiters[w] = ch
	}
	p := txnPending{sh: sh}
	out := fn(sh.mu.core)
	for attempt := 0; ; attempt++ {
		p.out.Replies = append(p.out.Replies, out.Replies...)
		p.out.Markers = append(p.out.Markers, out.Markers...)
		if len(out.Records) == 0 {
			return p, ch
		}
		err := sh.appendLocked(out.Records)
		if err == nil {
			p.end = sh.part.Offsets().LogEnd // appends to the partition hold this lock
			p.write = out.Write
			return p, ch
		}
		sh.tc.s.logger.Error("writing transaction state failed", "partition", sh.part.Index, "err", err)
		// The core writes a failed completion again; a second failure
		// gives the partition up (see failed).
		out = sh.mu.core.Written(sh.tc.s.now(), out.Write, sh.failed(err, attempt))
	}
}

// failed is the error to report to the core for a write that failed with
// err on the given attempt. A write the core would try again that has
// failed twice is reported as NOT_COORDINATOR, which the core does not
// retry, and the shard is dropped: the next request loads the partition
// afresh, and the load finishes what the failed writes left (as when
// another node takes it over).
func (sh *txnShard) failed(err error, attempt int) *kerr.Error {
	code := groupWriteError(err, false)
	if attempt > 0 && code != nil {
		sh.drop()
		code = kerr.NotCoordinator
	}
	return code
}

// appendLocked writes records to the shard's partition as one batch, so a
// crash keeps all of them or none.
func (sh *txnShard) appendLocked(recs []txn.Record) error {
	gr := make([]group.Record, len(recs))
	for i, r := range recs {
		gr[i] = group.Record{Key: r.Key, Value: r.Value}
	}
	_, err := sh.part.AppendCoordinator(encodeBatch(gr, nil, sh.tc.s.now().UnixMilli()))
	return err
}

// txnPending is a step whose records may still need their fsync, with the
// replies and markers to send after it.
type txnPending struct {
	sh      *txnShard
	write   txn.WriteID // appended, to report once durable (0: none)
	end     int64       // the log end after the append
	attempt int         // how many earlier writes of these states failed
	out     txn.Output  // Replies and Markers
}

// finish makes the step's records durable and replicated, reports the
// outcome to the core (which makes the state they carry current, or not),
// delivers the replies of both, and starts writing the markers the core
// asked for. It returns the error of the fsync or the replication.
func (p txnPending) finish() error {
	var err error
	if p.write != 0 {
		// Durable here, then on the ISR (acks=all, as Kafka writes
		// transaction state).
		if err = p.sh.part.Commit(); err == nil {
			ctx, cancel := context.WithTimeout(p.sh.tc.s.bg, groupReplicationTimeout)
			err = p.sh.part.WaitReplicated(ctx, p.end)
			cancel()
		}
		if err != nil {
			p.sh.tc.s.logger.Error("writing transaction state failed", "partition", p.sh.part.Index, "err", err)
		}
		now := p.sh.tc.s.now()
		next, _ := p.sh.step(0, func(c *txn.Coordinator) txn.Output {
			return c.Written(now, p.write, p.sh.failed(err, p.attempt))
		})
		if err != nil {
			next.attempt = p.attempt + 1
		}
		next.finish()
	}
	p.sh.deliver(p.out.Replies)
	for _, m := range p.out.Markers {
		p.sh.tc.s.markers.send(p.sh, m)
	}
	return err
}

func (sh *txnShard) deliver(replies []txn.Reply) {
	if len(replies) == 0 {
		return
	}
	sh.mu.Lock()
	defer sh.mu.Unlock()
	for _, r := range replies {
		ch, ok := sh.mu.waiters[r.To]
		if !ok {
			continue // its connection has gone
		}
		delete(sh.mu.waiters, r.To)
		ch <- r.Resp
	}
}

func (sh *txnShard) forget(w txn.Waiter) {
	sh.mu.Lock()
	delete(sh.mu.waiters, w)
	sh.mu.Unlock()
}

// drop marks the shard as no longer this node's: requests waiting in it are
// answered NOT_COORDINATOR and its marker writers stop. Idempotent.
func (sh *txnShard) drop() {
	sh.dropOnce.Do(func() { close(sh.dropped) })
}

func (sh *txnShard) isDropped() bool {
	select {
	case <-sh.dropped:
		return true
	default:
		return false
	}
}

func (tc *txnCoordinator) newWaiter() txn.Waiter { return txn.Waiter(tc.nextWaiter.Add(1)) }

// call steps fn on the shard of transactional id with a new waiter and
// answers r once the core replies: after the records' fsync, with
// NOT_COORDINATOR (fail) if this node does not coordinate id or stops
// doing so first, or with nothing if the connection closes.
func (tc *txnCoordinator) call(c *conn, r *request, id string, fail func(code int16) kmsg.Response, fn func(core *txn.Coordinator, w txn.Waiter) txn.Output) kmsg.Response {
	sh, err := tc.shard(id)
	if err != nil {
		return fail(coordinatorCode(err))
	}
	w := tc.newWaiter()
	p, ch := sh.step(w, func(core *txn.Coordinator) txn.Output { return fn(core, w) })
	r.later = func() kmsg.Response {
		p.finish()
		select {
		case resp := <-ch:
			return resp
		case <-c.closing():
		case <-sh.dropped:
			select {
			case resp := <-ch:
				return resp
			default:
			}
			sh.forget(w)
			return fail(kerr.NotCoordinator.Code)
		}
		sh.forget(w)
		return nil
	}
	return nil
}

// coordinatorCode is the code a coordinator request answers when its
// coordinator could not be found or loaded.
func coordinatorCode(err error) int16 {
	if errors.Is(err, kerr.NotCoordinator) {
		return kerr.NotCoordinator.Code
	}
	return kerr.CoordinatorNotAvailable.Code
}

// tickLoop fires the cores' timers until the server stops.
func (tc *txnCoordinator) tickLoop(stop <-chan struct{}) {
	t := time.NewTicker(txnTickInterval)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
		}
		// A partition this node came to lead is loaded now rather than on
		// first use, so its timed-out transactions are aborted and the
		// markers of its prepared ones written (Kafka loads on election).
		if tc.s.meta.Image().Topic(txnStateTopic) != nil {
			if _, err := tc.shards(context.Background()); err != nil {
				tc.s.logger.Warn("loading transaction state failed", "err", err)
			}
		}
		for _, sh := range tc.loaded() {
			now := tc.s.now()
			p, _ := sh.step(0, func(c *txn.Coordinator) txn.Output { return c.Tick(now) })
			p.finish()
		}
	}
}
