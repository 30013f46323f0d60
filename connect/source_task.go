package connect

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"reflect"
	"strings"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// runSource runs a source task: poll, transform, convert, produce; every
// offset.flush.interval.ms (and when the task stops or pauses) wait for
// the brokers to acknowledge everything produced, then store the source
// offsets of what was polled. Offsets never run ahead of acknowledged
// records: at least once.
func runSource(ctx context.Context, r *taskRunner, p *pipeline, conf Config) error {
	w := r.w
	if err := w.offsets.Refresh(ctx); err != nil {
		return err
	}
	opts := []kgo.Opt{
		kgo.ProducerLinger(w.cfg.Millis(WorkerLinger)),
		kgo.AllowAutoTopicCreation(),
		kgo.MaxBufferedRecords(100_000),
	}
	// Exactly once: records and the offsets after them are written in one
	// transaction, by a producer whose transactional id fences any older
	// instance of the task (a zombie on a worker thought dead).
	var txnOffsets *topicOffsetStore
	if strings.EqualFold(w.cfg[WorkerEOSSource], "enabled") {
		var ok bool
		if txnOffsets, ok = w.offsets.(*topicOffsetStore); !ok {
			return fmt.Errorf("%w: %s=enabled needs source offsets in a topic: leave %s empty", ErrInvalidConfig, WorkerEOSSource, WorkerOffsetsFile)
		}
		group := w.cfg[WorkerGroupID]
		if group == "" {
			group = "connect"
		}
		opts = append(opts, kgo.TransactionalID(fmt.Sprintf("%s-%s-%d", group, r.id.Connector, r.id.Task)),
			kgo.TransactionTimeout(max(w.cfg.Millis(WorkerOffsetFlush)*3, 10*time.Second)))
	}
	cl, err := kgo.NewClient(w.kafkaOpts(opts...)...)
	if err != nil {
		return err
	}
	defer cl.Close()

	task := r.plugin.NewSourceTask()
	if err := task.Start(ctx, conf, &sourceContext{r: r}); err != nil {
		return fmt.Errorf("starting the task: %w", err)
	}
	defer func() {
		if err := task.Stop(); err != nil {
			r.log.Warn("stopping the task", "err", err)
		}
	}()
	r.setStatus(StateRunning, "")

	s := &sourceLoop{r: r, p: p, cl: cl, task: task, pending: map[string]SourceOffset{}, txn: txnOffsets}
	s.acker, _ = task.(RecordAcker)
	err = s.loop(ctx)
	// Store what was acknowledged before stopping, whatever the reason:
	// a restart then repeats less.
	cctx, cancel := context.WithTimeout(context.Background(), w.cfg.Millis(WorkerShutdownTimeout))
	defer cancel()
	if err != nil && s.txn != nil {
		// What this transaction holds is not to be seen.
		if aerr := s.abort(cctx); aerr != nil {
			r.log.Warn("aborting the transaction", "err", aerr)
		}
		return err
	}
	if cerr := s.commit(cctx); err == nil && ctx.Err() == nil {
		err = cerr
	}
	return err
}

type sourceLoop struct {
	r     *taskRunner
	p     *pipeline
	cl    *kgo.Client
	task  SourceTask
	acker RecordAcker

	pending  map[string]SourceOffset // latest offset polled, by encoded source partition
	lastPart unsafeMapID             // the partition map of the last record, and its key
	lastKey  string
	failed   atomic.Pointer[error] // the first produce error
	written  atomic.Int64
	txn      *topicOffsetStore // exactly once: offsets go here, in the transaction
	inTxn    bool
}

type unsafeMapID = uintptr

