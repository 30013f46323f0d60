package compat

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/twmb/franz-go/pkg/kgo"
)

// saramaHandler hands every message of a session to out and marks it
// consumed; Cleanup commits the marked offsets when the session ends. When
// claims is set, it is told the session's claims at its start and nil at its
// end.
type saramaHandler struct {
	out    chan<- record
	claims func(map[string][]int32)
}

func (h saramaHandler) Setup(s sarama.ConsumerGroupSession) error {
	if h.claims != nil {
		h.claims(s.Claims())
	}
	return nil
}

func (h saramaHandler) Cleanup(s sarama.ConsumerGroupSession) error {
	if h.claims != nil {
		h.claims(nil)
	}
	// Auto-commit is off, so the marks go to the broker here, once, and
	// the test knows when.
	s.Commit()
	return nil
}

func (h saramaHandler) ConsumeClaim(s sarama.ConsumerGroupSession, c sarama.ConsumerGroupClaim) error {
	for {
		select {
		case m, ok := <-c.Messages():
			if !ok {
				return nil
			}
			hs := make([]header, len(m.Headers))
			for i, h := range m.Headers {
				hs[i] = header{string(h.Key), string(h.Value)}
			}
			select {
			case h.out <- record{
				Partition: m.Partition, Offset: m.Offset, Key: string(m.Key), Value: string(m.Value),
				Headers: hs, Timestamp: m.Timestamp.UnixMilli(),
			}:
			case <-s.Context().Done():
				return nil
			}
			s.MarkMessage(m, "")
		case <-s.Context().Done():
			return nil
		}
	}
}

// saramaConfig is the configuration of the sarama group members: sarama's
// default protocol version and range assignor, the oldest offset for a group
// without commits, and no auto-commit (the handler commits).
func saramaConfig() *sarama.Config {
	cfg := sarama.NewConfig()
	cfg.ClientID = "runnel-compat-sarama"
	cfg.Consumer.Return.Errors = true
	cfg.Consumer.Offsets.Initial = sarama.OffsetOldest
	cfg.Consumer.Offsets.AutoCommit.Enable = false
	cfg.Consumer.MaxWaitTime = 100 * time.Millisecond
	return cfg
}

// saramaGroupConsume joins group with one sarama ConsumerGroup member,
// consumes n records of topic, commits them when its session ends, and
// leaves.
func saramaGroupConsume(t *testing.T, addr, group, topic string, n int) []record {
	t.Helper()
	cg, err := sarama.NewConsumerGroup([]string{addr}, group, saramaConfig())
	if err != nil {
		t.Fatalf("sarama consumer group: %v", err)
	}
	defer cg.Close()

	ctx := testContext(t, 60*time.Second)
	sessCtx, stop := context.WithCancel(ctx)
	defer stop()
	recs := make(chan record)
	consumed := make(chan error, 1)
	go func() {
		// Consume returns at each rebalance; call it again until stopped.
		for sessCtx.Err() == nil {
			if err := cg.Consume(sessCtx, []string{topic}, saramaHandler{out: recs}); err != nil {
				consumed <- err
				return
			}
		}
		consumed <- nil
	}()

	var got []record
	for len(got) < n {
		select {
		case r := <-recs:
			got = append(got, r)
		case err := <-cg.Errors():
			t.Fatalf("sarama consumer group: %v", err)
		case err := <-consumed:
			t.Fatalf("sarama Consume ended after %d of %d records: %v", len(got), n, err)
		case <-ctx.Done():
			t.Fatalf("sarama consumer group: have %d of %d records: %v", len(got), n, ctx.Err())
		}
	}
	stop()
	if err := <-consumed; err != nil && !errors.Is(err, context.Canceled) {
		t.Fatalf("sarama Consume: %v", err)
	}
	if err := cg.Close(); err != nil {
		t.Fatalf("sarama consumer group close: %v", err)
	}
	return got
}

