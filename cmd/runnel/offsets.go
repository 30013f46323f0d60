package main

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// fromKind is where consume starts reading a partition.
type fromKind int

const (
	fromStart    fromKind = iota // the log start offset
	fromEnd                      // the end: only records produced from now on
	fromOffset                   // an absolute offset, clamped to [start, end]
	fromRelative                 // n records before the end, per partition
	fromTime                     // the first record at or after a time (unix ms)
)

// fromSpec is a parsed --from value.
type fromSpec struct {
	kind fromKind
	n    int64 // offset, count or unix milliseconds, by kind
}

const fromHelp = `beginning, end, an offset (42), -N (N records before the end of each partition), an RFC3339 time (2024-05-01T12:00:00Z) or @unix-ms (@1714564800000; kcat's s@unix-ms works too)`

// parseFrom parses --from. A bare number is always an offset, never a time:
// times are RFC3339 or carry an @ prefix.
func parseFrom(s string) (fromSpec, error) {
	switch strings.ToLower(s) {
	case "beginning", "earliest", "start", "oldest":
		return fromSpec{kind: fromStart}, nil
	case "end", "latest", "newest":
		return fromSpec{kind: fromEnd}, nil
	}
	if ms, ok := cutAnyPrefix(s, "@", "s@"); ok {
		n, err := strconv.ParseInt(ms, 10, 64)
		if err != nil || n < 0 {
			return fromSpec{}, fmt.Errorf("--from %q: want @ followed by unix milliseconds, e.g. @1714564800000", s)
		}
		return fromSpec{kind: fromTime, n: n}, nil
	}
	if n, err := strconv.ParseInt(s, 10, 64); err == nil {
		if n < 0 {
			return fromSpec{kind: fromRelative, n: -n}, nil
		}
		return fromSpec{kind: fromOffset, n: n}, nil
	}
	if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
		return fromSpec{kind: fromTime, n: t.UnixMilli()}, nil
	}
	return fromSpec{}, fmt.Errorf("--from %q: want %s", s, fromHelp)
}

func cutAnyPrefix(s string, prefixes ...string) (string, bool) {
	for _, p := range prefixes {
		if rest, ok := strings.CutPrefix(s, p); ok {
			return rest, true
		}
	}
	return s, false
}

// kgoOffset is the spec as a franz-go reset offset, for group consumers
// whose partitions have no committed offset yet.
func (f fromSpec) kgoOffset() kgo.Offset {
	switch f.kind {
	case fromEnd:
		return kgo.NewOffset().AtEnd()
	case fromOffset:
		return kgo.NewOffset().At(f.n)
	case fromRelative:
		return kgo.NewOffset().AtEnd().Relative(-f.n)
	case fromTime:
		return kgo.NewOffset().AfterMilli(f.n)
	}
	return kgo.NewOffset().AtStart()
}

// partitionRange is where reading a partition starts and where it ends for
// a consume that does not follow: the end offset when consume started (the
// high watermark, or the last stable offset for read_committed).
type partitionRange struct {
	start, end int64
}

// resolveRanges lists offsets for every partition in ps and resolves spec
// against them.
func resolveRanges(ctx context.Context, adm *kadm.Client, topic string, ps []int32, spec fromSpec, readCommitted bool) (map[int32]partitionRange, error) {
	starts, err := adm.ListStartOffsets(ctx, topic)
	if err != nil {
		return nil, err
	}
	listEnds := adm.ListEndOffsets
	if readCommitted {
		listEnds = adm.ListCommittedOffsets
	}
	ends, err := listEnds(ctx, topic)
	if err != nil {
		return nil, err
	}
	var atTime kadm.ListedOffsets
	if spec.kind == fromTime {
		if atTime, err = adm.ListOffsetsAfterMilli(ctx, spec.n, topic); err != nil {
			return nil, err
		}
	}
	out := make(map[int32]partitionRange, len(ps))
	for _, p := range ps {
		s, err := listedOffset(starts, topic, p)
		if err != nil {
			return nil, err
		}
		e, err := listedOffset(ends, topic, p)
		if err != nil {
			return nil, err
		}
		r := partitionRange{start: s, end: e}
		switch spec.kind {
		case fromEnd:
			r.start = e
		case fromOffset:
			r.start = min(max(spec.n, s), e)
		case fromRelative:
			r.start = max(e-spec.n, s)
		case fromTime:
			t, err := listedOffset(atTime, topic, p)
			if err != nil {
				return nil, err
			}
			if t < 0 { // no record at or after the time
				t = e
			}
			r.start = min(max(t, s), e)
		}
		out[p] = r
	}
	return out, nil
}

func listedOffset(l kadm.ListedOffsets, topic string, p int32) (int64, error) {
	o, ok := l.Lookup(topic, p)
	switch {
	case !ok:
		if _, missing := l.Lookup(topic, -1); missing {
			return 0, topicMissing(topic)
		}
		return 0, fmt.Errorf("the broker listed no offset for %s[%d]; try again", topic, p)
	case o.Err != nil:
		return 0, kafkaErr(fmt.Errorf("listing offsets of %s[%d]: %w", topic, p, o.Err), "")
	}
	return o.Offset, nil
}
