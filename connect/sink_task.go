package connect

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// runSink runs a sink task: a member of the consumer group
// connect-<connector> that reads its topics, converts and transforms each
// record and hands batches to Put; every offset.flush.interval.ms, and
// before it lets partitions go, it has the task Flush and then commits the
// offsets after what was put. A record that fails conversion or a
// transform fails the task, or with errors.tolerance=all goes to the dead
// letter queue (if set) and is skipped.
func runSink(ctx context.Context, r *taskRunner, p *pipeline, conf Config) error {
	w := r.w
	task := r.plugin.NewSinkTask()
	s := &sinkLoop{r: r, p: p, task: task}
	s.mu.next = map[TopicPartition]int64{}
	s.mu.owned = map[TopicPartition]bool{}
	s.storer, _ = task.(OffsetStorer)

	opts := []kgo.Opt{
		kgo.ConsumerGroup("connect-" + r.id.Connector),
		kgo.DisableAutoCommit(),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.Balancers(kgo.CooperativeStickyBalancer()),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.SessionTimeout(w.cfg.Millis(WorkerSessionTimeout)),
		kgo.HeartbeatInterval(w.cfg.Millis(WorkerHeartbeat)),
		kgo.RebalanceTimeout(w.cfg.Millis(WorkerRebalanceTimeout)),
		kgo.OnPartitionsAssigned(s.onAssigned),
		kgo.OnPartitionsRevoked(s.onRevoked),
		kgo.OnPartitionsLost(s.onLost),
	}
	if re := strings.TrimSpace(conf[KeyTopicsRegex]); re != "" {
		if _, err := regexp.Compile(re); err != nil {
			return fmt.Errorf("%w: %s: %v", ErrInvalidConfig, KeyTopicsRegex, err)
		}
		opts = append(opts, kgo.ConsumeRegex(), kgo.ConsumeTopics(re))
	} else {
		opts = append(opts, kgo.ConsumeTopics(conf.List(KeyTopics)...))
	}

	if err := task.Start(ctx, conf, &sinkContext{r: r}); err != nil {
		return fmt.Errorf("starting the task: %w", err)
	}
	defer func() {
		if err := task.Stop(); err != nil {
			r.log.Warn("stopping the task", "err", err)
		}
	}()
	cl, err := kgo.NewClient(w.kafkaOpts(opts...)...)
	if err != nil {
		return err
	}
	s.cl = cl
	defer cl.Close() // leaves the group: the revoke callback commits first
	r.setStatus(StateRunning, "")

	err = s.loop(ctx)
	cctx, cancel := context.WithTimeout(context.Background(), w.cfg.Millis(WorkerShutdownTimeout))
	defer cancel()
	s.mu.Lock()
	if err == nil && s.mu.err == nil {
		err = s.commitLocked(cctx)
	}
	s.mu.Unlock()
	return err
}

type sinkLoop struct {
	r      *taskRunner
	p      *pipeline
	task   SinkTask
	storer OffsetStorer
	cl     *kgo.Client

	// mu is held while a batch is put and while partitions are assigned or
	// revoked, so that the group's callbacks see whole batches.
	mu struct {
		sync.Mutex
		next  map[TopicPartition]int64 // the offset after the last record put, not yet committed
		owned map[TopicPartition]bool
		err   error // a callback failed: the loop returns it
	}
}