// TestGroupSarama passes a group's position between sarama's ConsumerGroup
// and franz-go: sarama consumes the first round and commits, kadm reads
// exactly its commits, a franz-go member of the same group resumes with the
// second round only and commits, and sarama resumes with the third only.
func TestGroupSarama(t *testing.T) {
	t.Parallel()
	addr := startBroker(t)
	topic := topicName(t)
	group := topic + ".group"
	createTopic(t, addr, topic, groupPartitions)

	r1 := produceRound(t, addr, topic, groupPartitions, 10, "r1")
	assertConsumedOnce(t, "sarama group", saramaGroupConsume(t, addr, group, topic, len(r1)), r1)
	waitCommitted(t, addr, group, topic, endsOf(r1))
	waitGroupEmpty(t, addr, group)

	resumeWithFranzGo(t, addr, group, topic, "sarama", produceRound(t, addr, topic, groupPartitions, 10, "r2"))

	r3 := produceRound(t, addr, topic, groupPartitions, 10, "r3")
	assertConsumedOnce(t, "sarama resuming from franz-go's commits", saramaGroupConsume(t, addr, group, topic, len(r3)), r3)
	waitCommitted(t, addr, group, topic, endsOf(r3))
}

// TestGroupMixedFranzGoSarama runs a franz-go member and a sarama member in
// one group at the same time, both with the range assignor: whichever leads
// encodes the other's assignment in the consumer protocol, each consumes only
// its own two partitions, together they consume every record once, and both
// commits land.
func TestGroupMixedFranzGoSarama(t *testing.T) {
	t.Parallel()
	addr := startBroker(t)
	topic := topicName(t)
	group := topic + ".group"
	createTopic(t, addr, topic, groupPartitions)

	in := make(chan polled)
	m := newKgoMember(t, addr, group, topic, "franz-go", kgo.Balancers(kgo.RangeBalancer()))
	m.start(in)

	cg, err := sarama.NewConsumerGroup([]string{addr}, group, saramaConfig())
	if err != nil {
		t.Fatalf("sarama consumer group: %v", err)
	}
	defer cg.Close()
	var mu sync.Mutex
	var claimed []int32
	recs := make(chan record)
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	consumed := make(chan error, 1)
	go func() {
		h := saramaHandler{out: recs, claims: func(c map[string][]int32) {
			mu.Lock()
			defer mu.Unlock()
			claimed = slices.Sorted(slices.Values(c[topic]))
		}}
		for ctx.Err() == nil {
			if err := cg.Consume(ctx, []string{topic}, h); err != nil {
				consumed <- err
				return
			}
		}
		consumed <- nil
	}()
	forwarded := make(chan struct{})
	go func() {
		defer close(forwarded)
		for {
			select {
			case r := <-recs:
				select {
				case in <- polled{member: "sarama", recs: []record{r}}:
				case <-ctx.Done():
					return
				}
			case <-ctx.Done():
				return
			}
		}
	}()
	saramaClaims := func() []int32 {
		mu.Lock()
		defer mu.Unlock()
		return claimed
	}

	wait := testContext(t, 60*time.Second)
	waitFor(t, wait, "both members assigned", func() error {
		k, s := m.owned(), saramaClaims()
		if len(k) != 2 || len(s) != 2 || slices.ContainsFunc(k, func(p int32) bool { return slices.Contains(s, p) }) {
			return fmt.Errorf("franz-go owns %v, sarama claims %v", k, s)
		}
		return nil
	})

	r1 := produceRound(t, addr, topic, groupPartitions, 10, "r1")
	got := collect(t, in, len(r1))
	assertFromOwned(t, m, got["franz-go"])
	for _, r := range got["sarama"] {
		if !slices.Contains(saramaClaims(), r.Partition) {
			t.Errorf("sarama consumed %d/%d but claims %v", r.Partition, r.Offset, saramaClaims())
		}
	}
	assertConsumedOnce(t, "franz-go and sarama in one group", append(got["franz-go"], got["sarama"]...), r1)
	if state, protocol, members, _ := describeGroup(t, addr, group, topic); state != "Stable" || protocol != "range" || len(members) != 2 {
		t.Errorf("group is %s with protocol %q and members %v, want Stable, range, franz-go and sarama", state, protocol, members)
	}

	m.commit(t)
	stop() // sarama's session ends and commits
	if err := <-consumed; err != nil && !errors.Is(err, context.Canceled) {
		t.Fatalf("sarama Consume: %v", err)
	}
	<-forwarded
	waitCommitted(t, addr, group, topic, endsOf(r1))
}
