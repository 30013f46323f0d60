package main

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// record is what the output says of one record.
type record struct {
	key, value        string
	partition, offset int
}

var (
	producedRE = regexp.MustCompile(`^produced key=(\S+) +value=(\S+) +-> partition (\d+) offset (\d+)$`)
	consumedRE = regexp.MustCompile(`^consumed partition (\d+) offset (\d+) key=(\S+) +value=(\S+)$`)
	keyRE      = regexp.MustCompile(`^key=(\S+) +-> partition (\d+) \((\d+) records\)$`)
)

func atoi(t *testing.T, s string) int {
	t.Helper()
	n, err := strconv.Atoi(s)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// TestBasics runs the example against its embedded broker and checks what
// it prints: every record acknowledged at the next offset of its key's
// partition, and read back once, in offset order within its partition.
func TestBasics(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	const n = 12
	var out strings.Builder
	if err := run(ctx, "", n, &out); err != nil {
		t.Fatal(err)
	}
	t.Log("\n" + out.String())

	var produced, consumed []record
	keyPartition := map[string]int{}
	keyCount := map[string]int{}
	for _, line := range strings.Split(out.String(), "\n") {
		line = strings.TrimSpace(line)
		if m := producedRE.FindStringSubmatch(line); m != nil {
			produced = append(produced, record{m[1], m[2], atoi(t, m[3]), atoi(t, m[4])})
		}
		if m := consumedRE.FindStringSubmatch(line); m != nil {
			consumed = append(consumed, record{m[3], m[4], atoi(t, m[1]), atoi(t, m[2])})
		}
		if m := keyRE.FindStringSubmatch(line); m != nil {
			keyPartition[m[1]] = atoi(t, m[2])
			keyCount[m[1]] = atoi(t, m[3])
		}
	}
	if !strings.HasPrefix(out.String(), `created topic "basics" with 3 partitions`) {
		t.Errorf("output does not start with the topic's creation:\n%s", out.String())
	}

	// Produced: in order, each at the next offset of its partition, and
	// every record of a key in that key's partition.
	if len(produced) != n {
		t.Fatalf("%d records produced, want %d", len(produced), n)
	}
	next := map[int]int{}
	for i, r := range produced {
		if want := users[i%len(users)]; r.key != want || r.value != fmt.Sprintf("%s-event-%d", want, i) {
			t.Errorf("record %d is %s=%s, want key %s", i, r.key, r.value, want)
		}
		if r.partition < 0 || r.partition >= partitions {
			t.Errorf("record %d in partition %d of a topic of %d", i, r.partition, partitions)
		}
		if r.offset != next[r.partition] {
			t.Errorf("record %d at offset %d of partition %d, want %d", i, r.offset, r.partition, next[r.partition])
		}
		next[r.partition] = r.offset + 1
		if p, ok := keyPartition[r.key]; !ok || p != r.partition {
			t.Errorf("record %d (key %s) in partition %d; the key summary says %d (listed: %v)", i, r.key, r.partition, p, ok)
		}
	}
	if len(keyPartition) != len(users) {
		t.Errorf("the key summary lists %d keys, want %d", len(keyPartition), len(users))
	}
	for _, u := range users {
		if keyCount[u] != n/len(users) {
			t.Errorf("key %s: summary says %d records, want %d", u, keyCount[u], n/len(users))
		}
	}

	// Consumed: every produced record once, in offset order within each
	// partition.
	lastOffset := map[int]int{}
	for _, r := range consumed {
		if last, ok := lastOffset[r.partition]; ok && r.offset <= last {
			t.Errorf("partition %d: offset %d read after %d", r.partition, r.offset, last)
		}
		lastOffset[r.partition] = r.offset
	}
	sortRecords := func(rs []record) []record {
		rs = slices.Clone(rs)
		slices.SortFunc(rs, func(a, b record) int {
			if a.partition != b.partition {
				return a.partition - b.partition
			}
			return a.offset - b.offset
		})
		return rs
	}
	if got, want := sortRecords(consumed), sortRecords(produced); !slices.Equal(got, want) {
		t.Errorf("consumed:\n%v\nwant the records produced:\n%v", got, want)
	}
	if !strings.Contains(out.String(), fmt.Sprintf("\nread %d records (partition 0: %d, partition 1: %d, partition 2: %d)\n", n, next[0], next[1], next[2])) {
		t.Errorf("output lacks the right count of records read:\n%s", out.String())
	}
}