func (s *sinkLoop) loop(ctx context.Context) error {
	w, r := s.r.w, s.r
	labels := []string{r.id.Connector, itoa(r.id.Task)}
	read, put := w.metrics.sinkRead.WithLabelValues(labels...), w.metrics.sinkPut.WithLabelValues(labels...)
	filtered, batchSize := w.metrics.sinkFiltered.WithLabelValues(labels...), w.metrics.batchSize.WithLabelValues(append(labels, "put")...)
	maxPoll := w.cfg.Int(WorkerMaxPollRecords)
	flushEvery := w.cfg.Millis(WorkerOffsetFlush)
	nextFlush := time.Now().Add(flushEvery)
	for {
		if !r.waitUntilRunnable(ctx, func() {
			s.mu.Lock()
			defer s.mu.Unlock()
			if err := s.commitLocked(ctx); err != nil && s.mu.err == nil {
				s.mu.err = err
			}
		}, nil) {
			return nil
		}
		pctx, cancel := r.pollContext(ctx, nextFlush, true)
		fs := s.cl.PollRecords(pctx, maxPoll)
		cancel()
		if ctx.Err() != nil {
			return nil
		}
		if err := fetchError(fs); err != nil {
			return err
		}
		s.mu.Lock()
		err := s.mu.err
		if err == nil {
			var n, kept int
			n, kept, err = s.putLocked(ctx, fs)
			read.Add(float64(n))
			put.Add(float64(kept))
			filtered.Add(float64(n - kept))
			if kept > 0 {
				batchSize.Observe(float64(kept))
			}
		}
		if err == nil && !time.Now().Before(nextFlush) {
			err = s.commitLocked(ctx)
			nextFlush = time.Now().Add(flushEvery)
		}
		s.mu.Unlock()
		if err != nil {
			return err
		}
	}
}

// fetchError returns the first fetch error that is not retriable.
func fetchError(fs kgo.Fetches) error {
	var err error
	fs.EachError(func(t string, p int32, e error) {
		if err == nil && !errors.Is(e, context.Canceled) && !errors.Is(e, context.DeadlineExceeded) && !kerr.IsRetriable(e) {
			err = fmt.Errorf("reading %s-%d: %w", t, p, e)
		}
	})
	return err
}

// putLocked converts, transforms and puts the records of owned
// partitions; it returns how many it read and how many it put.
func (s *sinkLoop) putLocked(ctx context.Context, fs kgo.Fetches) (n, kept int, err error) {
	batch := make([]Record, 0, fs.NumRecords())
	seen := map[TopicPartition]int64{}
	var ferr error
	fs.EachRecord(func(kr *kgo.Record) {
		tp := TopicPartition{kr.Topic, kr.Partition}
		if ferr != nil || !s.mu.owned[tp] {
			return // revoked while it was fetched: its new owner reads it
		}
		n++
		seen[tp] = kr.Offset + 1
		rec, serr := s.p.fromKafka(kr)
		if serr == nil {
			var keep bool
			if keep, err = s.p.chain.Apply(&rec); err != nil {
				serr = &stageError{"transform", err}
			} else if !keep {
				return
			}
		}
		if serr != nil {
			if !s.p.tolerated(serr, fmt.Sprintf("%s-%d@%d", kr.Topic, kr.Partition, kr.Offset)) {
				ferr = fmt.Errorf("record %s-%d@%d: %w", kr.Topic, kr.Partition, kr.Offset, serr)
				return
			}
			ferr = s.p.deadLetter(ctx, kr, serr)
			return
		}
		batch = append(batch, rec)
	})
	if ferr != nil {
		return n, 0, ferr
	}
	if len(batch) > 0 {
		err := s.p.retry(ctx, true, func() error { return s.task.Put(ctx, batch) })
		if err != nil {
			s.r.w.metrics.errs.WithLabelValues(s.r.id.Connector, itoa(s.r.id.Task), "put").Inc()
			return n, 0, fmt.Errorf("putting %d records: %w", len(batch), err)
		}
	}
	for tp, o := range seen {
		s.mu.next[tp] = o
	}
	return n, len(batch), nil
}

// fromKafka converts a record read from a topic.
func (p *pipeline) fromKafka(kr *kgo.Record) (Record, *stageError) {
	rec := Record{Topic: kr.Topic, Partition: kr.Partition, Offset: kr.Offset, Timestamp: kr.Timestamp}
	var err error
	if rec.KeySchema, rec.Key, err = p.keyConv.ToConnect(kr.Topic, kr.Key); err != nil {
		return rec, &stageError{"convert", fmt.Errorf("converting the key: %w", err)}
	}
	if rec.ValueSchema, rec.Value, err = p.valConv.ToConnect(kr.Topic, kr.Value); err != nil {
		return rec, &stageError{"convert", fmt.Errorf("converting the value: %w", err)}
	}
	if len(kr.Headers) > 0 {
		rec.Headers = make([]Header, len(kr.Headers))
		for i, h := range kr.Headers {
			rec.Headers[i] = Header{Key: h.Key, Value: h.Value}
		}
	}
	return rec, nil
}

