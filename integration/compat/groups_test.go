package compat

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// groupPartitions is the partition count of every consumer-group test topic:
// enough for two members to own two partitions each.
const groupPartitions = 4

// produceRound writes perPart records to each partition of topic with
// franz-go (record i of the round goes to partition i%partitions) and returns
// them as the broker acknowledged them, ordered by partition, then offset.
// round names the records so that each round's records are told apart.
func produceRound(t *testing.T, addr, topic string, partitions int32, perPart int, round string) []record {
	t.Helper()
	cl, err := kgo.NewClient(
		kgo.SeedBrokers(addr),
		kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.RequiredAcks(kgo.AllISRAcks()),
	)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	base := time.Now().Add(-time.Hour).UnixMilli()
	n := int(partitions) * perPart
	krecs := make([]*kgo.Record, n)
	for i := range krecs {
		krecs[i] = toKgo(topic, record{
			Partition: int32(i) % partitions,
			Key:       fmt.Sprintf("%s-key-%d", round, i),
			Value:     fmt.Sprintf("%s value %d", round, i),
			Headers:   []header{{"round", round}},
			Timestamp: base + int64(i),
		})
	}
	if err := cl.ProduceSync(testContext(t, 30*time.Second), krecs...).FirstErr(); err != nil {
		t.Fatalf("produce round %s: %v", round, err)
	}
	out := make([]record, n)
	for i, r := range krecs {
		out[i] = fromKgo(r)
	}
	sortRecords(out)
	return out
}

// sortRecords orders recs by partition, then offset.
func sortRecords(recs []record) {
	slices.SortFunc(recs, func(a, b record) int {
		return cmp.Or(cmp.Compare(a.Partition, b.Partition), cmp.Compare(a.Offset, b.Offset))
	})
}

// assertConsumedOnce checks that a group consumed exactly want: every record
// once, none twice, none from elsewhere. got may be in any order across
// partitions, but within a partition it must be in offset order (each
// partition is consumed by one member at a time, in order).
func assertConsumedOnce(t *testing.T, who string, got, want []record) {
	t.Helper()
	last := map[int32]int64{}
	for _, r := range got {
		if prev, ok := last[r.Partition]; ok && r.Offset <= prev {
			t.Errorf("%s: partition %d: offset %d after %d (out of order or repeated)", who, r.Partition, r.Offset, prev)
		}
		last[r.Partition] = r.Offset
	}
	sorted := slices.Clone(got)
	sortRecords(sorted)
	assertRecords(t, who, sorted, want)
}

// resumeWithFranzGo reads round with a franz-go member that resumes from
// the commits another client (from) left, commits, and leaves the group.
func resumeWithFranzGo(t *testing.T, addr, group, topic, from string, round []record) {
	t.Helper()
	in := make(chan polled)
	m := newKgoMember(t, addr, group, topic, "franz-go")
	m.start(in)
	assertConsumedOnce(t, "franz-go resuming from "+from+"'s commits", collect(t, in, len(round))["franz-go"], round)
	m.commit(t)
	waitCommitted(t, addr, group, topic, endsOf(round))
	m.stop()
	m.cl.Close()
	waitGroupEmpty(t, addr, group)
}

// endsOf returns the offset after the last record of each partition in recs.
func endsOf(recs []record) map[int32]int64 {
	ends := map[int32]int64{}
	for _, r := range recs {
		ends[r.Partition] = max(ends[r.Partition], r.Offset+1)
	}
	return ends
}

// committed returns group's committed offsets for topic, by partition, read
// with kadm (OffsetFetch).
func committed(ctx context.Context, adm *kadm.Client, group, topic string) (map[int32]int64, error) {
	resps, err := adm.FetchOffsets(ctx, group)
	if err != nil {
		return nil, err
	}
	if err := resps.Error(); err != nil {
		return nil, err
	}
	out := map[int32]int64{}
	for p, o := range resps[topic] {
		if o.Err != nil {
			return nil, fmt.Errorf("partition %d: %w", p, o.Err)
		}
		out[p] = o.At
	}
	return out, nil
}

// waitCommitted waits until group's committed offsets for topic are exactly
// want, read by kadm: offsets a client we did not write committed, seen by
// another.
func waitCommitted(t *testing.T, addr, group, topic string, want map[int32]int64) {
	t.Helper()
	ctx := testContext(t, 30*time.Second)
	adm := newAdmin(t, addr)
	waitFor(t, ctx, fmt.Sprintf("group %s's commits %v on %s", group, want, topic), func() error {
		got, err := committed(ctx, adm, group, topic)
		if err != nil {
			return err
		}
		if !maps.Equal(got, want) {
			return fmt.Errorf("committed %v", got)
		}
		return nil
	})
}

// waitGroupEmpty waits until DescribeGroups shows group with no members, so
// that a client that left is out before the next one joins.
func waitGroupEmpty(t *testing.T, addr, group string) {
	t.Helper()
	ctx := testContext(t, 30*time.Second)
	adm := newAdmin(t, addr)
	waitFor(t, ctx, "group "+group+" empty", func() error {
		gs, err := adm.DescribeGroups(ctx, group)
		if err != nil {
			return err
		}
		g := gs[group]
		if g.Err != nil {
			return g.Err
		}
		if len(g.Members) != 0 || g.State != "Empty" {
			return fmt.Errorf("state %s with %d members", g.State, len(g.Members))
		}
		return nil
	})
}
