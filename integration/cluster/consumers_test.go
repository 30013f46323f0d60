package cluster

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// readRecord is a record a consumer (or the final read) was given.
type readRecord struct {
	Consumer  string
	Session   int // a client's lifetime; for a group member, one assignment
	Partition int32
	Offset    int64
	Value     string
}

// nonMonotonic is an offset that did not increase within one session.
type nonMonotonic struct {
	Consumer  string
	Session   int
	Partition int32
	Prev, Got int64
	PrevValue string
	GotValue  string
}

func (n nonMonotonic) String() string {
	return fmt.Sprintf("%s session %d partition %d: offset %d (%q) after %d (%q)",
		n.Consumer, n.Session, n.Partition, n.Got, n.GotValue, n.Prev, n.PrevValue)
}

// consumeConfig says which consumers startConsumers runs.
type consumeConfig struct {
	Partitions int32  // the topic's partition count
	Assigned   int    // consumers of every partition from the start, outside any group
	Group      string // consumer group name; "" for none
	Members    int    // members of Group
}

// consumerSet records everything its consumers read.
type consumerSet struct {
	ctx    context.Context // ends the consumers
	cancel context.CancelFunc
	kinds  []string  // what caughtUp waits for: each assigned consumer, each group
	opts   []kgo.Opt // every client's options besides its own
	wg     sync.WaitGroup
	mu     struct {
		sync.Mutex
		reads     []readRecord
		bad       []nonMonotonic
		fetchErrs int
		// next: per consumer and partition, the offset after the last read
		// of the current session (absent: none yet).
		next map[string]map[int32]int64
		// high: per consumer kind (an assigned consumer, or a group) and
		// partition, the highest offset read.
		high map[string]map[int32]int64
	}
}

// startConsumers starts cfg's consumers on topic: cfg.Assigned consumers
// of every partition from the start, outside any group, and cfg.Members
// members of cfg.Group, their clients made with opts besides their own.
// They read until Stop or until ctx ends.
func startConsumers(ctx context.Context, seeds []string, topic string, cfg consumeConfig, opts ...kgo.Opt) (*consumerSet, error) {
	cs := newConsumerSet(ctx, opts...)
	for i := range cfg.Assigned {
		from := map[int32]kgo.Offset{}
		for p := range cfg.Partitions {
			from[p] = kgo.NewOffset().AtStart()
		}
		if err := cs.assign(fmt.Sprintf("assigned-%d", i), seeds, topic, from); err != nil {
			cs.Stop()
			return nil, err
		}
	}
	for i := range cfg.Members {
		if err := cs.join(fmt.Sprintf("%s-%d", cfg.Group, i), seeds, topic, cfg.Group); err != nil {
			cs.Stop()
			return nil, err
		}
	}
	return cs, nil
}

func newConsumerSet(ctx context.Context, opts ...kgo.Opt) *consumerSet {
	cs := &consumerSet{opts: opts}
	cs.ctx, cs.cancel = context.WithCancel(ctx)
	cs.mu.next = map[string]map[int32]int64{}
	cs.mu.high = map[string]map[int32]int64{}
	return cs
}

// consumerOpts are every consumer's client options.
func (cs *consumerSet) consumerOpts(seeds []string, name string) []kgo.Opt {
	return append([]kgo.Opt{kgo.SeedBrokers(seeds...), kgo.ClientID(name), kgo.MetadataMinAge(250 * time.Millisecond)}, cs.opts...)
}

// assign adds consumer name of the partitions of from, starting at its
// offsets, outside any group: one session for the client's life.
func (cs *consumerSet) assign(name string, seeds []string, topic string, from map[int32]kgo.Offset) error {
	cl, err := kgo.NewClient(append(cs.consumerOpts(seeds, name),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: from}))...)
	if err != nil {
		return err
	}
	cs.kinds = append(cs.kinds, name)
	cs.startSession(name, nil)
	cs.poll(cl, name, name, false)
	return nil
}

