package compat

import (
	"context"
	"fmt"
	"hash"
	"maps"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/lovoo/goka"
	"github.com/lovoo/goka/codec"
	"github.com/lovoo/goka/storage"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// gokaLogger sends goka's log to the test log. Every goka component a test
// starts has stopped before the test ends.
type gokaLogger struct{ t *testing.T }

func (l gokaLogger) Print(v ...any)                 { l.t.Log(v...) }
func (l gokaLogger) Println(v ...any)               { l.t.Log(v...) }
func (l gokaLogger) Printf(format string, v ...any) { l.t.Logf(format, v...) }

// gokaApp is a goka counting app against one broker: an emitter writes clicks
// keyed by user to a stream, and a processor in group counts them per user in
// its group table (topic "<group>-table"). Every goka part gets the same
// sarama configuration: goka's defaults (sarama protocol version 2.0.0,
// goka's `copartition` assignor) with acks=all.
type gokaApp struct {
	t       *testing.T
	brokers []string
	input   goka.Stream
	group   goka.Group
	tmc     *goka.TopicManagerConfig
}

func newGokaApp(t *testing.T, addr, name string) *gokaApp {
	tmc := goka.NewTopicManagerConfig()
	tmc.Table.Replication = 1
	tmc.Stream.Replication = 1
	return &gokaApp{
		t:       t,
		brokers: []string{addr},
		input:   goka.Stream(name + ".clicks"),
		group:   goka.Group(name + ".counter"),
		tmc:     tmc,
	}
}

// cfg returns a new sarama configuration. goka's builders write to the
// configuration they are given (client ID, partitioner) each time they build,
// and goka builds concurrently, so every build gets its own (the builders
// below).
func (a *gokaApp) cfg() *sarama.Config {
	cfg := goka.DefaultConfig()
	cfg.ClientID = "runnel-compat-goka"
	cfg.Producer.RequiredAcks = sarama.WaitForAll
	cfg.Consumer.Offsets.Initial = sarama.OffsetOldest
	cfg.Consumer.MaxWaitTime = 100 * time.Millisecond
	return cfg
}

func (a *gokaApp) topicManagerBuilder() goka.TopicManagerBuilder {
	return func(brokers []string) (goka.TopicManager, error) {
		return goka.TopicManagerBuilderWithConfig(a.cfg(), a.tmc)(brokers)
	}
}

func (a *gokaApp) producerBuilder() goka.ProducerBuilder {
	return func(brokers []string, clientID string, hasher func() hash.Hash32) (goka.Producer, error) {
		return goka.ProducerBuilderWithConfig(a.cfg())(brokers, clientID, hasher)
	}
}

func (a *gokaApp) consumerGroupBuilder() goka.ConsumerGroupBuilder {
	return func(brokers []string, group, clientID string) (sarama.ConsumerGroup, error) {
		return goka.ConsumerGroupBuilderWithConfig(a.cfg())(brokers, group, clientID)
	}
}

func (a *gokaApp) consumerBuilder() goka.SaramaConsumerBuilder {
	return func(brokers []string, clientID string) (sarama.Consumer, error) {
		return goka.SaramaConsumerBuilderWithConfig(a.cfg())(brokers, clientID)
	}
}

// emit sends n clicks for each user through a goka emitter and waits until
// every one is acknowledged.
func (a *gokaApp) emit(clicks map[string]int64) {
	t := a.t
	t.Helper()
	em, err := goka.NewEmitter(a.brokers, a.input, new(codec.String),
		goka.WithEmitterTopicManagerBuilder(a.topicManagerBuilder()),
		goka.WithEmitterProducerBuilder(a.producerBuilder()),
		goka.WithEmitterLogger(gokaLogger{t}),
	)
	if err != nil {
		t.Fatalf("goka emitter: %v", err)
	}
	var mu sync.Mutex
	var errs []error
	for user, n := range clicks {
		for range n {
			p, err := em.Emit(user, "click")
			if err != nil {
				t.Fatalf("goka emit: %v", err)
			}
			p.Then(func(err error) {
				if err != nil {
					mu.Lock()
					errs = append(errs, err)
					mu.Unlock()
				}
			})
		}
	}
	if err := em.Finish(); err != nil { // waits for every emit in flight
		t.Fatalf("goka emitter finish: %v", err)
	}
	if len(errs) > 0 {
		t.Fatalf("goka emits failed: %v", errs)
	}
}

// runProcessor starts the counting processor with in-memory storage, so its
// table state can only come from the table topic, and waits until it has
// recovered every partition. stop cancels it and waits for Run to return.
func (a *gokaApp) runProcessor() (p *goka.Processor, stop func()) {
	t := a.t
	t.Helper()
	count := func(ctx goka.Context, _ any) {
		n, _ := ctx.Value().(int64)
		ctx.SetValue(n + 1)
	}
	graph := goka.DefineGroup(a.group,
		goka.Input(a.input, new(codec.String), count),
		goka.Persist(new(codec.Int64)),
	)
	p, err := goka.NewProcessor(a.brokers, graph,
		goka.WithClientID("runnel-compat-goka"),
		goka.WithTopicManagerBuilder(a.topicManagerBuilder()),
		goka.WithConsumerGroupBuilder(a.consumerGroupBuilder()),
		goka.WithConsumerSaramaBuilder(a.consumerBuilder()),
		goka.WithProducerBuilder(a.producerBuilder()),
		goka.WithStorageBuilder(storage.MemoryBuilder()),
		goka.WithLogger(gokaLogger{t}),
	)
	if err != nil {
		t.Fatalf("goka processor: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- p.Run(ctx) }()
	stopped := false
	stop = func() {
		if stopped {
			return
		}
		stopped = true
		cancel()
		if err := <-done; err != nil {
			t.Errorf("goka processor run: %v", err)
		}
	}
	t.Cleanup(stop)

	wait := testContext(t, 60*time.Second)
	if err := p.WaitForReadyContext(wait); err != nil {
		t.Fatalf("goka processor not ready: %v", err)
	}
	waitFor(t, wait, "goka processor recovered", func() error {
		select {
		case err := <-done:
			done <- err
			return fmt.Errorf("processor stopped: %v", err)
		default:
		}
		if !p.Recovered() {
			return fmt.Errorf("recovering")
		}
		return nil
	})
	return p, stop
}

// counts reads the processor's table value for each user.
func counts(p *goka.Processor, users map[string]int64) (map[string]int64, error) {
	got := map[string]int64{}
	for user := range users {
		v, err := p.Get(user)
		if err != nil {
			return nil, err
		}
		if v != nil {
			got[user] = v.(int64)
		}
	}
	return got, nil
}

// waitCounted waits until the group has committed the end of the input
// stream (so every click was processed, and its table write acknowledged
// before the commit) and then requires the counts to be exactly want.
func (a *gokaApp) waitCounted(p *goka.Processor, want map[string]int64) {
	t := a.t
	t.Helper()
	ctx := testContext(t, 60*time.Second)
	adm := newAdmin(t, a.brokers[0])
	topic := string(a.input)
	waitFor(t, ctx, "goka group to commit the end of "+topic, func() error {
		ends, err := adm.ListEndOffsets(ctx, topic)
		if err != nil {
			return err
		}
		want := map[int32]int64{}
		ends.Each(func(o kadm.ListedOffset) { want[o.Partition] = o.Offset })
		got, err := committed(ctx, adm, string(a.group), topic)
		if err != nil {
			return err
		}
		for p, end := range want {
			if got[p] != end && end > 0 {
				return fmt.Errorf("committed %v, ends %v", got, want)
			}
		}
		return nil
	})
	got, err := counts(p, want)
	if err != nil {
		t.Fatalf("goka table: %v", err)
	}
	if !maps.Equal(got, want) {
		t.Errorf("goka counts %v, want %v", got, want)
	}
}

// TestGoka runs a goka counting processor (group table, sarama consumer group
// with goka's copartition assignor) fed by a goka emitter. The processor is
// stopped and started again with empty in-memory storage: it must rebuild
// its table from the compacted table topic and resume the input from its
// committed offsets, so counts continue where they stopped, none counted
// twice; read independently, the table topic ends with the same counts.
func TestGoka(t *testing.T) {
	t.Parallel()
	addr := startBroker(t)
	app := newGokaApp(t, addr, topicName(t))
	createTopic(t, addr, string(app.input), groupPartitions)

	round1, round2, total := map[string]int64{}, map[string]int64{}, map[string]int64{}
	for i := range 8 {
		user := fmt.Sprintf("user-%d", i)
		round1[user], round2[user] = int64(i+1), 2
		total[user] = round1[user] + round2[user]
	}

	p, stop := app.runProcessor()
	app.emit(round1)
	app.waitCounted(p, round1)
	stop()

	table := string(goka.GroupTable(app.group))
	ctx := testContext(t, 30*time.Second)
	cfgs, err := newAdmin(t, addr).DescribeTopicConfigs(ctx, table)
	if err == nil {
		_, err = cfgs.On(table, nil)
	}
	if err != nil {
		t.Fatalf("describe configs of goka's table %s: %v", table, err)
	}
	for _, c := range cfgs[0].Configs {
		if c.Key == "cleanup.policy" && (c.Value == nil || *c.Value != "compact") {
			t.Errorf("goka created its table %s with cleanup.policy %v, want compact", table, c.MaybeValue())
		}
	}

	p, stop = app.runProcessor()
	got, err := counts(p, round1)
	if err != nil {
		t.Fatalf("goka table after restart: %v", err)
	}
	if !maps.Equal(got, round1) {
		t.Errorf("after restart goka's table holds %v, want %v (recovered from the table topic)", got, round1)
	}
	app.emit(round2)
	app.waitCounted(p, total)
	stop()

	if got := tableTopic(t, addr, table); !maps.Equal(got, total) {
		t.Errorf("goka's table topic %s ends with counts %v, want %v", table, got, total)
	}
}

// tableTopic reads a goka table topic to its end with franz-go (no group)
// and returns the last value of each key, decoded as goka's Int64 codec
// writes it (decimal text).
func tableTopic(t *testing.T, addr, topic string) map[string]int64 {
	t.Helper()
	ctx := testContext(t, 30*time.Second)
	ends, err := newAdmin(t, addr).ListEndOffsets(ctx, topic)
	if err != nil {
		t.Fatalf("end offsets of %s: %v", topic, err)
	}
	left := map[int32]int64{}
	parts := map[int32]kgo.Offset{}
	ends.Each(func(o kadm.ListedOffset) {
		if o.Offset > 0 {
			left[o.Partition] = o.Offset
			parts[o.Partition] = kgo.NewOffset().AtStart()
		}
	})
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: parts}),
		kgo.FetchMaxWait(100*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	last := map[string]int64{}
	for len(left) > 0 {
		fs := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			t.Fatalf("reading %s: partitions %v not read to their end: %v", topic, left, err)
		}
		fs.EachError(func(_ string, p int32, err error) { t.Fatalf("reading %s/%d: %v", topic, p, err) })
		fs.EachRecord(func(r *kgo.Record) {
			n, err := strconv.ParseInt(string(r.Value), 10, 64)
			if err != nil {
				t.Fatalf("%s/%d@%d: value %q: %v", topic, r.Partition, r.Offset, r.Value, err)
			}
			last[string(r.Key)] = n
			if r.Offset+1 >= left[r.Partition] {
				delete(left, r.Partition)
			}
		})
	}
	return last
}
