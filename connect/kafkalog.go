package connect

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// kafkaLog keeps a compacted topic in memory: it reads the topic from its
// start, then follows it, calling apply for each record in order from one
// goroutine. Writes return once the brokers acknowledged them; readToEnd
// waits until everything written before the call has been applied. It is
// what the offsets topic (and, in distributed mode, the config and status
// topics) are read with, as Kafka Connect's KafkaBasedLog.
type kafkaLog struct {
	cl    *kgo.Client
	topic string
	apply func(r *kgo.Record)

	mu struct {
		sync.Mutex
		next map[int32]int64 // the next offset to apply, per partition
		err  error           // the reader stopped
	}
	progress chan struct{} // closed and replaced on each fetch applied

	cancel context.CancelFunc
	done   chan struct{}
}

// topicSpec says how to create a Connect topic that does not exist.
type topicSpec struct {
	name       string
	partitions int32
	rf         int16 // -1: the broker's default
}

func openKafkaLog(ctx context.Context, opts []kgo.Opt, spec topicSpec, apply func(r *kgo.Record)) (*kafkaLog, error) {
	cl, err := kgo.NewClient(append(append([]kgo.Opt(nil), opts...),
		kgo.ConsumeTopics(spec.name),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.KeepControlRecords(), // markers move the position to the end of transactions
		kgo.RecordPartitioner(kgo.StickyKeyPartitioner(nil)),
	)...)
	if err != nil {
		return nil, err
	}
	if err := ensureTopic(ctx, kadm.NewClient(cl), spec, map[string]*string{"cleanup.policy": kadm.StringPtr("compact")}); err != nil {
		cl.Close()
		return nil, err
	}
	rctx, cancel := context.WithCancel(context.Background())
	l := &kafkaLog{cl: cl, topic: spec.name, apply: apply, progress: make(chan struct{}), cancel: cancel, done: make(chan struct{})}
	l.mu.next = map[int32]int64{}
	go l.read(rctx)
	if err := l.readToEnd(ctx); err != nil {
		l.Close()
		return nil, err
	}
	return l, nil
}

// ensureTopic creates a topic unless it exists.
func ensureTopic(ctx context.Context, adm *kadm.Client, spec topicSpec, configs map[string]*string) error {
	resp, err := adm.CreateTopic(ctx, spec.partitions, spec.rf, configs, spec.name)
	if err == nil {
		err = resp.Err
	}
	if err != nil && !errors.Is(err, kerr.TopicAlreadyExists) {
		return fmt.Errorf("connect: creating topic %s: %w", spec.name, err)
	}
	return nil
}

func (l *kafkaLog) read(ctx context.Context) {
	defer close(l.done)
	for {
		fs := l.cl.PollFetches(ctx)
		if ctx.Err() != nil {
			return
		}
		var fatal error
		fs.EachError(func(_ string, _ int32, err error) {
			if !kerr.IsRetriable(err) && !errors.Is(err, context.Canceled) {
				fatal = err
			}
		})
		fs.EachRecord(func(r *kgo.Record) {
			if !r.Attrs.IsControl() {
				l.apply(r)
			}
		})
		l.mu.Lock()
		fs.EachRecord(func(r *kgo.Record) { l.mu.next[r.Partition] = r.Offset + 1 })
		if fatal != nil {
			l.mu.err = fmt.Errorf("connect: reading %s: %w", l.topic, fatal)
		}
		close(l.progress)
		l.progress = make(chan struct{})
		l.mu.Unlock()
		if fatal != nil {
			return
		}
	}
}

// readToEnd waits until every record committed to the topic before the
// call has been applied.
func (l *kafkaLog) readToEnd(ctx context.Context) error {
	ends, err := l.ends(ctx)
	if err != nil {
		return err
	}
	for {
		l.mu.Lock()
		caught := true
		ends.Each(func(o kadm.ListedOffset) {
			if o.Offset > 0 && l.mu.next[o.Partition] < o.Offset {
				caught = false
			}
		})
		err, wait := l.mu.err, l.progress
		l.mu.Unlock()
		if err != nil {
			return err
		}
		if caught {
			return nil
		}
		select {
		case <-wait:
		case <-ctx.Done():
			return fmt.Errorf("connect: reading %s to its end: %w", l.topic, ctx.Err())
		}
	}
}

// ends lists the topic's last stable offsets, retrying while the topic is
// new (its partitions may not have leaders yet).
func (l *kafkaLog) ends(ctx context.Context) (kadm.ListedOffsets, error) {
	wait := 10 * time.Millisecond
	for {
		ends, err := kadm.NewClient(l.cl).ListCommittedOffsets(ctx, l.topic)
		if err == nil {
			err = ends.Error()
		}
		if err == nil {
			return ends, nil
		}
		if !kerr.IsRetriable(err) {
			return nil, fmt.Errorf("connect: reading the end of %s: %w", l.topic, err)
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, fmt.Errorf("connect: reading the end of %s: %w (%v)", l.topic, ctx.Err(), err)
		case <-t.C:
		}
		wait = min(2*wait, time.Second)
	}
}

// send writes records and waits for their acknowledgement.
func (l *kafkaLog) send(ctx context.Context, rs ...*kgo.Record) error {
	for _, r := range rs {
		r.Topic = l.topic
	}
	if err := l.cl.ProduceSync(ctx, rs...).FirstErr(); err != nil {
		return fmt.Errorf("connect: writing to %s: %w", l.topic, err)
	}
	return nil
}

// Close stops reading and closes the client once what was written is
// sent (statuses written while the worker stops), waiting at most 5 s.
func (l *kafkaLog) Close() {
	l.cancel()
	<-l.done
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	_ = l.cl.Flush(ctx)
	cancel()
	l.cl.Close()
}

// topicOffsetStore keeps source offsets in a compacted topic.
type topicOffsetStore struct {
	log *kafkaLog
	offsetMap
}

func openTopicOffsetStore(ctx context.Context, opts []kgo.Opt, spec topicSpec) (*topicOffsetStore, error) {
	s := &topicOffsetStore{}
	var err error
	s.log, err = openKafkaLog(ctx, opts, spec, func(r *kgo.Record) {
		// A record that is not an offset (written by something else) is
		// skipped, as Kafka Connect does.
		_ = s.apply(r.Key, r.Value)
	})
	if err != nil {
		return nil, err
	}
	return s, nil
}

func (s *topicOffsetStore) Refresh(ctx context.Context) error { return s.log.readToEnd(ctx) }

func (s *topicOffsetStore) Get(connector string, partition map[string]any) (map[string]any, error) {
	return s.get(connector, partition)
}

func (s *topicOffsetStore) List(connector string) ([]SourceOffset, error) {
	return s.list(connector), nil
}

func (s *topicOffsetStore) Put(ctx context.Context, connector string, offsets []SourceOffset) error {
	rs, err := s.records(connector, offsets)
	if err != nil {
		return err
	}
	// The reader applies them in the topic's order; Refresh waits for it.
	return s.log.send(ctx, rs...)
}

// records encodes offsets as records of the offsets topic.
func (s *topicOffsetStore) records(connector string, offsets []SourceOffset) ([]*kgo.Record, error) {
	keys, values, err := encodeOffsets(connector, offsets)
	if err != nil {
		return nil, err
	}
	rs := make([]*kgo.Record, len(keys))
	for i := range keys {
		rs[i] = &kgo.Record{Topic: s.log.topic, Key: keys[i], Value: values[i]}
	}
	return rs, nil
}

func (s *topicOffsetStore) Close() error {
	s.log.Close()
	return nil
}
