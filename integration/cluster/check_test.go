package cluster

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"slices"
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// history is everything a fault test saw of one topic.
type history struct {
	Acked        []ackedRecord  // acknowledged writes
	Reads        []readRecord   // what consumers read while the faults ran
	NonMonotonic []nonMonotonic // offsets that went backwards within a consumer session
	Final        []readRecord   // the topic read back from the start to the high watermark at the end
}

// Violation kinds.
const (
	lost       = "lost"       // acknowledged, not in the final read
	duplicated = "duplicated" // one value at two offsets
	divergent  = "divergent"  // one offset holding two values
	reordered  = "reordered"  // a producer's sequence going backwards within a partition
	backwards  = "backwards"  // a consumer's offsets not increasing within a session
)

type violation struct {
	Kind   string
	Detail string
}

func (v violation) String() string { return v.Kind + ": " + v.Detail }

// position is an offset of a partition.
type position struct {
	Partition int32
	Offset    int64
}

func (p position) String() string { return fmt.Sprintf("%d/%d", p.Partition, p.Offset) }

// check decides whether h is a correct history: every acknowledged record
// is in the final read; no value is at two positions and no position has
// two values, across acknowledgements, consumers' reads and the final read;
// each producer's values appear in sequence order within a partition; no
// consumer saw offsets go backwards within a session. It reads nothing;
// the violations come sorted by kind.
func check(h history) []violation {
	var vs []violation
	// valuesAt: position → value → who said so; positionsOf: value → positions.
	valuesAt := map[position]map[string][]string{}
	positionsOf := map[string]map[position]bool{}
	see := func(pos position, value, who string) {
		if valuesAt[pos] == nil {
			valuesAt[pos] = map[string][]string{}
		}
		if ws := valuesAt[pos][value]; !slices.Contains(ws, who) {
			valuesAt[pos][value] = append(ws, who)
		}
		if positionsOf[value] == nil {
			positionsOf[value] = map[position]bool{}
		}
		positionsOf[value][pos] = true
	}
	for _, a := range h.Acked {
		see(position{a.Partition, a.Offset}, a.Value, "ack")
	}
	for _, r := range h.Reads {
		see(position{r.Partition, r.Offset}, r.Value, r.Consumer)
	}
	final := map[string]bool{}
	for _, r := range h.Final {
		see(position{r.Partition, r.Offset}, r.Value, "final read")
		final[r.Value] = true
	}

	for _, a := range h.Acked {
		if !final[a.Value] {
			vs = append(vs, violation{lost, fmt.Sprintf("%q acknowledged at %v", a.Value, position{a.Partition, a.Offset})})
		}
	}
	for _, v := range slices.Sorted(maps.Keys(positionsOf)) {
		if ps := positionsOf[v]; len(ps) > 1 {
			vs = append(vs, violation{duplicated, fmt.Sprintf("%q at %v", v, slices.SortedFunc(maps.Keys(ps), comparePositions))})
		}
	}
	for _, pos := range slices.SortedFunc(maps.Keys(valuesAt), comparePositions) {
		if vals := valuesAt[pos]; len(vals) > 1 {
			vs = append(vs, violation{divergent, fmt.Sprintf("%v holds %v", pos, vals)})
		}
	}
	vs = append(vs, checkProducerOrder(h.Final)...)
	for _, n := range h.NonMonotonic {
		vs = append(vs, violation{backwards, n.String()})
	}
	slices.SortStableFunc(vs, func(a, b violation) int { return cmp.Compare(a.Kind, b.Kind) })
	return vs
}

// checkProducerOrder: within a partition, each producer's sequence numbers
// increase with the offset (an idempotent producer keeps its order).
func checkProducerOrder(final []readRecord) []violation {
	var vs []violation
	type key struct {
		partition int32
		producer  int
	}
	last := map[key]readRecord{}
	rs := slices.Clone(final)
	slices.SortFunc(rs, func(a, b readRecord) int {
		return comparePositions(position{a.Partition, a.Offset}, position{b.Partition, b.Offset})
	})
	for _, r := range rs {
		p, seq, ok := decodeValue(r.Value)
		if !ok {
			continue
		}
		k := key{r.Partition, p}
		if prev, ok := last[k]; ok {
			if _, prevSeq, _ := decodeValue(prev.Value); seq < prevSeq { // equal: duplicated
				vs = append(vs, violation{reordered, fmt.Sprintf("partition %d: %q at offset %d after %q at %d",
					r.Partition, r.Value, r.Offset, prev.Value, prev.Offset)})
			}
		}
		last[k] = r
	}
	return vs
}

func comparePositions(a, b position) int {
	return cmp.Or(cmp.Compare(a.Partition, b.Partition), cmp.Compare(a.Offset, b.Offset))
}

// maxViolationsShown per kind in requireCorrect's report.
const maxViolationsShown = 10

// requireCorrect fails the test with h's violations, a few of each kind.
func requireCorrect(t testing.TB, h history) {
	t.Helper()
	vs := check(h)
	if len(vs) == 0 {
		return
	}
	count := map[string]int{}
	for _, v := range vs {
		count[v.Kind]++
		if count[v.Kind] <= maxViolationsShown {
			t.Errorf("%v", v)
		}
	}
	t.Fatalf("history check failed: %v (%d acknowledged, %d consumer reads, %d in the final read)",
		count, len(h.Acked), len(h.Reads), len(h.Final))
}

// readBack reads every partition of topic with a fresh consumer
// (read_uncommitted) from its log start offset to its high watermark as
// ListOffsets gives them now. The final read reports the offsets that
// went backwards as a consumer would. Its clients are made with opts
// besides their own.
func readBack(ctx context.Context, seeds []string, topic string, opts ...kgo.Opt) ([]readRecord, []nonMonotonic, error) {
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(seeds...), kgo.ClientID("final-read")}, opts...)...)
	if err != nil {
		return nil, nil, err
	}
	adm := kadm.NewClient(cl)
	starts, err := adm.ListStartOffsets(ctx, topic)
	if err == nil {
		err = starts.Error()
	}
	var ends kadm.ListedOffsets
	if err == nil {
		ends, err = adm.ListEndOffsets(ctx, topic)
	}
	if err == nil {
		err = ends.Error()
	}
	cl.Close()
	if err != nil {
		return nil, nil, fmt.Errorf("read back %s: list offsets: %w", topic, err)
	}
	from := map[int32]kgo.Offset{}
	want := map[int32]int64{}
	starts.Each(func(o kadm.ListedOffset) {
		if end, _ := ends.Lookup(topic, o.Partition); end.Offset > o.Offset {
			from[o.Partition] = kgo.NewOffset().At(o.Offset)
			want[o.Partition] = end.Offset
		}
	})
	if len(from) == 0 {
		return nil, nil, nil
	}
	cs := newConsumerSet(ctx, opts...)
	if err := cs.assign("final read", seeds, topic, from); err != nil {
		cs.Stop()
		return nil, nil, err
	}
	err = waitUntil(ctx, "the final read to reach the high watermarks", func() bool { return cs.caughtUp(want) })
	cs.Stop()
	if err != nil {
		return nil, nil, fmt.Errorf("read back %s: %w (high watermarks %v)", topic, err, want)
	}
	// Past the high watermark taken at the start there may be later writes.
	var rs []readRecord
	for _, r := range cs.Reads() {
		if r.Offset < want[r.Partition] {
			rs = append(rs, r)
		}
	}
	return rs, cs.NonMonotonic(), nil
}