func (s *sourceLoop) loop(ctx context.Context) error {
	w, r := s.r.w, s.r
	labels := []string{r.id.Connector, itoa(r.id.Task)}
	polled, filtered := w.metrics.sourcePolled.WithLabelValues(labels...), w.metrics.sourceFiltered.WithLabelValues(labels...)
	writtenC, batch := w.metrics.sourceWritten.WithLabelValues(labels...), w.metrics.batchSize.WithLabelValues(append(labels, "poll")...)
	flushEvery := w.cfg.Millis(WorkerOffsetFlush)
	nextFlush := time.Now().Add(flushEvery)
	for {
		if !r.waitUntilRunnable(ctx, func() { _ = s.commit(ctx) }, nil) {
			return nil
		}
		if !time.Now().Before(nextFlush) {
			if err := s.commit(ctx); err != nil {
				return err
			}
			nextFlush = time.Now().Add(flushEvery)
		}
		writtenC.Add(float64(s.written.Swap(0)))
		pctx, cancel := r.pollContext(ctx, nextFlush, len(s.pending) > 0)
		var recs []Record
		err := s.p.retry(pctx, false, func() (err error) {
			recs, err = s.task.Poll(pctx)
			return err
		})
		cancel()
		if err != nil && pctx.Err() == nil {
			w.metrics.errs.WithLabelValues(r.id.Connector, itoa(r.id.Task), "poll").Inc()
			return fmt.Errorf("polling the task: %w", err)
		}
		if len(recs) == 0 {
			continue
		}
		polled.Add(float64(len(recs)))
		batch.Observe(float64(len(recs)))
		for i := range recs {
			rec := &recs[i]
			kr, keep, serr := s.p.toKafka(rec)
			if serr != nil {
				if !s.p.tolerated(serr, fmt.Sprintf("source partition %v offset %v", rec.SourcePartition, rec.SourceOffset)) {
					return serr // its offset is not stored: a restart meets it again
				}
				keep = false
			}
			if err := s.track(rec); err != nil {
				return err
			}
			if !keep {
				filtered.Inc()
				if s.acker != nil {
					s.acker.Ack(rec, ErrFiltered)
				}
				continue
			}
			if err := s.begin(); err != nil {
				return err
			}
			// Not ctx: a stopping task's buffered records are still sent
			// (the final commit waits for them), not failed.
			s.cl.Produce(context.WithoutCancel(ctx), kr, func(_ *kgo.Record, err error) {
				if err != nil {
					s.failed.CompareAndSwap(nil, &err)
				} else {
					s.written.Add(1)
				}
				if s.acker != nil {
					s.acker.Ack(rec, err)
				}
			})
		}
		if e := s.failed.Load(); e != nil {
			w.metrics.errs.WithLabelValues(r.id.Connector, itoa(r.id.Task), "produce").Inc()
			return fmt.Errorf("producing a record: %w", *e)
		}
	}
}

// track notes the source offset of a polled record. Records of one source
// partition usually share its map, so its key is encoded once.
func (s *sourceLoop) track(rec *Record) error {
	if rec.SourcePartition == nil {
		return nil
	}
	id := reflect.ValueOf(rec.SourcePartition).Pointer()
	if id != s.lastPart || s.lastKey == "" {
		k, err := offsetKey(s.r.id.Connector, rec.SourcePartition)
		if err != nil {
			return err
		}
		s.lastPart, s.lastKey = id, string(k)
	}
	s.pending[s.lastKey] = SourceOffset{Partition: rec.SourcePartition, Offset: rec.SourceOffset}
	return nil
}

// commit waits for every produced record to be acknowledged, then stores
// the offsets polled so far.
func (s *sourceLoop) commit(ctx context.Context) error {
	if len(s.pending) == 0 {
		return nil
	}
	labels := []string{s.r.id.Connector, itoa(s.r.id.Task)}
	if err := s.cl.Flush(ctx); err != nil {
		return fmt.Errorf("waiting for produced records: %w", err)
	}
	s.r.w.metrics.sourceWritten.WithLabelValues(labels...).Add(float64(s.written.Swap(0)))
	if e := s.failed.Load(); e != nil {
		return fmt.Errorf("producing a record: %w", *e)
	}
	offs := make([]SourceOffset, 0, len(s.pending))
	for _, o := range s.pending {
		offs = append(offs, o)
	}
	var err error
	if s.txn != nil {
		err = s.commitTxn(ctx, offs)
	} else {
		err = s.r.w.offsets.Put(ctx, s.r.id.Connector, offs)
	}
	if err != nil {
		s.r.w.metrics.offsetCommits.WithLabelValues(append(labels, "failed")...).Inc()
		return fmt.Errorf("storing source offsets: %w", err)
	}
	s.r.w.metrics.offsetCommits.WithLabelValues(append(labels, "ok")...).Inc()
	clear(s.pending)
	s.lastKey = ""
	return nil
}

