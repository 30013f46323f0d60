package streams

import (
	"context"
	"errors"
	"fmt"
	"sort"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
)

// startLatest gives the partitions of sources with the Latest reset policy
// that the group never committed a committed offset at their current end,
// so the group starts there; every other partition without one starts at
// the beginning (the consumer's reset policy). Kafka's consumers have one
// reset policy per consumer, Kafka Streams one per source: this is how a
// source gets its own. It commits only while the group is empty (a group
// with members has committed what it read, or will); a group whose members
// are joining at the same time may start some partitions at the beginning.
func startLatest(ctx context.Context, adm *kadm.Client, topo *Topology, group string) error {
	var topics []string
	for topic, n := range topo.topics {
		if n.reset == Latest && !n.internal {
			topics = append(topics, topic)
		}
	}
	if len(topics) == 0 {
		return nil
	}
	sort.Strings(topics)
	committed, err := adm.FetchOffsets(ctx, group)
	if err != nil && !errors.Is(err, kerr.GroupIDNotFound) {
		return fmt.Errorf("streams: committed offsets of %s: %w", group, err)
	}
	ends, err := adm.ListEndOffsets(ctx, topics...)
	if err != nil {
		return fmt.Errorf("streams: end offsets of %v: %w", topics, err)
	}
	start := kadm.Offsets{}
	ends.Each(func(o kadm.ListedOffset) {
		if o.Err != nil {
			return
		}
		if _, ok := committed.Lookup(o.Topic, o.Partition); !ok {
			start.AddOffset(o.Topic, o.Partition, o.Offset, -1)
		}
	})
	if len(start) == 0 {
		return nil
	}
	resp, err := adm.CommitOffsets(ctx, group, start)
	if err == nil {
		err = resp.Error()
	}
	switch {
	case errors.Is(err, kerr.UnknownMemberID), errors.Is(err, kerr.IllegalGeneration), errors.Is(err, kerr.RebalanceInProgress):
		return nil // the group has members: they decide where it is
	case err != nil:
		return fmt.Errorf("streams: start %v at their end: %w", topics, err)
	}
	return nil
}
