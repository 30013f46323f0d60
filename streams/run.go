package streams

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/runnel-io/runnel/streams/internal/assign"
	"github.com/runnel-io/runnel/streams/state"
)

// run is one App.Run: the clients, the engine and the loop that owns them.
// The loop goroutine processes, punctuates, commits and restores; the
// group's rebalance callbacks (kgo goroutines, run only while the loop
// is in PollFetches: BlockRebalanceOnPoll) close revoked tasks and note
// new ones. mu serializes the two.
type run struct {
	app        *App
	db         *state.DB
	instanceID string

	adm   *kadm.Client
	admCl *kgo.Client
	plan  *topicPlan
	eng   *engine
	cl    *kgo.Client
	sess  *kgo.GroupTransactSession // exactly once only
	// sessOpts make sess again after its producer was fenced (fenced.go).
	sessOpts []kgo.Opt
	rcl      *kgo.Client // restores changelogs
	glob     *globalRun  // global tables (global.go); nil without
	// standby follows the changelogs of standby tasks (standby.go); nil
	// without Config.Standbys.
	standby *standbyRun
	ctx     context.Context // lives until close: produce promises outlive Run's ctx
	stop    context.CancelFunc

	changelogStore map[string]*storeDef // changelog topic -> store

	mu struct {
		sync.Mutex
		pending map[TaskID]bool // assigned, to restore before they run
		fatal   error
		inTxn   bool
	}
	out struct {
		sync.Mutex
		err        error                      // first produce error
		changelogs map[string]map[int32]int64 // last offset written per changelog partition
		partitions map[string]int32           // output topics' partition counts
	}
	// q is what the group's assignments say: who hosts which task (for
	// queries) and the leader's error, if any.
	q struct {
		sync.Mutex
		hosts   map[string][]assign.Task
		standby []assign.Task         // this instance's standby tasks
		offsets map[assign.Task]int64 // local state per task, for the next join
		err     error
	}
	lastCommit time.Time
	// fencedInARow counts rejoins after fencing since the last commit.
	fencedInARow int
}

func (r *run) start(ctx context.Context) error {
	a := r.app
	r.ctx, r.stop = context.WithCancel(context.Background())
	var err error
	if r.adm, r.admCl, err = a.admin(); err != nil {
		return err
	}
	if r.plan, err = ensureTopics(ctx, r.adm, a.topo, a.cfg.ApplicationID, a.cfg.ReplicationFactor); err != nil {
		return err
	}
	if err := startLatest(ctx, r.adm, a.topo, a.cfg.ApplicationID); err != nil {
		return err
	}
	r.mu.pending = map[TaskID]bool{}
	r.out.changelogs = map[string]map[int32]int64{}
	r.out.partitions = map[string]int32{}
	r.changelogStore = map[string]*storeDef{}
	for _, s := range a.topo.stores {
		r.changelogStore[a.cfg.ApplicationID+"-"+s.name+"-changelog"] = s
	}
	e := &env{
		appID:        a.cfg.ApplicationID,
		db:           r.db,
		send:         r.send,
		partitions:   r.partitions,
		onBadRecord:  a.cfg.OnBadRecord,
		dropped:      func(reason string) { a.metrics.dropped.WithLabelValues(reason).Inc() },
		now:          func() int64 { return time.Now().UnixMilli() },
		cacheEntries: max(a.cfg.StoreCacheEntries, 0),
	}
	r.eng = newEngine(a.topo, e)
	if err := r.startGlobals(ctx); err != nil { // before joining the group
		return err
	}

	subs := make([][]string, len(a.topo.subs))
	for i, sub := range a.topo.subs {
		for _, src := range sub.sources {
			for _, topic := range src.topics {
				subs[i] = append(subs[i], e.topicName(src, topic))
			}
		}
	}
	balancer := assign.New(assign.Config{
		Subtopologies: subs,
		Endpoint:      a.cfg.Endpoint,
		Standbys:      a.cfg.Standbys,
		Stateful:      func(sub int) bool { return len(a.topo.subs[sub].stores) > 0 },
		OnAssign:      r.onAssign,
		Offsets:       r.localOffsets,
	})
	opts := append([]kgo.Opt{
		kgo.SeedBrokers(a.cfg.Brokers...),
		kgo.ConsumerGroup(a.cfg.ApplicationID),
		kgo.ConsumeTopics(r.eng.inputTopics()...),
		kgo.Balancers(balancer),
		kgo.DisableAutoCommit(),
		kgo.BlockRebalanceOnPoll(),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.OnPartitionsAssigned(r.onAssigned),
		kgo.OnPartitionsRevoked(r.onRevoked),
		kgo.OnPartitionsLost(r.onLost),
	}, a.cfg.ClientOptions...)
	if a.cfg.Guarantee == ExactlyOnce {
		opts = append(opts,
			kgo.TransactionalID(a.cfg.ApplicationID+"-"+r.instanceID),
			kgo.TransactionTimeout(10*time.Second),
			kgo.RequireStableFetchOffsets(),
		)
		r.sessOpts = opts
		if r.sess, err = kgo.NewGroupTransactSession(opts...); err != nil {
			return fmt.Errorf("streams: client: %w", err)
		}
		r.cl = r.sess.Client()
	} else if r.cl, err = kgo.NewClient(opts...); err != nil {
		return fmt.Errorf("streams: client: %w", err)
	}
	changelogReader := func() (*kgo.Client, error) {
		return kgo.NewClient(append([]kgo.Opt{
			kgo.SeedBrokers(a.cfg.Brokers...),
			kgo.FetchIsolationLevel(kgo.ReadCommitted()),
			kgo.KeepControlRecords(), // markers say where a transactional changelog ends
			kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		}, a.cfg.ClientOptions...)...)
	}
	if r.rcl, err = changelogReader(); err != nil {
		return fmt.Errorf("streams: restore client: %w", err)
	}
	if a.cfg.Standbys > 0 {
		r.standby = &standbyRun{tasks: map[TaskID]bool{}, parts: map[string]map[int32]*standbyPart{}}
		if r.standby.cl, err = changelogReader(); err != nil {
			return fmt.Errorf("streams: standby client: %w", err)
		}
	}
	r.lastCommit = time.Now()
	return nil
}