// join adds member name of group. Members commit every 500 ms (kgo's
// autocommit) and get rebalances only between polls, so each assignment
// is a session whose offsets must increase.
func (cs *consumerSet) join(name string, seeds []string, topic, group string) error {
	cl, err := kgo.NewClient(append(cs.consumerOpts(seeds, name),
		kgo.ConsumerGroup(group), kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.AutoCommitInterval(500*time.Millisecond),
		kgo.BlockRebalanceOnPoll(),
		kgo.OnPartitionsAssigned(func(_ context.Context, _ *kgo.Client, a map[string][]int32) {
			cs.startSession(name, a[topic])
		}),
	)...)
	if err != nil {
		return err
	}
	if !slices.Contains(cs.kinds, group) {
		cs.kinds = append(cs.kinds, group)
	}
	cs.poll(cl, name, group, true)
	return nil
}

// startSession begins a new session of consumer name for partitions
// (nil: all), forgetting where its previous one was.
func (cs *consumerSet) startSession(name string, partitions []int32) {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	if partitions == nil {
		cs.mu.next[name] = map[int32]int64{}
		return
	}
	if cs.mu.next[name] == nil {
		cs.mu.next[name] = map[int32]int64{}
	}
	for _, p := range partitions {
		delete(cs.mu.next[name], p)
	}
}

// poll runs consumer name's poll loop on a goroutine; kind names the
// consumer (or group) whose reads count together for caughtUp.
func (cs *consumerSet) poll(cl *kgo.Client, name, kind string, group bool) {
	sessions := map[int32]int{} // per partition, its session number
	cs.wg.Add(1)
	go func() {
		defer cs.wg.Done()
		defer cl.Close()
		for cs.ctx.Err() == nil {
			fs := cl.PollFetches(cs.ctx)
			cs.mu.Lock()
			fs.EachError(func(string, int32, error) { cs.mu.fetchErrs++ })
			fs.EachRecord(func(r *kgo.Record) { cs.recordLocked(name, kind, sessions, r) })
			cs.mu.Unlock()
			if group {
				cl.AllowRebalance()
			}
		}
	}()
}

func (cs *consumerSet) recordLocked(name, kind string, sessions map[int32]int, r *kgo.Record) {
	next, ok := cs.mu.next[name][r.Partition]
	if !ok {
		sessions[r.Partition]++ // a new session for this partition
	}
	rr := readRecord{Consumer: name, Session: sessions[r.Partition], Partition: r.Partition, Offset: r.Offset, Value: string(r.Value)}
	if ok && r.Offset < next {
		prev := cs.lastReadLocked(name, r.Partition)
		cs.mu.bad = append(cs.mu.bad, nonMonotonic{Consumer: name, Session: rr.Session, Partition: r.Partition,
			Prev: next - 1, Got: r.Offset, PrevValue: prev, GotValue: rr.Value})
	}
	cs.mu.reads = append(cs.mu.reads, rr)
	cs.mu.next[name][r.Partition] = r.Offset + 1
	if cs.mu.high[kind] == nil {
		cs.mu.high[kind] = map[int32]int64{}
	}
	if h, ok := cs.mu.high[kind][r.Partition]; !ok || r.Offset > h {
		cs.mu.high[kind][r.Partition] = r.Offset
	}
}

// lastReadLocked is the value of name's latest read of partition.
func (cs *consumerSet) lastReadLocked(name string, partition int32) string {
	for i := len(cs.mu.reads) - 1; i >= 0; i-- {
		if r := cs.mu.reads[i]; r.Consumer == name && r.Partition == partition {
			return r.Value
		}
	}
	return ""
}

// caughtUp reports whether every consumer kind (each assigned consumer,
// the group as a whole) has read every partition up to ends (exclusive;
// partitions with end 0 need nothing).
func (cs *consumerSet) caughtUp(ends map[int32]int64) bool {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	for _, kind := range cs.kinds {
		for p, end := range ends {
			if h, ok := cs.mu.high[kind][p]; end > 0 && (!ok || h < end-1) {
				return false
			}
		}
	}
	return true
}

// Stop stops every consumer and waits for them.
func (cs *consumerSet) Stop() {
	cs.cancel()
	cs.wg.Wait()
}

// Reads returns every record read so far; NonMonotonic the offsets that went
// backwards within a session; FetchErrors how many fetch errors the
// consumers saw (expected while nodes die).
func (cs *consumerSet) Reads() []readRecord {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	return slices.Clone(cs.mu.reads)
}

func (cs *consumerSet) NonMonotonic() []nonMonotonic {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	return slices.Clone(cs.mu.bad)
}

func (cs *consumerSet) FetchErrors() int {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	return cs.mu.fetchErrs
}
