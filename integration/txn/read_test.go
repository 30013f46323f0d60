package txn

import (
	"context"
	"encoding/binary"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"sync"

	"github.com/twmb/franz-go/pkg/kgo"
)

// Input values are valuePrefix and the record's number, 0 to N-1, with
// valueDigits digits.
const (
	valuePrefix = "in-"
	valueDigits = 9
)

func value(i int) []byte {
	return fmt.Appendf(nil, "%s%0*d", valuePrefix, valueDigits, i)
}

// number is the inverse of value: -1 for a value it did not make.
func number(v []byte) int {
	if len(v) != len(valuePrefix)+valueDigits || string(v[:len(valuePrefix)]) != valuePrefix {
		return -1
	}
	i, err := strconv.Atoi(string(v[len(valuePrefix):]))
	if err != nil || i < 0 {
		return -1
	}
	return i
}

// fill writes values 0..n-1 to topic with an idempotent acks=all
// producer, spread over its partitions, in record batches of at most
// batchBytes.
func fill(ctx context.Context, seeds []string, topic string, n int, batchBytes int32) error {
	cl, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.DefaultProduceTopic(topic),
		kgo.ClientID("eos-fill"), kgo.MaxBufferedRecords(100_000), kgo.ProducerBatchMaxBytes(batchBytes))
	if err != nil {
		return err
	}
	defer cl.Close()
	var mu sync.Mutex
	var first error
	failed := 0
	for i := range n {
		cl.Produce(ctx, &kgo.Record{Value: value(i)}, func(_ *kgo.Record, err error) {
			if err != nil {
				mu.Lock()
				failed++
				if first == nil {
					first = err
				}
				mu.Unlock()
			}
		})
	}
	if err := cl.Flush(ctx); err != nil {
		return fmt.Errorf("fill %s: %w", topic, err)
	}
	if first != nil {
		return fmt.Errorf("fill %s: %d of %d records failed, the first with %w", topic, failed, n, first)
	}
	return nil
}

// rec is one record of a topic as a reader saw it.
type rec struct {
	Offset     int64
	ProducerID int64
	Number     int  // number(value); -1 for a value the test did not write
	Txn        bool // written in a transaction
	Control    int8 // notControl, or the control record's type: abortMarker, commitMarker
}

// Control record types (the key of a control record: version, type).
const (
	notControl   = -1
	abortMarker  = 0
	commitMarker = 1
	badMarker    = 99 // a control record whose key is too short
)

// readTopic reads every partition of topic from offset 0 to ends, with
// read_committed or read_uncommitted, control records included, and
// returns each partition's records in offset order.
func readTopic(ctx context.Context, seeds []string, topic string, readCommitted bool, ends offsets) (map[int32][]rec, error) {
	level := kgo.ReadUncommitted()
	if readCommitted {
		level = kgo.ReadCommitted()
	}
	from := map[int32]kgo.Offset{}
	left := offsets{}
	for p, end := range ends {
		if end > 0 {
			from[p] = kgo.NewOffset().At(0)
			left[p] = end
		}
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.ClientID("eos-read"),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: from}),
		kgo.FetchIsolationLevel(level), kgo.KeepControlRecords())
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	out := map[int32][]rec{}
	for len(left) > 0 {
		fs := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("read %s: %w; partitions not read to their end offsets %v: %v", topic, err, ends, slices.Sorted(maps.Keys(left)))
		}
		var ferr error
		fs.EachError(func(t string, p int32, err error) {
			ferr = fmt.Errorf("read %s: fetch %s/%d: %w", topic, t, p, err)
		})
		if ferr != nil {
			return nil, ferr
		}
		fs.EachRecord(func(r *kgo.Record) {
			x := rec{Offset: r.Offset, ProducerID: r.ProducerID, Number: number(r.Value),
				Txn: r.Attrs.IsTransactional(), Control: notControl}
			if r.Attrs.IsControl() {
				x.Number, x.Control = -1, badMarker
				if len(r.Key) >= 4 {
					x.Control = int8(binary.BigEndian.Uint16(r.Key[2:4]))
				}
			}
			out[r.Partition] = append(out[r.Partition], x)
			if end, ok := left[r.Partition]; ok && r.Offset+1 >= end {
				delete(left, r.Partition)
			}
		})
	}
	for p, rs := range out {
		end := ends[p]
		i := slices.IndexFunc(rs, func(x rec) bool { return x.Offset >= end })
		if i >= 0 {
			out[p] = rs[:i] // written after ends were taken
		}
	}
	return out, nil
}