// begin opens a transaction for the records to come (exactly once).
func (s *sourceLoop) begin() error {
	if s.txn == nil || s.inTxn {
		return nil
	}
	if err := s.cl.BeginTransaction(); err != nil {
		return fmt.Errorf("beginning a transaction: %w", err)
	}
	s.inTxn = true
	return nil
}

// commitTxn writes the offsets into the open transaction and commits it.
func (s *sourceLoop) commitTxn(ctx context.Context, offs []SourceOffset) error {
	if err := s.begin(); err != nil {
		return err
	}
	rs, err := s.txn.records(s.r.id.Connector, offs)
	if err != nil {
		return err
	}
	for _, r := range rs {
		s.cl.Produce(ctx, r, func(_ *kgo.Record, err error) {
			if err != nil {
				s.failed.CompareAndSwap(nil, &err)
			}
		})
	}
	if err := s.cl.Flush(ctx); err != nil {
		return err
	}
	if e := s.failed.Load(); e != nil {
		return *e
	}
	s.inTxn = false
	return s.cl.EndTransaction(ctx, kgo.TryCommit)
}

// abort aborts the open transaction.
func (s *sourceLoop) abort(ctx context.Context) error {
	if s.txn == nil || !s.inTxn {
		return nil
	}
	s.inTxn = false
	if err := s.cl.AbortBufferedRecords(ctx); err != nil {
		return err
	}
	return s.cl.EndTransaction(ctx, kgo.TryAbort)
}

// pollContext is the context of one Poll: it ends with ctx, when the
// target state changes, and at the next offset flush if there are
// offsets to store.
func (r *taskRunner) pollContext(ctx context.Context, flushAt time.Time, flushDue bool) (context.Context, context.CancelFunc) {
	var pctx context.Context
	var cancel context.CancelFunc
	if flushDue {
		pctx, cancel = context.WithDeadline(ctx, flushAt)
	} else {
		pctx, cancel = context.WithCancel(ctx)
	}
	stop := make(chan struct{})
	go func() {
		select {
		case <-r.wake:
			r.poke() // for waitUntilRunnable
			cancel()
		case <-stop:
		case <-pctx.Done():
		}
	}()
	return pctx, func() { close(stop); cancel() }
}

// toKafka transforms and converts a source record.
func (p *pipeline) toKafka(rec *Record) (*kgo.Record, bool, *stageError) {
	keep, err := p.chain.Apply(rec)
	if err != nil {
		return nil, false, &stageError{"transform", err}
	}
	if !keep {
		return nil, false, nil
	}
	if rec.Topic == "" {
		return nil, false, &stageError{"convert", errors.New("the record has no topic")}
	}
	k, err := p.keyConv.FromConnect(rec.Topic, rec.KeySchema, rec.Key)
	if err != nil {
		return nil, false, &stageError{"convert", fmt.Errorf("converting the key: %w", err)}
	}
	v, err := p.valConv.FromConnect(rec.Topic, rec.ValueSchema, rec.Value)
	if err != nil {
		return nil, false, &stageError{"convert", fmt.Errorf("converting the value: %w", err)}
	}
	kr := &kgo.Record{Topic: rec.Topic, Key: k, Value: v, Timestamp: rec.Timestamp}
	if len(rec.Headers) > 0 {
		kr.Headers = make([]kgo.RecordHeader, len(rec.Headers))
		for i, h := range rec.Headers {
			kr.Headers[i] = kgo.RecordHeader{Key: h.Key, Value: h.Value}
		}
	}
	return kr, true, nil
}

// sourceContext is a source task's view of the runtime.
type sourceContext struct{ r *taskRunner }

func (c *sourceContext) Offset(partition map[string]any) (map[string]any, error) {
	return c.r.w.offsets.Get(c.r.id.Connector, partition)
}

func (c *sourceContext) Logger() *slog.Logger { return c.r.log }