// send hands an output record to the producer. Errors surface at the next
// commit, which then fails: at least once, the offsets of the records that
// caused it are not committed; exactly once, the transaction aborts.
func (r *run) send(rec *kgo.Record) error {
	promise := func(rec *kgo.Record, err error) {
		r.out.Lock()
		defer r.out.Unlock()
		if err != nil {
			if r.out.err == nil {
				r.out.err = fmt.Errorf("streams: produce to %s: %w", rec.Topic, err)
			}
			return
		}
		if _, ok := r.changelogStore[rec.Topic]; ok {
			m := r.out.changelogs[rec.Topic]
			if m == nil {
				m = map[int32]int64{}
				r.out.changelogs[rec.Topic] = m
			}
			if rec.Offset > m[rec.Partition] || m[rec.Partition] == 0 {
				m[rec.Partition] = rec.Offset
			}
		}
	}
	if r.sess != nil {
		r.sess.Produce(r.ctx, rec, promise)
	} else {
		r.cl.Produce(r.ctx, rec, promise)
	}
	return nil
}

// partitions returns a topic's partition count: planned for the app's own
// topics, looked up (once) for output topics.
func (r *run) partitions(topic string) (int32, error) {
	if n, ok := r.plan.partitions[topic]; ok {
		return n, nil
	}
	r.out.Lock()
	n, ok := r.out.partitions[topic]
	r.out.Unlock()
	if ok {
		return n, nil
	}
	md, err := r.adm.ListTopics(r.ctx, topic)
	if err != nil {
		return 0, fmt.Errorf("streams: output topic %q: %w", topic, err)
	}
	d, ok := md[topic]
	if !ok || d.Err != nil || len(d.Partitions) == 0 {
		return 0, fmt.Errorf("streams: output topic %q does not exist: create it first", topic)
	}
	n = int32(len(d.Partitions))
	r.out.Lock()
	r.out.partitions[topic] = n
	r.out.Unlock()
	return n, nil
}

// tasksOf returns the tasks whose partitions these are.
func (r *run) tasksOf(parts map[string][]int32) map[TaskID]bool {
	out := map[TaskID]bool{}
	for topic, ps := range parts {
		for _, p := range ps {
			if id, ok := r.eng.taskOf(topic, p); ok {
				out[id] = true
			}
		}
	}
	return out
}

func (r *run) onAssigned(_ context.Context, cl *kgo.Client, assigned map[string][]int32) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for id := range r.tasksOf(assigned) {
		r.mu.pending[id] = true
	}
	// Nothing of a new task is fetched until its state is restored.
	cl.PauseFetchPartitions(assigned)
}

func (r *run) onRevoked(ctx context.Context, _ *kgo.Client, revoked map[string][]int32) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.mu.fatal != nil {
		return
	}
	if r.sess == nil {
		// At least once: commit everything processed, then let go.
		if err := r.commitLocked(ctx); err != nil {
			r.mu.fatal = err
			return
		}
	}
	// Exactly once: the session aborts the open transaction at its end,
	// which resets every task (resetLocked).
	r.closeTasksLocked(r.tasksOf(revoked))
}