// commitLocked has the task flush, then commits the offsets after what it
// put.
func (s *sinkLoop) commitLocked(ctx context.Context) error {
	if len(s.mu.next) == 0 {
		return nil
	}
	labels := []string{s.r.id.Connector, itoa(s.r.id.Task)}
	if err := s.p.retry(ctx, true, func() error { return s.task.Flush(ctx) }); err != nil {
		s.r.w.metrics.errs.WithLabelValues(append(labels, "put")...).Inc()
		return fmt.Errorf("flushing the task: %w", err)
	}
	offsets := map[string]map[int32]kgo.EpochOffset{}
	for tp, o := range s.mu.next {
		if offsets[tp.Topic] == nil {
			offsets[tp.Topic] = map[int32]kgo.EpochOffset{}
		}
		offsets[tp.Topic][tp.Partition] = kgo.EpochOffset{Epoch: -1, Offset: o}
	}
	var cerr error
	s.cl.CommitOffsetsSync(ctx, offsets, func(_ *kgo.Client, _ *kmsg.OffsetCommitRequest, resp *kmsg.OffsetCommitResponse, err error) {
		if err == nil && resp != nil {
			for _, t := range resp.Topics {
				for _, p := range t.Partitions {
					if e := kerr.ErrorForCode(p.ErrorCode); e != nil && err == nil {
						err = e
					}
				}
			}
		}
		cerr = err
	})
	if cerr != nil {
		// The data is flushed; the next commit (or the partition's next
		// owner, which reads a little again) makes up for it.
		s.r.w.metrics.offsetCommits.WithLabelValues(append(labels, "failed")...).Inc()
		s.r.log.Warn("committing sink offsets", "err", cerr)
		return nil
	}
	s.r.w.metrics.offsetCommits.WithLabelValues(append(labels, "ok")...).Inc()
	clear(s.mu.next)
	return nil
}

func (s *sinkLoop) onAssigned(ctx context.Context, cl *kgo.Client, assigned map[string][]int32) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var tps []TopicPartition
	for t, ps := range assigned {
		for _, p := range ps {
			tp := TopicPartition{t, p}
			s.mu.owned[tp] = true
			tps = append(tps, tp)
		}
	}
	if s.storer == nil || s.mu.err != nil {
		return
	}
	stored, err := s.storer.StoredOffsets(ctx, tps)
	if err != nil {
		s.mu.err = fmt.Errorf("reading the offsets the sink stored: %w", err)
		return
	}
	set := map[string]map[int32]kgo.EpochOffset{}
	for tp, o := range stored {
		if set[tp.Topic] == nil {
			set[tp.Topic] = map[int32]kgo.EpochOffset{}
		}
		set[tp.Topic][tp.Partition] = kgo.EpochOffset{Epoch: -1, Offset: o}
	}
	if len(set) > 0 {
		cl.SetOffsets(set)
	}
}

func (s *sinkLoop) onRevoked(ctx context.Context, _ *kgo.Client, revoked map[string][]int32) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.mu.err == nil {
		if err := s.commitLocked(ctx); err != nil {
			s.mu.err = err
		}
	}
	s.dropLocked(revoked)
}

func (s *sinkLoop) onLost(_ context.Context, _ *kgo.Client, lost map[string][]int32) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.dropLocked(lost)
}

func (s *sinkLoop) dropLocked(ps map[string][]int32) {
	for t, parts := range ps {
		for _, p := range parts {
			tp := TopicPartition{t, p}
			delete(s.mu.owned, tp)
			delete(s.mu.next, tp)
		}
	}
}

// sinkContext is a sink task's view of the runtime.
type sinkContext struct{ r *taskRunner }

func (c *sinkContext) Logger() *slog.Logger { return c.r.log }
