// Package crash kills a broker process with SIGKILL while producers write
// and consumer groups commit, and checks that nothing acknowledged is lost
// or duplicated: records, groups and committed offsets.
package crash

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/runnel-io/runnel/broker/brokertest"
	"github.com/runnel-io/runnel/internal/groupmember"
)

func TestMain(m *testing.M) {
	// The live member of group_test.go runs in a child process: this binary.
	groupmember.MainIfChild()
	brokertest.Main(m)
}

// broker is `runnel broker` as a child process (one node of
// brokertest.Processes) with eight partitions per topic and 1 MiB
// segments. Its address and data directory stay the same across restarts.
type broker struct {
	*brokertest.Processes
	addr string // Kafka listener
	dir  string // log.dirs
}

// startBroker starts a broker on a fresh data directory; it is killed
// when the test ends.
func startBroker(t *testing.T) *broker {
	t.Helper()
	ps := brokertest.StartProcesses(t, brokertest.ProcessOptions{
		Binary:   brokertest.BuildRunnel(t),
		Settings: map[string]string{"num.partitions": "8", "log.segment.bytes": "1048576"},
	})
	return &broker{Processes: ps, addr: ps.Node(1).Addr, dir: ps.Node(1).Dir}
}

// kill sends the broker SIGKILL and waits until it is gone.
func (b *broker) kill() { b.Kill(1) }

// restart starts the broker again on its data directory and address.
func (b *broker) restart() { b.Restart(1) }

const (
	topic       = "crash"
	partitions  = 8
	producers   = 4
	killAfter   = 20000 // acknowledged records before the kill
	afterwards  = 1000  // records produced after the restart
	valueFormat = "p%d-%09d"
)

func TestSIGKILLKeepsAcknowledgedWrites(t *testing.T) {
	b := startBroker(t)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()

	adm := newAdmin(t, b.addr)
	if _, err := adm.CreateTopic(ctx, partitions, 1, nil, topic); err != nil {
		t.Fatal(err)
	}
	adm.Close()

	// Producers write numbered values; acked[p] collects what the broker
	// acknowledged.
	var acked [producers]sync.Map
	var nAcked atomic.Int64
	killed := make(chan struct{})
	// Producers block in Produce once their buffer is full and the broker
	// is gone; cancelling their context at the kill releases them.
	pctx, pcancel := context.WithCancel(ctx)
	defer pcancel()
	var wg sync.WaitGroup
	for p := range producers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cl, err := kgo.NewClient(
				kgo.SeedBrokers(b.addr),
				kgo.DefaultProduceTopic(topic),
				kgo.RequiredAcks(kgo.AllISRAcks()),
				kgo.RecordRetries(3),
				kgo.ProduceRequestTimeout(5*time.Second),
			)
			if err != nil {
				t.Error(err)
				return
			}
			defer cl.Close()
			for i := 0; ; i++ {
				select {
				case <-killed:
					return
				default:
				}
				v := fmt.Sprintf(valueFormat, p, i)
				r := &kgo.Record{Key: []byte(strconv.Itoa(i % 64)), Value: []byte(v)}
				cl.Produce(pctx, r, func(r *kgo.Record, err error) {
					if err == nil {
						acked[p].Store(string(r.Value), r.Partition)
						nAcked.Add(1)
					}
				})
			}
		}()
	}
	for nAcked.Load() < killAfter {
		select {
		case <-ctx.Done():
			t.Fatalf("only %d records acknowledged before the deadline", nAcked.Load())
		case <-time.After(10 * time.Millisecond):
		}
	}
	b.kill()
	close(killed)
	pcancel()
	wg.Wait()
	total := 0
	for p := range producers {
		acked[p].Range(func(_, _ any) bool { total++; return true })
	}
	t.Logf("killed the broker after %d acknowledged records", total)

	b.restart()
	got := consumeAll(t, ctx, b.addr)

	seen := map[string]int32{}
	for part, values := range got {
		last := make(map[int]int, producers)
		for _, v := range values {
			if prev, dup := seen[v]; dup {
				t.Fatalf("value %s stored twice (partitions %d and %d)", v, prev, part)
			}
			seen[v] = part
			var p, i int
			if _, err := fmt.Sscanf(v, valueFormat, &p, &i); err != nil {
				t.Fatalf("unexpected value %q", v)
			}
			if prev, ok := last[p]; ok && i <= prev {
				t.Fatalf("partition %d: producer %d's record %d after %d", part, p, i, prev)
			}
			last[p] = i
		}
	}
	for p := range producers {
		acked[p].Range(func(k, v any) bool {
			part, ok := seen[k.(string)]
			if !ok {
				t.Errorf("acknowledged record %s is missing after the crash", k)
				return false
			}
			if part != v.(int32) {
				t.Errorf("record %s acknowledged on partition %d but found on %d", k, v, part)
			}
			return true
		})
	}

	// Writes continue after the restart.
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.addr), kgo.DefaultProduceTopic(topic), kgo.RequiredAcks(kgo.AllISRAcks()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	var rs []*kgo.Record
	for i := range afterwards {
		rs = append(rs, &kgo.Record{Value: []byte(fmt.Sprintf("after-%d", i))})
	}
	if err := cl.ProduceSync(ctx, rs...).FirstErr(); err != nil {
		t.Fatalf("produce after restart: %v", err)
	}
	n := 0
	for _, values := range consumeAll(t, ctx, b.addr) {
		for _, v := range values {
			if strings.HasPrefix(v, "after-") {
				n++
			}
		}
	}
	if n != afterwards {
		t.Fatalf("read %d records written after the restart, want %d", n, afterwards)
	}
}

func newAdmin(t *testing.T, addr string) *kadm.Client {
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		t.Fatal(err)
	}
	return kadm.NewClient(cl)
}

// consumeAll reads every partition of the crash topic from the start to
// its current end.
func consumeAll(t *testing.T, ctx context.Context, addr string) map[int32][]string {
	t.Helper()
	return consumeAllTopic(t, ctx, addr, topic)
}

// consumeAllTopic reads every partition from the start to its current end.
func consumeAllTopic(t *testing.T, ctx context.Context, addr, topic string) map[int32][]string {
	t.Helper()
	adm := newAdmin(t, addr)
	defer adm.Close()
	ends, err := adm.ListEndOffsets(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	want := map[int32]int64{}
	ends.Each(func(o kadm.ListedOffset) {
		if o.Err != nil {
			t.Fatalf("end offset of partition %d: %v", o.Partition, o.Err)
		}
		if o.Offset > 0 {
			want[o.Partition] = o.Offset
		}
	})
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	got := map[int32][]string{}
	next := map[int32]int64{}
	for len(want) > 0 {
		fs := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			t.Fatalf("consuming: %v (still waiting for %v)", err, want)
		}
		fs.EachError(func(_ string, p int32, err error) { t.Fatalf("fetch partition %d: %v", p, err) })
		fs.EachRecord(func(r *kgo.Record) {
			if r.Offset != next[r.Partition] {
				t.Fatalf("partition %d: offset %d after %d", r.Partition, r.Offset, next[r.Partition]-1)
			}
			next[r.Partition] = r.Offset + 1
			got[r.Partition] = append(got[r.Partition], string(r.Value))
			if end, ok := want[r.Partition]; ok && r.Offset+1 >= end {
				delete(want, r.Partition)
			}
		})
	}
	return got
}