func (r *run) onLost(_ context.Context, _ *kgo.Client, lost map[string][]int32) {
	r.mu.Lock()
	defer r.mu.Unlock()
	ids := r.tasksOf(lost)
	r.closeTasksLocked(ids)
	// Another instance owns these now: drop what this one has of their
	// state, so that a later assignment restores it from the changelog.
	for id := range ids {
		for _, s := range r.app.topo.subs[id.Subtopology].stores {
			if err := r.db.Drop(s.name, id.Partition); err != nil && r.mu.fatal == nil {
				r.mu.fatal = err
			}
		}
	}
}

func (r *run) closeTasksLocked(ids map[TaskID]bool) {
	for id := range ids {
		delete(r.mu.pending, id)
		if t, ok := r.eng.tasks[id]; ok {
			r.app.metrics.forgetTask(t)
		}
		if err := r.eng.closeTask(id); err != nil && r.mu.fatal == nil {
			r.mu.fatal = err
		}
	}
}

// loop polls, processes and commits until ctx ends or something fails.
func (r *run) loop(ctx context.Context) error {
	const tick = 100 * time.Millisecond // wall-clock punctuation and commit check granularity
	for {
		pollCtx, cancel := context.WithTimeout(ctx, tick)
		var fetches kgo.Fetches
		// At most MaxPollRecords a step: the commit interval is checked
		// between steps, and an exactly-once transaction must end well
		// within its timeout however much the fetch brought.
		if r.sess != nil {
			fetches = r.sess.PollRecords(pollCtx, r.app.cfg.MaxPollRecords)
		} else {
			fetches = r.cl.PollRecords(pollCtx, r.app.cfg.MaxPollRecords)
		}
		cancel()
		if ctx.Err() != nil || fetches.IsClientClosed() {
			return r.shutdown()
		}
		var fetchErr error
		fetches.EachError(func(topic string, p int32, err error) {
			if !errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, context.Canceled) {
				r.app.log.Warn("fetch error", "topic", topic, "partition", p, "err", err)
				fetchErr = err
			}
		})
		_ = fetchErr // kgo retries fetch errors itself; they are logged here
		if err := r.step(ctx, fetches); err != nil {
			if r.sess != nil && isFenced(err) {
				if err := r.rejoinFenced(err); err != nil {
					return err
				}
				continue
			}
			if ctx.Err() != nil && errors.Is(err, ctx.Err()) {
				// Run's ctx ended while a commit or restore was in flight:
				// that is a stop, not a failure.
				return r.shutdown()
			}
			return err
		}
		if r.sess != nil {
			r.sess.AllowRebalance()
		} else {
			r.cl.AllowRebalance()
		}
	}
}

// step processes one poll's records and does the work that is due. Its
// error is fatal: kept, so that the revocation on the way out does not
// commit past the record that caused it.
func (r *run) step(ctx context.Context, fetches kgo.Fetches) (err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	defer func() {
		stopped := ctx.Err() != nil && errors.Is(err, ctx.Err()) // a stop, which loop turns into shutdown
		if err != nil && !stopped && !(r.sess != nil && isFenced(err)) && r.mu.fatal == nil {
			r.mu.fatal = err
		}
	}()
	if r.mu.fatal != nil {
		return r.mu.fatal
	}
	if err := r.assignmentErr(); err != nil {
		return err
	}
	if err := r.syncStandbysLocked(); err != nil {
		return err
	}
	if len(r.mu.pending) > 0 {
		if err := r.restorePendingLocked(ctx); err != nil {
			return err
		}
	}
	if err := r.beginLocked(); err != nil {
		return err
	}
	if err := r.pollGlobalsLocked(); err != nil {
		return err
	}
	start := time.Now()
	fetches.EachPartition(func(p kgo.FetchTopicPartition) {
		for _, rec := range p.Records {
			if err != nil {
				return
			}
			err = r.eng.process(rec)
		}
		if n := len(p.Records); n > 0 && err == nil {
			r.observeLag(p.Topic, p.Partition, p.LastStableOffset-p.Records[n-1].Offset-1)
		}
	})
	if err != nil {
		return err
	}
	if err := r.eng.punctuateWall(); err != nil {
		return err
	}
	m := r.app.metrics
	m.flushCounts(r.eng)
	if fetches.NumRecords() > 0 {
		m.pollSeconds.Observe(time.Since(start).Seconds())
	}
	if time.Since(r.lastCommit) >= r.app.cfg.CommitInterval || r.db.PendingBytes() >= r.app.cfg.MaxUncommittedBytes {
		return r.commitLocked(ctx)
	}
	return nil
}

// observeLag sets the lag gauge of an input partition.
func (r *run) observeLag(topic string, partition int32, lag int64) {
	id, ok := r.eng.taskOf(topic, partition)
	if !ok {
		return
	}
	r.app.metrics.lag.WithLabelValues(id.String(), topic, strconv.Itoa(int(partition))).Set(float64(max(lag, 0)))
}

