package compat

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/IBM/sarama"
)

// saramaHandler hands every message of a session to out and marks it
// consumed; Cleanup commits the marked offsets when the session ends.
type saramaHandler struct {
	out chan<- record
}

func (h saramaHandler) Setup(sarama.ConsumerGroupSession) error { return nil }

func (h saramaHandler) Cleanup(s sarama.ConsumerGroupSession) error {
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

// saramaGroupConsume joins group with one sarama ConsumerGroup member (at
// sarama's default protocol version), consumes n records of topic, commits
// them when its session ends, and leaves. A group without commits starts at
// the oldest offset.
func saramaGroupConsume(t *testing.T, addr, group, topic string, n int) []record {
	t.Helper()
	cfg := sarama.NewConfig()
	cfg.ClientID = "runnel-compat-sarama"
	cfg.Consumer.Return.Errors = true
	cfg.Consumer.Offsets.Initial = sarama.OffsetOldest
	cfg.Consumer.Offsets.AutoCommit.Enable = false
	cfg.Consumer.MaxWaitTime = 100 * time.Millisecond
	cg, err := sarama.NewConsumerGroup([]string{addr}, group, cfg)
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

	r2 := produceRound(t, addr, topic, groupPartitions, 10, "r2")
	in := make(chan polled)
	m := newKgoMember(t, addr, group, topic, "franz-go")
	m.start(in)
	assertConsumedOnce(t, "franz-go resuming from sarama's commits", collect(t, in, len(r2))["franz-go"], r2)
	m.commit(t)
	waitCommitted(t, addr, group, topic, endsOf(r2))
	m.stop()
	m.cl.Close()
	waitGroupEmpty(t, addr, group)

	r3 := produceRound(t, addr, topic, groupPartitions, 10, "r3")
	assertConsumedOnce(t, "sarama resuming from franz-go's commits", saramaGroupConsume(t, addr, group, topic, len(r3)), r3)
	waitCommitted(t, addr, group, topic, endsOf(r3))
}
