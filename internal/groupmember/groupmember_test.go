package groupmember

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
)

func TestMain(m *testing.M) {
	MainIfChild()
	os.Exit(m.Run())
}

// startKfake starts a one-broker kfake cluster with topics of four
// partitions for the test, and returns its address and the test's
// context, which ends after a minute.
func startKfake(t *testing.T, topics ...string) (string, context.Context) {
	t.Helper()
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(4, topics...))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	t.Cleanup(cancel)
	return c.ListenAddrs()[0], ctx
}

// TestMembers checks the helper itself, against franz-go's kfake as the
// reference broker (the tests that use the helper run against Runnel): an
// in-process member and a child-process member split a topic, report every
// record once with acknowledged commits, and after the child's SIGKILL the
// in-process member owns everything and reads on from the child's commits.
func TestMembers(t *testing.T) {
	addr, ctx := startKfake(t, "t")
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

// TestPipeline checks the pipeline stage (Config.Output) against kfake:
// an in-process stage and a child-process stage copy a topic; the child
// is SIGKILLed after its first transaction and started again with the
// same transactional id; the output, read committed, holds every input
// value exactly once and the group has committed the input's end offsets.
func TestPipeline(t *testing.T) {
	addr, ctx := startKfake(t, "in", "out")
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.DefaultProduceTopic("in"),
		kgo.RecordPartitioner(kgo.RoundRobinPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	produced := 0
	produce := func(n int) {
		var rs []*kgo.Record
		for range n {
			rs = append(rs, kgo.StringRecord(fmt.Sprint(produced)))
			produced++
		}
		if err := cl.ProduceSync(ctx, rs...).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}

	board := NewBoard()
	cfg := func(name string) Config {
		return Config{Name: name, Seeds: []string{addr}, Group: "g", Topic: "in", Output: "out",
			TransactionalID: "txn-" + name, SessionTimeout: 6 * time.Second, HeartbeatInterval: time.Second,
			FetchMaxPartitionBytes: 256}
	}
	in := Start(cfg("in"), board)
	defer in.Stop(context.Background())
	child, err := StartProcess(cfg("child"), board)
	if err != nil {
		t.Fatal(err)
	}
	if err := board.Wait(ctx, "two stages of two partitions each", func() bool {
		return len(in.Owned()) == 2 && len(child.Owned()) == 2
	}); err != nil {
		t.Fatalf("%v: own %v and %v", err, in.Owned(), child.Owned())
	}
	produce(1000)
	if err := board.Wait(ctx, "a transaction of the child", func() bool { return child.Transactions().Committed > 0 }); err != nil {
		t.Fatalf("%v; failures %v", err, child.Failures())
	}
	child.Kill()
	again, err := StartProcess(cfg("child"), board)
	if err != nil {
		t.Fatal(err)
	}
	defer again.Stop(context.Background())
	produce(1000)

	var last string
	if err := board.Wait(ctx, "the group to commit the input's end offsets", func() bool {
		ends, err := adm.ListEndOffsets(ctx, "in")
		if err != nil {
			return false
		}
		got, err := adm.FetchOffsets(ctx, "g")
		if err != nil {
			return false
		}
		last = fmt.Sprintf("ends %v, committed %v", ends.Offsets(), got.Offsets())
		done := true
		ends.Each(func(o kadm.ListedOffset) {
			c, ok := got.Lookup("in", o.Partition)
			done = done && ok && c.At == o.Offset
		})
		return done
	}); err != nil {
		t.Fatalf("%v: %s", err, last)
	}
	for _, m := range []*Member{in, again} {
		if err := m.Stop(ctx); err != nil {
			t.Fatal(err)
		}
		if f := m.Failures(); len(f) > 0 {
			t.Errorf("%s: %v", m.Name, f)
		}
	}

	// Read the output committed, control records included, to its end.
	ends, err := adm.ListEndOffsets(ctx, "out")
	if err != nil {
		t.Fatal(err)
	}
	rd, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ConsumeTopics("out"),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()), kgo.KeepControlRecords())
	if err != nil {
		t.Fatal(err)
	}
	defer rd.Close()
	want := map[int32]int64{}
	ends.Each(func(o kadm.ListedOffset) {
		if o.Offset > 0 {
			want[o.Partition] = o.Offset
		}
	})
	seen := map[string]int{}
	for len(want) > 0 {
		fs := rd.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("reading the output: %v; still to read %v", ctx.Err(), want)
		}
		fs.EachRecord(func(r *kgo.Record) {
			if !r.Attrs.IsControl() {
				seen[string(r.Value)]++
			}
			if end, ok := want[r.Partition]; ok && r.Offset+1 >= end {
				delete(want, r.Partition)
			}
		})
	}
	for i := range produced {
		if n := seen[fmt.Sprint(i)]; n != 1 {
			t.Errorf("value %d is in the output %d times", i, n)
		}
	}
	if len(seen) != produced {
		t.Errorf("the output holds %d distinct values, %d were produced", len(seen), produced)
	}
	t.Logf("in-process stage %+v; child before the kill %+v, after %+v",
		in.Transactions(), child.Transactions(), again.Transactions())
}
