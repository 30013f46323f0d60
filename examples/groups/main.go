// Consumer groups, as in Kafka's classic picture: one topic of four
// partitions read by two groups. Group A has two members, group B four.
// Every group gets every record once; within a group the members split
// the partitions among themselves (two each in A, one each in B), so a
// group scales by adding members, up to one per partition.
//
// The program starts the six members (franz-go clients with
// kgo.ConsumerGroup) one at a time. Each join rebalances the member's
// group: OnPartitionsAssigned and OnPartitionsRevoked tell the program
// who owns what, and it prints the group once it has settled again — its
// members together own every partition, each at least one. Then it
// produces records spread evenly over the partitions and reads until
// each group has seen all of them, and prints what each member read and
// the count per group.
//
//	go run ./examples/groups [-brokers host:9092] [-n 20]
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"slices"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/runnel-io/runnel/examples/internal/embedded"
)

const (
	topic      = "groups-example"
	partitions = 4
)

// groups are the consumer groups and how many members each has.
var groups = []struct {
	name    string
	members int
}{
	{"A", 2},
	{"B", 4},
}

func main() {
	brokers := flag.String("brokers", "", "comma-separated seed brokers (default: start an embedded broker)")
	n := flag.Int("n", 20, "how many records to produce")
	flag.Parse()
	ctx, cancel := signal.NotifyContext(context.Background(), os.Interrupt)
	defer cancel()
	if err := run(ctx, *brokers, *n, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "groups:", err)
		os.Exit(1)
	}
}

// event is what the members tell run: partitions assigned or taken away,
// or a record read. One goroutine (run's) owns what they add up to.
type event struct {
	member   *member
	assigned []int32 // partitions added
	revoked  []int32 // partitions taken away (revoked or lost)
	record   *kgo.Record
}

// member is one consumer of a group.
type member struct {
	name, group string
	cl          *kgo.Client

	// Owned by run's goroutine.
	owns map[int32]bool
	read map[int32]int // records read per partition
}

func run(ctx context.Context, brokerList string, n int, w io.Writer) error {
	seeds, stop, err := embedded.Brokers(brokerList)
	if err != nil {
		return err
	}
	defer stop()
	if err := embedded.CreateTopics(ctx, seeds, partitions, topic); err != nil {
		return err
	}
	fmt.Fprintf(w, "topic %q has %d partitions;", topic, partitions)
	for _, g := range groups {
		fmt.Fprintf(w, " group %s has %d members,", g.name, g.members)
	}
	fmt.Fprintln(w, " one client each")

	// The members send their events here until done is closed, which
	// happens before they are closed: leaving the group revokes their
	// partitions, and nobody reads events then.
	events := make(chan event)
	done := make(chan struct{})
	send := func(e event) {
		select {
		case events <- e:
		case <-done:
		}
	}
	var members []*member
	defer func() {
		close(done)
		for _, m := range members {
			m.cl.Close()
		}
	}()

	// The members join one at a time; each join rebalances its group,
	// and the next member starts once the group has settled again.
	fmt.Fprintln(w, "\nthe members join one by one; at each join the group rebalances:")
	for _, g := range groups {
		var group []*member
		for i := range g.members {
			m, err := startMember(ctx, seeds, g.name, fmt.Sprintf("%s%d", g.name, i+1), send)
			if err != nil {
				return err
			}
			members = append(members, m)
			group = append(group, m)
			if err := awaitSettled(ctx, events, group); err != nil {
				return err
			}
			var owners []string
			for _, o := range group {
				owners = append(owners, fmt.Sprintf("%s owns %v", o.name, o.partitions()))
			}
			fmt.Fprintf(w, "  group %s: %s joins -> %s\n", g.name, m.name, strings.Join(owners, ", "))
		}
	}

	if err := produce(ctx, seeds, n); err != nil {
		return err
	}
	fmt.Fprintf(w, "\nproduced %d records, spread evenly over the %d partitions\n", n, partitions)

	// Read until every group has every record. A group that read one
	// twice would show it in its count; a member that read a partition it
	// does not own is an error.
	distinct := map[string]map[string]bool{} // group -> values read
	total := map[string]int{}
	for _, g := range groups {
		distinct[g.name] = map[string]bool{}
	}
	for !allRead(distinct, n) {
		select {
		case e := <-events:
			if e.record == nil {
				if e.member.apply(e) {
					fmt.Fprintf(w, "  (rebalance: %s now owns %v)\n", e.member.name, e.member.partitions())
				}
				continue
			}
			m, r := e.member, e.record
			if !m.owns[r.Partition] {
				return fmt.Errorf("%s read from partition %d, which it does not own", m.name, r.Partition)
			}
			m.read[r.Partition]++
			distinct[m.group][string(r.Value)] = true
			total[m.group]++
		case <-ctx.Done():
			return fmt.Errorf("waiting for the records: %w", ctx.Err())
		}
	}

	fmt.Fprintln(w, "\nwho read what:")
	for _, m := range members {
		sum := 0
		var per []string
		for _, p := range m.partitions() {
			sum += m.read[p]
			per = append(per, fmt.Sprintf("p%d: %d", p, m.read[p]))
		}
		fmt.Fprintf(w, "  group %s: %s read %d records (%s)\n", m.group, m.name, sum, strings.Join(per, ", "))
	}
	fmt.Fprintln(w, "\nper group:")
	for _, g := range groups {
		fmt.Fprintf(w, "  group %s read %d records, %d distinct, of %d produced\n", g.name, total[g.name], len(distinct[g.name]), n)
	}

	// Commit what was read, so that a second run against the same
	// cluster starts after it.
	for _, m := range members {
		if err := m.cl.CommitUncommittedOffsets(ctx); err != nil {
			return fmt.Errorf("%s: commit: %w", m.name, err)
		}
	}
	return nil
}

