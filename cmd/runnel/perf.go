package main

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

func newPerfCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "perf",
		Short: "Measure produce and consume throughput and latency",
		Long: `Measure a cluster like Kafka's kafka-producer-perf-test and
kafka-consumer-perf-test do. Progress goes to stderr, the summary to stdout.`,
	}
	cmd.AddCommand(newPerfProduceCmd(g), newPerfConsumeCmd(g))
	return cmd
}

type perfProduceFlags struct {
	topic          string
	recordSize     int
	numRecords     int64
	throughput     float64
	acks           string
	compression    string
	idempotent     bool
	partitionsHint int32
	interval       time.Duration
}

func newPerfProduceCmd(g *globals) *cobra.Command {
	var f perfProduceFlags
	cmd := &cobra.Command{
		Use:   "produce --topic T --num-records N",
		Short: "Produce fixed-size records as fast as allowed and report latency",
		Long: `Produce --num-records records of --record-size random bytes (one buffer
shared by every record) and report throughput and latency, like
kafka-producer-perf-test. Latency is the time from the Produce call to the
acknowledgement. The summary line on stdout has p50, p95, p99 and p99.9
latencies.`,
		Example: `  runnel perf produce --topic bench --num-records 1000000 --record-size 1024 --partitions-hint 6`,
		Args:    exactArgs(0, ""),
		RunE: func(cmd *cobra.Command, _ []string) error {
			return g.explain(runPerfProduce(cmd, g, &f))
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.topic, "topic", "", "topic to produce to (required)")
	fl.IntVar(&f.recordSize, "record-size", 1024, "bytes per record value")
	fl.Int64Var(&f.numRecords, "num-records", 0, "number of records to produce (required)")
	fl.Float64Var(&f.throughput, "throughput", -1, "target records/sec (-1: unlimited)")
	fl.StringVar(&f.acks, "acks", "all", "acknowledgements to wait for: all, 1 or 0")
	fl.StringVar(&f.compression, "compression", "none", "batch compression: none, gzip, snappy, lz4 or zstd")
	fl.BoolVar(&f.idempotent, "idempotent", true, "idempotent producer; needs --acks all, off otherwise")
	fl.Int32Var(&f.partitionsHint, "partitions-hint", 0, "create the topic with this many partitions if it does not exist (0: the topic must exist)")
	fl.DurationVar(&f.interval, "report-interval", 5*time.Second, "time between progress lines (a terminal is updated every 500ms)")
	cmd.MarkFlagRequired("topic")
	cmd.MarkFlagRequired("num-records")
	return cmd
}

// perfRecord is what the produce hot loop reuses: the record and the time
// its Produce call started, reachable from the promise through
// Record.Context. Both come from a pool, so the loop allocates nothing per
// record once the pool is warm.
type perfRecord struct {
	context.Context
	start time.Time
	rec   kgo.Record
}

func runPerfProduce(cmd *cobra.Command, g *globals, f *perfProduceFlags) error {
	switch {
	case f.numRecords <= 0:
		return fmt.Errorf("--num-records %d: want a positive count", f.numRecords)
	case f.recordSize < 0:
		return fmt.Errorf("--record-size %d: want zero or more bytes", f.recordSize)
	case f.throughput == 0:
		return errors.New("--throughput 0 would send nothing: use a positive rate or -1 for unlimited")
	}
	opts, err := producerOpts(f.acks, f.compression, f.idempotent, cmd.Flags().Changed("idempotent"))
	if err != nil {
		return err
	}
	cl, err := g.newClient(append(opts, kgo.DefaultProduceTopic(f.topic))...)
	if err != nil {
		return err
	}
	defer cl.Close()
	ctx := cmd.Context()
	if err := ensureTopic(ctx, cl, f.topic, f.partitionsHint); err != nil {
		return err
	}

	value := make([]byte, f.recordSize)
	for i := range value {
		value[i] = 'A' + byte(rand.IntN(26)) // like Kafka's perf test: uppercase letters
	}
	// The embedded context is set once: franz-go may still watch a
	// record's context after its promise ran, so it must never change.
	pool := sync.Pool{New: func() any { return &perfRecord{Context: ctx} }}
	stats := newPerfStats(f.numRecords, maxLatencySamples, time.Now())
	var (
		firstErr atomic.Pointer[error]
		failed   atomic.Bool
	)
	promise := func(r *kgo.Record, err error) {
		pr := r.Context.(*perfRecord)
		if err != nil {
			if !errors.Is(err, context.Canceled) && firstErr.CompareAndSwap(nil, &err) {
				failed.Store(true)
			}
		} else {
			stats.record(len(r.Value), time.Since(pr.start))
		}
		pool.Put(pr)
	}

	prog := startProgress(cmd.ErrOrStderr(), stats, "sent", true, f.interval)
	defer prog.stop()
	start := time.Now()
	for i := int64(0); i < f.numRecords && ctx.Err() == nil && !failed.Load(); i++ {
		if f.throughput > 0 {
			throttle(ctx, start, i, f.throughput)
		}
		pr := pool.Get().(*perfRecord)
		pr.rec = kgo.Record{Topic: f.topic, Value: value, Context: pr}
		pr.start = time.Now()
		cl.Produce(ctx, &pr.rec, promise)
	}
	// An interrupt still waits for what was sent, so the summary is true.
	flushErr := cl.Flush(context.WithoutCancel(ctx))
	prog.stop()
	fmt.Fprintln(cmd.OutOrStdout(), stats.summary(time.Now()))
	if p := firstErr.Load(); p != nil {
		return fmt.Errorf("stopped at the first failed record: %w", kafkaErr(g.explain(*p), ""))
	}
	return flushErr
}

// throttle sleeps until record i is due at the target rate (records/sec),
// as Kafka's ThroughputThrottler does.
func throttle(ctx context.Context, start time.Time, i int64, rate float64) {
	due := start.Add(time.Duration(float64(i) / rate * float64(time.Second)))
	if d := time.Until(due); d > time.Millisecond {
		t := time.NewTimer(d)
		defer t.Stop()
		select {
		case <-t.C:
		case <-ctx.Done():
		}
	}
}

// ensureTopic checks that topic exists, creating it with partitions
// partitions (and the broker's default replication) when partitions > 0.
func ensureTopic(ctx context.Context, cl *kgo.Client, topic string, partitions int32) error {
	_, err := topicPartitions(ctx, cl, topic, false)
	if !errors.Is(err, errTopicMissing) || partitions <= 0 {
		if errors.Is(err, errTopicMissing) {
			return &missingTopicError{topic, fmt.Sprintf("create it with \"runnel topic create %s\", or pass --partitions-hint N", topic)}
		}
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, metadataTimeout)
	defer cancel()
	r, err := kadm.NewClient(cl).CreateTopic(ctx, partitions, -1, nil, topic)
	if err != nil && !errors.Is(err, kerr.TopicAlreadyExists) {
		return kafkaErr(fmt.Errorf("creating topic %q: %w", topic, err), r.ErrMessage)
	}
	return nil
}

type perfConsumeFlags struct {
	topic    string
	messages int64
	group    string
	from     string
	timeout  time.Duration
	interval time.Duration
}

func newPerfConsumeCmd(g *globals) *cobra.Command {
	var f perfConsumeFlags
	cmd := &cobra.Command{
		Use:   "consume --topic T --messages N",
		Short: "Consume records as fast as possible and report throughput",
		Long: `Consume --messages records (from the beginning of the topic by default) and
report throughput, like kafka-consumer-perf-test. The run fails if no record
arrives for --timeout.`,
		Example: `  runnel perf consume --topic bench --messages 1000000`,
		Args:    exactArgs(0, ""),
		RunE: func(cmd *cobra.Command, _ []string) error {
			return g.explain(runPerfConsume(cmd, g, &f))
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.topic, "topic", "", "topic to consume (required)")
	fl.Int64Var(&f.messages, "messages", 0, "number of records to consume (required)")
	fl.StringVar(&f.group, "group", "", "consume as a member of this consumer group (default: no group)")
	fl.StringVar(&f.from, "from", "beginning", "where to start when there is no committed offset: beginning or end")
	fl.DurationVar(&f.timeout, "timeout", 10*time.Second, "fail if no record arrives for this long")
	fl.DurationVar(&f.interval, "report-interval", 5*time.Second, "time between progress lines (a terminal is updated every 500ms)")
	cmd.MarkFlagRequired("topic")
	cmd.MarkFlagRequired("messages")
	return cmd
}

func runPerfConsume(cmd *cobra.Command, g *globals, f *perfConsumeFlags) error {
	if f.messages <= 0 {
		return fmt.Errorf("--messages %d: want a positive count", f.messages)
	}
	reset := kgo.NewOffset().AtStart()
	switch f.from {
	case "beginning":
	case "end":
		reset = kgo.NewOffset().AtEnd()
	default:
		return fmt.Errorf("--from %q: want beginning or end", f.from)
	}
	opts := []kgo.Opt{kgo.ConsumeTopics(f.topic), kgo.ConsumeResetOffset(reset), kgo.FetchMaxWait(500 * time.Millisecond)}
	if f.group != "" {
		opts = append(opts, kgo.ConsumerGroup(f.group))
	}
	cl, err := g.newClient(opts...)
	if err != nil {
		return err
	}
	defer cl.Close()
	ctx := cmd.Context()
	if _, err := topicPartitions(ctx, cl, f.topic, false); err != nil {
		return err
	}

	start := time.Now()
	stats := newPerfStats(0, 1, start)
	prog := startProgress(cmd.ErrOrStderr(), stats, "consumed", false, f.interval)
	defer prog.stop()
	var firstRecord time.Time
	var n int64
	for n < f.messages && ctx.Err() == nil {
		pctx, cancel := context.WithTimeout(ctx, f.timeout)
		fetches := cl.PollRecords(pctx, int(min(f.messages-n, 1<<20)))
		cancel()
		var fatal error
		fetches.EachError(func(t string, p int32, err error) {
			switch {
			case errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil:
				fatal = fmt.Errorf("no record for %s: consumed %d of %d from %q (does the topic hold that many? raise --timeout if the cluster is slow)",
					f.timeout, n, f.messages, f.topic)
			case errors.Is(err, context.Canceled), errors.Is(err, kgo.ErrClientClosed):
			case fatal == nil:
				fatal = kafkaErr(fmt.Errorf("%s: %w", fetchSource(t, p, f.group), err), "")
			}
		})
		if fatal != nil {
			return fatal
		}
		fetches.EachRecord(func(r *kgo.Record) {
			if n == 0 {
				firstRecord = time.Now()
			}
			n++
			stats.record(len(r.Key)+len(r.Value), -1)
		})
	}
	if f.group != "" {
		if err := cl.CommitUncommittedOffsets(context.WithoutCancel(ctx)); err != nil {
			return fmt.Errorf("committing offsets of group %q: %w", f.group, err)
		}
	}
	prog.stop()
	fmt.Fprintln(cmd.OutOrStdout(), stats.consumeSummary(time.Now(), firstRecord))
	return nil
}