func (r *run) beginLocked() error {
	if r.sess == nil || r.mu.inTxn {
		return nil
	}
	if err := r.sess.Begin(); err != nil {
		return fmt.Errorf("streams: begin transaction: %w", err)
	}
	r.mu.inTxn = true
	return nil
}

// commitLocked makes everything processed so far durable: store changes
// to their changelogs, outputs acknowledged, local state and its
// checkpoints committed, input offsets committed — in one transaction
// when exactly once.
func (r *run) commitLocked(ctx context.Context) error {
	start := time.Now()
	if r.sess != nil && !r.mu.inTxn {
		// Nothing processed since the last commit, or a transaction
		// that failed to end: its changes must not be logged outside it.
		return nil
	}
	if err := r.eng.sendChanges(); err != nil {
		return err
	}
	if r.sess != nil {
		committed, err := r.sess.End(ctx, kgo.TryCommit)
		r.mu.inTxn = false
		if err != nil {
			return fmt.Errorf("streams: end transaction: %w", err)
		}
		if perr := r.takeProduceErr(); perr != nil {
			return perr
		}
		if !committed {
			r.app.log.Info("transaction aborted (rebalance); reprocessing from the last commit")
			return r.resetLocked()
		}
	} else {
		if err := r.cl.Flush(ctx); err != nil {
			return fmt.Errorf("streams: flush: %w", err)
		}
		if err := r.takeProduceErr(); err != nil {
			return err
		}
	}
	r.checkpointLocked()
	if err := r.db.Commit(); err != nil {
		return fmt.Errorf("streams: commit state: %w", err)
	}
	if r.sess == nil {
		if err := r.cl.CommitUncommittedOffsets(ctx); err != nil {
			return fmt.Errorf("streams: commit offsets: %w", err)
		}
	}
	r.lastCommit = start
	r.fencedInARow = 0
	r.snapshotOffsetsLocked()
	r.app.metrics.commitSeconds.Observe(time.Since(start).Seconds())
	r.app.metrics.storeStats(r.eng)
	return nil
}

func (r *run) takeProduceErr() error {
	r.out.Lock()
	defer r.out.Unlock()
	return r.out.err
}

// checkpointLocked records, with the state it belongs to, the next offset
// of each changelog partition written since the last commit.
func (r *run) checkpointLocked() {
	r.out.Lock()
	defer r.out.Unlock()
	for topic, parts := range r.out.changelogs {
		s := r.changelogStore[topic]
		for p, off := range parts {
			r.db.SetCheckpoint(s.name, p, off+1)
		}
	}
	clear(r.out.changelogs)
}

// resetLocked undoes an aborted transaction: the uncommitted state goes,
// and every task starts again from the committed state (the session has
// rewound the consumer to the committed offsets).
func (r *run) resetLocked() error {
	ids := r.eng.taskIDs()
	if err := r.dropUncommittedLocked(); err != nil {
		return err
	}
	for _, id := range ids {
		if _, err := r.eng.open(id); err != nil {
			return err
		}
	}
	r.lastCommit = time.Now()
	return nil
}

// dropUncommittedLocked forgets everything since the last commit: the
// state DB's batch, the changelog offsets written, the standby and global
// clients' progress (rewound to their checkpoints) and the open tasks
// (closed; their caches with them).
func (r *run) dropUncommittedLocked() error {
	r.db.Discard()
	r.out.Lock()
	clear(r.out.changelogs)
	r.out.Unlock()
	for _, id := range r.eng.taskIDs() {
		if err := r.eng.closeTask(id); err != nil {
			return err
		}
	}
	if err := r.rewindStandbysLocked(); err != nil {
		return err
	}
	return r.rewindGlobalsLocked()
}

// shutdown is the graceful half of Run's end: commit what was processed.
func (r *run) shutdown() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.mu.fatal != nil {
		return r.mu.fatal
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := r.commitLocked(ctx); err != nil {
		return fmt.Errorf("streams: final commit: %w", err)
	}
	return nil
}

func (r *run) close() {
	if r.eng != nil {
		r.mu.Lock()
		_ = r.eng.close()
		r.mu.Unlock()
	}
	// Polls block rebalances until allowed: closing must allow them, or
	// leaving the group waits on this loop, which is gone.
	if r.sess != nil {
		r.sess.CloseAllowingRebalance() // aborts an open transaction, leaves the group
	} else if r.cl != nil {
		r.cl.CloseAllowingRebalance()
	}
	if r.rcl != nil {
		r.rcl.Close()
	}
	r.closeGlobals()
	r.closeStandbys()
	if r.admCl != nil {
		r.admCl.Close()
	}
	if r.stop != nil {
		r.stop()
	}
}