// startMember starts a consumer of group that sends its assignments and
// records to send.
func startMember(ctx context.Context, seeds []string, group, name string, send func(event)) (*member, error) {
	m := &member{name: name, group: group, owns: map[int32]bool{}, read: map[int32]int{}}
	take := func(_ context.Context, _ *kgo.Client, lost map[string][]int32) {
		send(event{member: m, revoked: lost[topic]})
	}
	cl, err := kgo.NewClient(
		kgo.SeedBrokers(seeds...),
		kgo.ConsumerGroup("groups-example-"+group),
		kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.OnPartitionsAssigned(func(_ context.Context, _ *kgo.Client, added map[string][]int32) {
			send(event{member: m, assigned: added[topic]})
		}),
		kgo.OnPartitionsRevoked(take),
		kgo.OnPartitionsLost(take),
		// Members learn that their group is rebalancing from their
		// heartbeats; a short interval lets each join settle in a
		// fraction of a second instead of seconds (the default is 3 s).
		kgo.HeartbeatInterval(100*time.Millisecond),
	)
	if err != nil {
		return nil, err
	}
	m.cl = cl
	go func() {
		for {
			fetches := cl.PollFetches(ctx)
			if fetches.IsClientClosed() || ctx.Err() != nil {
				return
			}
			fetches.EachRecord(func(r *kgo.Record) { send(event{member: m, record: r}) })
		}
	}()
	return m, nil
}

// apply records a change of assignment and says whether there was one.
func (m *member) apply(e event) bool {
	for _, p := range e.assigned {
		m.owns[p] = true
	}
	for _, p := range e.revoked {
		delete(m.owns, p)
	}
	return len(e.assigned)+len(e.revoked) > 0
}

// partitions are the partitions m owns, sorted.
func (m *member) partitions() []int32 {
	var ps []int32
	for p := range m.owns {
		ps = append(ps, p)
	}
	slices.Sort(ps)
	return ps
}

// awaitSettled applies the members' events until the members of group
// each own at least one partition and together own each partition exactly
// once. Records arriving now would be an error: nothing is produced yet.
func awaitSettled(ctx context.Context, events <-chan event, group []*member) error {
	for !settled(group) {
		select {
		case e := <-events:
			if e.record != nil {
				return fmt.Errorf("%s read a record before anything was produced (%s): the topic has records the group has not read; use a fresh cluster", e.member.name, e.record.Value)
			}
			e.member.apply(e)
		case <-ctx.Done():
			return fmt.Errorf("waiting for group %s to settle: %w", group[0].group, ctx.Err())
		}
	}
	return nil
}

// settled says whether the members of one group each own at least one
// partition and together own each partition exactly once.
func settled(group []*member) bool {
	owners := map[int32]int{}
	for _, m := range group {
		if len(m.owns) == 0 {
			return false
		}
		for p := range m.owns {
			owners[p]++
		}
	}
	for p := range int32(partitions) {
		if owners[p] != 1 {
			return false
		}
	}
	return len(owners) == partitions
}

// produce writes n records round robin over the partitions, waiting for
// the acknowledgements.
func produce(ctx context.Context, seeds []string, n int) error {
	cl, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.RecordPartitioner(kgo.RoundRobinPartitioner()))
	if err != nil {
		return err
	}
	defer cl.Close()
	records := make([]*kgo.Record, n)
	for i := range records {
		records[i] = &kgo.Record{Topic: topic, Value: fmt.Appendf(nil, "record-%d", i)}
	}
	if err := cl.ProduceSync(ctx, records...).FirstErr(); err != nil {
		return fmt.Errorf("produce: %w", err)
	}
	return nil
}

// allRead says whether each group has read n distinct records.
func allRead(distinct map[string]map[string]bool, n int) bool {
	for _, values := range distinct {
		if len(values) < n {
			return false
		}
	}
	return true
}
