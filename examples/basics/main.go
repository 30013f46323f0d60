// Producer and consumer basics with franz-go (kgo), no Streams: create a
// topic with three partitions, produce keyed records one at a time,
// waiting for each acknowledgement (which says where the record went:
// its partition and offset), then read the topic from the start with a
// plain consumer — no consumer group, no committed offsets — until every
// partition is read to its end.
//
// The producer picks a record's partition by hashing its key, so all the
// records of one key land in one partition, in the order they were sent;
// across partitions there is no order.
//
//	go run ./examples/basics [-brokers host:9092] [-n 12]
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sort"
	"strings"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/runnel-io/runnel/examples/internal/embedded"
)

const (
	topic      = "basics"
	partitions = 3
)

// users are the record keys, taken in turn.
var users = []string{"alice", "bob", "carol", "dave"}

func main() {
	brokers := flag.String("brokers", "", "comma-separated seed brokers (default: start an embedded broker)")
	n := flag.Int("n", 12, "how many records to produce")
	flag.Parse()
	ctx, cancel := signal.NotifyContext(context.Background(), os.Interrupt)
	defer cancel()
	if err := run(ctx, *brokers, *n, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "basics:", err)
		os.Exit(1)
	}
}

// run creates the topic, produces n records and consumes the topic from
// the start, printing each step to w.
func run(ctx context.Context, brokerList string, n int, w io.Writer) error {
	seeds, stop, err := embedded.Brokers(brokerList)
	if err != nil {
		return err
	}
	defer stop()

	cl, err := kgo.NewClient(kgo.SeedBrokers(seeds...))
	if err != nil {
		return err
	}
	defer cl.Close()
	if err := createTopic(ctx, kadm.NewClient(cl), w); err != nil {
		return err
	}
	if err := produce(ctx, cl, n, w); err != nil {
		return err
	}
	return consume(ctx, seeds, kadm.NewClient(cl), w)
}

// createTopic creates the topic with its partitions (the replication
// factor is the broker's default), or keeps it if it exists.
func createTopic(ctx context.Context, adm *kadm.Client, w io.Writer) error {
	resp, err := adm.CreateTopic(ctx, partitions, -1, nil, topic)
	switch {
	case err == nil && resp.Err == nil:
		fmt.Fprintf(w, "created topic %q with %d partitions\n", topic, partitions)
	case err == nil && errors.Is(resp.Err, kerr.TopicAlreadyExists):
		fmt.Fprintf(w, "topic %q exists already\n", topic)
	case err == nil:
		return fmt.Errorf("create topic %s: %w", topic, resp.Err)
	default:
		return fmt.Errorf("create topic %s: %w", topic, err)
	}
	return nil
}

// produce sends n records synchronously: ProduceSync returns once the
// broker acknowledged the record, with its partition and offset filled in.
func produce(ctx context.Context, cl *kgo.Client, n int, w io.Writer) error {
	fmt.Fprintf(w, "\nproducing %d records, keyed by user:\n", n)
	partitionOf := map[string]int32{}
	count := map[string]int{}
	for i := range n {
		user := users[i%len(users)]
		r := &kgo.Record{Topic: topic, Key: []byte(user), Value: fmt.Appendf(nil, "%s-event-%d", user, i)}
		if err := cl.ProduceSync(ctx, r).FirstErr(); err != nil {
			return fmt.Errorf("produce: %w", err)
		}
		fmt.Fprintf(w, "  produced key=%-5s value=%-17s -> partition %d offset %d\n", r.Key, r.Value, r.Partition, r.Offset)
		if p, seen := partitionOf[user]; seen && p != r.Partition {
			return fmt.Errorf("key %s went to partitions %d and %d", user, p, r.Partition)
		}
		partitionOf[user] = r.Partition
		count[user]++
	}

	fmt.Fprintln(w, "\nthe same key always goes to the same partition:")
	keys := make([]string, 0, len(partitionOf))
	for user := range partitionOf {
		keys = append(keys, user)
	}
	sort.Strings(keys)
	for _, user := range keys {
		fmt.Fprintf(w, "  key=%-5s -> partition %d (%d records)\n", user, partitionOf[user], count[user])
	}
	return nil
}

// consume reads the topic from the start of each partition with a plain
// consumer (no group: it reads every partition, commits nothing) and
// stops once it has read up to each partition's end offset as it was
// when it started.
func consume(ctx context.Context, seeds []string, adm *kadm.Client, w io.Writer) error {
	ends, err := adm.ListEndOffsets(ctx, topic)
	if err != nil {
		return err
	}
	if err := ends.Error(); err != nil {
		return err
	}
	// remaining is how many records each partition has left to read.
	remaining := map[int32]int64{}
	ends.Each(func(o kadm.ListedOffset) {
		if o.Offset > 0 {
			remaining[o.Partition] = o.Offset
		}
	})

	cl, err := kgo.NewClient(kgo.SeedBrokers(seeds...),
		kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		return err
	}
	defer cl.Close()

	fmt.Fprintf(w, "\nconsuming %q from the start (order is kept within a partition, not across):\n", topic)
	read := map[int32]int{}
	for len(remaining) > 0 {
		fetches := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := fetches.Err(); err != nil {
			return fmt.Errorf("consume: %w", err)
		}
		fetches.EachRecord(func(r *kgo.Record) {
			fmt.Fprintf(w, "  consumed partition %d offset %d key=%-5s value=%s\n", r.Partition, r.Offset, r.Key, r.Value)
			read[r.Partition]++
			if r.Offset+1 >= remaining[r.Partition] {
				delete(remaining, r.Partition)
			}
		})
	}

	total := 0
	var per []string
	ends.Each(func(o kadm.ListedOffset) {
		total += read[o.Partition]
		per = append(per, fmt.Sprintf("partition %d: %d", o.Partition, read[o.Partition]))
	})
	sort.Strings(per)
	fmt.Fprintf(w, "\nread %d records (%s)\n", total, strings.Join(per, ", "))
	return nil
}
