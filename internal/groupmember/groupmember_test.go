package groupmember

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
)

func TestMain(m *testing.M) {
	MainIfChild()
	os.Exit(m.Run())
}

// TestMembers checks the helper itself, against franz-go's kfake as the
// reference broker (the tests that use the helper run against Runnel): an
// in-process member and a child-process member split a topic, report every
// record once with acknowledged commits, and after the child's SIGKILL the
// in-process member owns everything and reads on from the child's commits.
func TestMembers(t *testing.T) {
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(4, "t"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	addr := c.ListenAddrs()[0]
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	produce := func(n int) {
		cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.DefaultProduceTopic("t"),
			kgo.RecordPartitioner(kgo.RoundRobinPartitioner()))
		if err != nil {
			t.Fatal(err)
		}
		defer cl.Close()
		for i := range n {
			if err := cl.ProduceSync(ctx, &kgo.Record{Value: []byte(fmt.Sprint(i))}).FirstErr(); err != nil {
				t.Fatal(err)
			}
		}
	}
	board := NewBoard()
	cfg := Config{Seeds: []string{addr}, Group: "g", Topic: "t", Balancer: "range",
		SessionTimeout: 6 * time.Second, HeartbeatInterval: time.Second}
	cfg.Name = "in"
	in := Start(cfg, board)
	defer in.Stop(context.Background())
	cfg.Name = "child"
	child, err := StartProcess(cfg, board)
	if err != nil {
		t.Fatal(err)
	}
	total := func() int { return len(in.Records()) + len(child.Records()) }
	// Produce only once both own their partitions, so that each member
	// reads (and the child commits) its share.
	if err := board.Wait(ctx, "two members of two partitions each", func() bool {
		return len(in.Owned()) == 2 && len(child.Owned()) == 2
	}); err != nil {
		t.Fatalf("%v: own %v and %v", err, in.Owned(), child.Owned())
	}
	produce(40)
	if err := board.Wait(ctx, "40 records, 20 for each member", func() bool {
		return len(in.Records()) == 20 && len(child.Records()) == 20
	}); err != nil {
		t.Fatalf("%v: own %v and %v, %d records", err, in.Owned(), child.Owned(), total())
	}
	if err := board.Wait(ctx, "the child's commits", func() bool {
		n := int64(0)
		for _, o := range child.Committed() {
			n += o
		}
		return n == int64(len(child.Records()))
	}); err != nil {
		t.Fatal(err)
	}
	child.Kill()
	if child.Running() || !child.Killed() {
		t.Fatal("a killed child still runs")
	}
	produce(40)
	if err := board.Wait(ctx, "the in-process member to own all and read the rest", func() bool {
		return len(in.Owned()) == 4 && total() == 80
	}); err != nil {
		t.Fatalf("%v: owns %v, %d records", err, in.Owned(), total())
	}
	seen := map[string]bool{}
	for _, m := range []*Member{in, child} {
		for _, r := range m.Records() {
			k := fmt.Sprintf("%d/%d", r.Partition, r.Offset)
			if seen[k] {
				t.Errorf("%s reported twice", k)
			}
			seen[k] = true
		}
		if f := m.Failures(); len(f) > 0 {
			t.Errorf("%s: %v", m.Name, f)
		}
	}
	if err := in.Stop(ctx); err != nil {
		t.Fatal(err)
	}
}
