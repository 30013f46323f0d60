package assign_test

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"go.uber.org/goleak"

	"github.com/runnel-io/runnel/streams/internal/assign"
)

// These tests run real kgo consumers with the assignor against kfake: two
// co-partitioned topics of 6 partitions, one subtopology, 6 tasks.

const partitions = 6

var sources = []string{"left", "right"}

// tracker records, from kgo's callbacks, who owns each partition, and
// every time a partition is given to a member while another still owns it.
type tracker struct {
	mu         sync.Mutex
	owner      map[string]string            // "topic/partition" -> member
	last       map[string]assign.Assignment // member -> last OnAssign
	first      map[string]assign.Assignment // member -> first OnAssign
	violations []string
	changed    chan struct{} // closed and replaced on every change
}

func newTracker() *tracker {
	return &tracker{owner: map[string]string{}, last: map[string]assign.Assignment{}, first: map[string]assign.Assignment{}, changed: make(chan struct{})}
}

func (tr *tracker) notifyLocked() {
	close(tr.changed)
	tr.changed = make(chan struct{})
}

func (tr *tracker) assigned(id string, parts map[string][]int32) {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	for topic, ps := range parts {
		for _, p := range ps {
			k := fmt.Sprintf("%s/%d", topic, p)
			if o, ok := tr.owner[k]; ok && o != id {
				tr.violations = append(tr.violations, fmt.Sprintf("%s given to %s while %s owns it", k, id, o))
			}
			tr.owner[k] = id
		}
	}
	tr.notifyLocked()
}

func (tr *tracker) revoked(id string, parts map[string][]int32) {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	for topic, ps := range parts {
		for _, p := range ps {
			if k := fmt.Sprintf("%s/%d", topic, p); tr.owner[k] == id {
				delete(tr.owner, k)
			}
		}
	}
	tr.notifyLocked()
}

func (tr *tracker) onAssign(id string, a assign.Assignment) {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	tr.last[id] = a
	if _, ok := tr.first[id]; !ok {
		tr.first[id] = a
	}
	tr.notifyLocked()
}

// waitSettled waits until exactly the members ids run all tasks, each the
// number given, and own exactly their tasks' partitions of both topics.
func (tr *tracker) waitSettled(t *testing.T, ids []string, perMember int) {
	t.Helper()
	deadline := time.NewTimer(30 * time.Second)
	defer deadline.Stop()
	for {
		tr.mu.Lock()
		why := tr.unsettledLocked(ids, perMember)
		ch := tr.changed
		tr.mu.Unlock()
		if why == "" {
			return
		}
		select {
		case <-ch:
		case <-deadline.C:
			t.Fatalf("group did not settle on %v with %d tasks each: %s", ids, perMember, why)
		}
	}
}

func (tr *tracker) unsettledLocked(ids []string, perMember int) string {
	want := map[string]string{}
	tasks := map[assign.Task]string{}
	for _, id := range ids {
		a := tr.last[id]
		if a.Error != "" {
			return id + ": " + a.Error
		}
		if len(a.Active) != perMember {
			return fmt.Sprintf("%s runs %v", id, a.Active)
		}
		for _, task := range a.Active {
			if o, ok := tasks[task]; ok {
				return fmt.Sprintf("%v on %s and %s", task, o, id)
			}
			tasks[task] = id
			for _, topic := range sources {
				want[fmt.Sprintf("%s/%d", topic, task.Partition)] = id
			}
		}
	}
	if len(tasks) != partitions {
		return fmt.Sprintf("%d tasks run", len(tasks))
	}
	if !maps.Equal(tr.owner, want) {
		return fmt.Sprintf("owned %v, want %v", tr.owner, want)
	}
	for _, id := range ids {
		if got := tr.last[id].Hosts; len(got) != len(ids) {
			return fmt.Sprintf("%s sees hosts %v", id, got)
		}
	}
	return ""
}

type consumer struct {
	cl   *kgo.Client
	done chan struct{}
}

// close leaves the group (revoking its partitions) and waits for the poll
// loop to end.
func (c *consumer) close() {
	c.cl.Close()
	<-c.done
}

func startConsumer(t *testing.T, addrs []string, tr *tracker, id string) *consumer {
	t.Helper()
	b := assign.New(assign.Config{
		Subtopologies: [][]string{sources},
		Endpoint:      id + ":8080",
		OnAssign:      func(a assign.Assignment) { tr.onAssign(id, a) },
	})
	cl, err := kgo.NewClient(
		kgo.SeedBrokers(addrs...),
		kgo.ConsumerGroup("app"),
		kgo.ConsumeTopics(sources...),
		kgo.Balancers(b),
		kgo.HeartbeatInterval(100*time.Millisecond),
		kgo.OnPartitionsAssigned(func(_ context.Context, _ *kgo.Client, m map[string][]int32) { tr.assigned(id, m) }),
		kgo.OnPartitionsRevoked(func(_ context.Context, _ *kgo.Client, m map[string][]int32) { tr.revoked(id, m) }),
		kgo.OnPartitionsLost(func(_ context.Context, _ *kgo.Client, m map[string][]int32) { tr.revoked(id, m) }),
	)
	if err != nil {
		t.Fatal(err)
	}
	c := &consumer{cl: cl, done: make(chan struct{})}
	go func() {
		defer close(c.done)
		for {
			if fs := cl.PollFetches(context.Background()); fs.IsClientClosed() {
				return
			}
		}
	}()
	return c
}

func newCluster(t *testing.T) []string {
	t.Helper()
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(partitions, sources...))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c.ListenAddrs()
}

func TestKfakeGroupCoPartitionedAndLeave(t *testing.T) {
	addrs := newCluster(t)
	tr := newTracker()
	ids := []string{"m1", "m2", "m3"}
	var cs []*consumer
	for _, id := range ids {
		c := startConsumer(t, addrs, tr, id)
		cs = append(cs, c)
		defer c.close()
	}
	tr.waitSettled(t, ids, 2)
	cs[2].cl.Close()
	<-cs[2].done
	tr.waitSettled(t, ids[:2], 3)
	checkNoOverlap(t, tr)
}

func TestKfakeJoinNeverOverlaps(t *testing.T) {
	addrs := newCluster(t)
	tr := newTracker()
	for _, id := range []string{"m1", "m2"} {
		defer startConsumer(t, addrs, tr, id).close()
	}
	tr.waitSettled(t, []string{"m1", "m2"}, 3)
	defer startConsumer(t, addrs, tr, "m3").close()
	tr.waitSettled(t, []string{"m1", "m2", "m3"}, 2)
	checkNoOverlap(t, tr)
	// Every task was owned when m3 joined: its first assignment is empty,
	// the tasks come in the round after m1 and m2 revoked them.
	tr.mu.Lock()
	defer tr.mu.Unlock()
	if first := tr.first["m3"]; len(first.Active) != 0 {
		t.Fatalf("m3's first assignment %v holds tasks m1 or m2 owned", first.Active)
	}
}

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func checkNoOverlap(t *testing.T, tr *tracker) {
	t.Helper()
	tr.mu.Lock()
	defer tr.mu.Unlock()
	if len(tr.violations) > 0 {
		t.Fatalf("partitions owned twice: %v", slices.Compact(tr.violations))
	}
}
