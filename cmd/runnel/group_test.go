package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// onBrokers runs a group test against Runnel's broker and, as a reference
// Kafka, against franz-go's kfake.
func onBrokers(t *testing.T, fn func(t *testing.T, c *cli)) {
	t.Run("runnel", func(t *testing.T) { fn(t, newCLI(t)) })
	t.Run("kfake", func(t *testing.T) { fn(t, &cli{t: t, addr: startKfake(t)}) })
}

// produceN writes counts[p] records to each partition p of topic, record i
// of a partition with value "v<i>" and timestamp base+i seconds.
func produceN(t *testing.T, c *cli, topic string, counts map[int32]int, base time.Time) {
	t.Helper()
	cl := c.client(kgo.RecordPartitioner(kgo.ManualPartitioner()))
	var rs []*kgo.Record
	for p, n := range counts {
		for i := range n {
			rs = append(rs, &kgo.Record{Topic: topic, Partition: p, Value: fmt.Appendf(nil, "v%d", i), Timestamp: base.Add(time.Duration(i) * time.Second)})
		}
	}
	if err := cl.ProduceSync(t.Context(), rs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
}

// member is a live franz-go consumer group member.
type member struct {
	*kgo.Client
	stop func() // leaves the group; safe to call twice
}

// startMember joins group as a consumer of topics and returns once the
// group has given it partitions. It commits nothing by itself.
func startMember(t *testing.T, c *cli, group, clientID string, topics ...string) *member {
	t.Helper()
	assigned := make(chan struct{}, 1)
	cl, err := kgo.NewClient(
		kgo.SeedBrokers(c.addr),
		kgo.ClientID(clientID),
		kgo.ConsumerGroup(group),
		kgo.ConsumeTopics(topics...),
		kgo.DisableAutoCommit(),
		kgo.OnPartitionsAssigned(func(context.Context, *kgo.Client, map[string][]int32) {
			select {
			case assigned <- struct{}{}:
			default:
			}
		}),
	)
	if err != nil {
		t.Fatal(err)
	}
	m := &member{Client: cl, stop: sync.OnceFunc(cl.Close)}
	t.Cleanup(m.stop)
	select {
	case <-assigned:
	case <-time.After(20 * time.Second):
		t.Fatalf("member of group %q got no partitions within 20s", group)
	}
	return m
}

// commit commits offsets as the member, within its generation.
func (m *member) commit(t *testing.T, offsets map[string]map[int32]int64) {
	t.Helper()
	eos := make(map[string]map[int32]kgo.EpochOffset)
	for topic, ps := range offsets {
		eos[topic] = make(map[int32]kgo.EpochOffset)
		for p, o := range ps {
			eos[topic][p] = kgo.EpochOffset{Epoch: -1, Offset: o}
		}
	}
	var cerr error
	m.CommitOffsetsSync(t.Context(), eos, func(_ *kgo.Client, _ *kmsg.OffsetCommitRequest, resp *kmsg.OffsetCommitResponse, err error) {
		cerr = err
		for _, rt := range resp.Topics {
			for _, rp := range rt.Partitions {
				if cerr == nil {
					cerr = kerr.ErrorForCode(rp.ErrorCode)
				}
			}
		}
	})
	if cerr != nil {
		t.Fatalf("member commit: %v", cerr)
	}
}

// commitAsAdmin commits offsets outside any generation, as a simple
// (memberless) group does.
func commitAsAdmin(t *testing.T, c *cli, group string, offsets map[string]map[int32]int64) {
	t.Helper()
	var os kadm.Offsets
	for topic, ps := range offsets {
		for p, o := range ps {
			os.AddOffset(topic, p, o, -1)
		}
	}
	if err := kadm.NewClient(c.client()).CommitAllOffsets(t.Context(), group, os); err != nil {
		t.Fatalf("commit offsets of group %q: %v", group, err)
	}
}

// committed returns the group's committed offsets as topic -> partition -> offset.
func committed(t *testing.T, c *cli, group string) map[string]map[int32]int64 {
	t.Helper()
	rs, err := kadm.NewClient(c.client()).FetchOffsets(t.Context(), group)
	if errors.Is(err, kerr.GroupIDNotFound) {
		return map[string]map[int32]int64{}
	}
	if err != nil {
		t.Fatalf("fetch offsets of group %q: %v", group, err)
	}
	out := make(map[string]map[int32]int64)
	for _, r := range rs.Sorted() {
		if r.Err != nil {
			t.Fatalf("fetch offsets of group %q: %s[%d]: %v", group, r.Topic, r.Partition, r.Err)
		}
		if r.At < 0 {
			continue
		}
		if out[r.Topic] == nil {
			out[r.Topic] = make(map[int32]int64)
		}
		out[r.Topic][r.Partition] = r.At
	}
	return out
}

// waitGroupState polls until the group is in state, or fails after 20s.
func waitGroupState(t *testing.T, c *cli, group, state string) {
	t.Helper()
	adm := kadm.NewClient(c.client())
	deadline := time.Now().Add(20 * time.Second)
	for {
		ds, err := adm.DescribeGroups(t.Context(), group)
		if err == nil && ds[group].State == state {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("group %q: state %q (err %v) after 20s, want %s", group, ds[group].State, err, state)
		}
		time.Sleep(20 * time.Millisecond) // polling with a deadline: the broker has no state-change feed
	}
}

func TestGroupList(t *testing.T) {
	onBrokers(t, func(t *testing.T, c *cli) {
		c.ok("", "topic", "create", "orders", "-p", "2")
		commitAsAdmin(t, c, "idle", map[string]map[int32]int64{"orders": {0: 0}})
		startMember(t, c, "live", "lister", "orders")
		waitGroupState(t, c, "live", "Stable")

		rows := table(c.ok("", "group", "list"))
		want := [][]string{{"GROUP", "STATE", "PROTOCOL-TYPE", "MEMBERS"}, {"idle", "Empty", "-", "0"}, {"live", "Stable", "consumer", "1"}}
		if !slices.EqualFunc(rows, want, slices.Equal) {
			t.Errorf("list: got %q, want %q", rows, want)
		}
		for _, tc := range []struct {
			states string
			want   []string
		}{
			{"Stable", []string{"live"}},
			{"empty", []string{"idle"}}, // case-insensitive, as in Kafka
			{"Stable,Empty", []string{"idle", "live"}},
			{"PreparingRebalance,Dead", nil},
		} {
			var got []string
			for _, r := range table(c.ok("", "group", "list", "--state", tc.states))[1:] {
				got = append(got, r[0])
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("list --state %s: got %q, want %q", tc.states, got, tc.want)
			}
		}
		if err := c.fail("", "group", "list", "--state", "Stable,Running"); !strings.Contains(err.Error(), `unknown state "Running"`) {
			t.Errorf("bad state: %v", err)
		}
	})
}

func TestGroupDescribeLiveGroup(t *testing.T) {
	onBrokers(t, func(t *testing.T, c *cli) {
		c.ok("", "topic", "create", "orders", "-p", "3")
		produceN(t, c, "orders", map[int32]int{0: 10, 1: 6}, time.Now())
		m := startMember(t, c, "billing", "lagger", "orders")
		m.commit(t, map[string]map[int32]int64{"orders": {0: 3, 1: 6}})
		id, _ := m.GroupMetadata()
		waitGroupState(t, c, "billing", "Stable")

		out, stderr, err := c.run("", "group", "describe", "billing")
		if err != nil || stderr != "" {
			t.Fatalf("describe: %v, stderr %q", err, stderr)
		}
		rows := table(out)
		if len(rows) != 4 {
			t.Fatalf("describe: want a header and 3 partitions:\n%s", out)
		}
		if want := []string{"GROUP", "TOPIC", "PARTITION", "CURRENT-OFFSET", "LOG-END-OFFSET", "LAG", "CONSUMER-ID", "HOST", "CLIENT-ID"}; !slices.Equal(rows[0], want) {
			t.Errorf("header: %q", rows[0])
		}
		for i, want := range [][]string{
			{"billing", "orders", "0", "3", "10", "7", id},
			{"billing", "orders", "1", "6", "6", "0", id},
			{"billing", "orders", "2", "-", "0", "-", id}, // nothing committed: no lag, like Kafka
		} {
			r := rows[i+1]
			if len(r) != 9 || !slices.Equal(r[:7], want) || !strings.Contains(r[7], "127.0.0.1") || r[8] != "lagger" {
				t.Errorf("row %d: got %q, want %q + host 127.0.0.1 + client lagger", i, r, want)
			}
		}

		// JSON has the same numbers, with null for unknown.
		var v groupView
		if err := json.Unmarshal([]byte(c.ok("", "group", "describe", "billing", "-o", "json")), &v); err != nil {
			t.Fatal(err)
		}
		if v.Group != "billing" || v.State != "Stable" || v.ProtocolType != "consumer" || len(v.Members) != 1 || len(v.Offsets) != 3 {
			t.Fatalf("json: %+v", v)
		}
		if o := v.Offsets[0]; *o.CurrentOffset != 3 || *o.LogEndOffset != 10 || *o.Lag != 7 || *o.MemberID != id {
			t.Errorf("json partition 0: %+v", o)
		}
		if o := v.Offsets[2]; o.CurrentOffset != nil || o.Lag != nil || *o.LogEndOffset != 0 {
			t.Errorf("json partition 2: %+v", o)
		}

		rows = table(c.ok("", "group", "describe", "billing", "--members", "--verbose"))
		if want := []string{"GROUP", "CONSUMER-ID", "GROUP-INSTANCE-ID", "HOST", "CLIENT-ID", "#PARTITIONS", "ASSIGNMENT"}; len(rows) != 2 || !slices.Equal(rows[0], want) {
			t.Fatalf("--members: %q", rows)
		}
		if r := rows[1]; r[0] != "billing" || r[1] != id || r[2] != "-" || r[4] != "lagger" || r[5] != "3" || r[6] != "orders:0,1,2" {
			t.Errorf("--members row: %q", r)
		}
		out = c.ok("", "group", "describe", "billing", "--state")
		if ls := lines(out); len(ls) != 2 || !strings.HasPrefix(ls[0], "GROUP") || !strings.Contains(ls[0], "COORDINATOR (ID)") {
			t.Fatalf("--state:\n%s", out)
		}
		if r := table(out)[1]; r[0] != "billing" || !strings.HasPrefix(r[1], "127.0.0.1:") || r[3] != "cooperative-sticky" || r[4] != "Stable" || r[5] != "1" {
			t.Errorf("--state row: %q", r)
		}

		// Once the member leaves, the committed partitions remain
		// without an owner, and stderr says the group is idle.
		m.stop()
		waitGroupState(t, c, "billing", "Empty")
		out, stderr, err = c.run("", "group", "describe", "billing")
		if err != nil || stderr != "Group \"billing\" has no active members.\n" {
			t.Fatalf("describe empty group: %v, stderr %q", err, stderr)
		}
		want := [][]string{
			{"billing", "orders", "0", "3", "10", "7", "-", "-", "-"},
			{"billing", "orders", "1", "6", "6", "0", "-", "-", "-"},
		}
		if rows := table(out); !slices.EqualFunc(rows[1:], want, slices.Equal) {
			t.Errorf("describe empty group: got %q, want %q", rows[1:], want)
		}
	})
}

func TestGroupResetOffsets(t *testing.T) {
	onBrokers(t, func(t *testing.T, c *cli) {
		c.ok("", "topic", "create", "r", "-p", "2")
		c.ok("", "topic", "create", "other", "-p", "1")
		base := time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC)
		produceN(t, c, "r", map[int32]int{0: 10, 1: 5}, base)
		produceN(t, c, "other", map[int32]int{0: 3}, base)
		baseline := map[string]map[int32]int64{"r": {0: 4, 1: 2}, "other": {0: 1}}
		commitAsAdmin(t, c, "g", baseline)

		// A dry run prints the plan and changes nothing.
		out, stderr, err := c.run("", "group", "reset-offsets", "-g", "g", "--topic", "r", "--to-earliest")
		if err != nil {
			t.Fatal(err)
		}
		want := [][]string{{"GROUP", "TOPIC", "PARTITION", "CURRENT-OFFSET", "NEW-OFFSET"}, {"g", "r", "0", "4", "0"}, {"g", "r", "1", "2", "0"}}
		if rows := table(out); !slices.EqualFunc(rows, want, slices.Equal) {
			t.Errorf("dry run plan: got %q, want %q", rows, want)
		}
		if !strings.Contains(stderr, "Dry run: nothing was committed; pass --execute") {
			t.Errorf("dry run stderr: %q", stderr)
		}
		c.ok("", "group", "reset-offsets", "-g", "g", "--topic", "r", "--to-latest", "--dry-run")
		if got := committed(t, c, "g"); !equalOffsets(got, baseline) {
			t.Fatalf("after dry runs: committed %v, want the baseline %v", got, baseline)
		}

		for _, tc := range []struct {
			args    []string
			want    map[string]map[int32]int64
			warning string
		}{
			{[]string{"--topic", "r", "--to-earliest"}, map[string]map[int32]int64{"r": {0: 0, 1: 0}}, ""},
			{[]string{"--topic", "r", "--to-latest"}, map[string]map[int32]int64{"r": {0: 10, 1: 5}}, ""},
			{[]string{"--topic", "r", "--to-offset", "7"}, map[string]map[int32]int64{"r": {0: 7, 1: 5}}, "r[1]: offset 7 is past the log end; using 5"},
			{[]string{"--topic", "r", "--shift-by", "-3"}, map[string]map[int32]int64{"r": {0: 1, 1: 0}}, "r[1]: offset -1 is before the log start; using 0"},
			{[]string{"--topic", "r", "--shift-by", "4"}, map[string]map[int32]int64{"r": {0: 8, 1: 5}}, "r[1]: offset 6 is past the log end"},
			{[]string{"--topic", "r", "--to-current"}, map[string]map[int32]int64{"r": {0: 4, 1: 2}}, ""},
			{[]string{"--topic", "r", "--to-datetime", "2026-12-02T10:00:03Z"}, map[string]map[int32]int64{"r": {0: 3, 1: 3}}, ""},
			{[]string{"--topic", "r", "--to-datetime", "2026-12-02T10:00:06"}, map[string]map[int32]int64{"r": {0: 6, 1: 5}}, ""}, // none in r[1]: its end
			{[]string{"--topic", "r", "--to-datetime", "2026-12-02T11:00:01.500+01:00"}, map[string]map[int32]int64{"r": {0: 2, 1: 2}}, ""},
			{[]string{"--topic", "r:1", "--to-earliest"}, map[string]map[int32]int64{"r": {1: 0}}, ""},
			{[]string{"--all-topics", "--to-latest"}, map[string]map[int32]int64{"r": {0: 10, 1: 5}, "other": {0: 3}}, ""},
			{[]string{"--topic", "r:0", "--topic", "other", "--to-offset", "1"}, map[string]map[int32]int64{"r": {0: 1}, "other": {0: 1}}, ""},
		} {
			commitAsAdmin(t, c, "g", baseline)
			args := append([]string{"group", "reset-offsets", "-g", "g", "--execute"}, tc.args...)
			_, stderr, err := c.run("", args...)
			if err != nil {
				t.Errorf("%q: %v", tc.args, err)
				continue
			}
			if tc.warning != "" && !strings.Contains(stderr, tc.warning) {
				t.Errorf("%q: stderr %q, want warning %q", tc.args, stderr, tc.warning)
			}
			if !strings.Contains(stderr, "Committed ") {
				t.Errorf("%q: stderr %q, want the commit reported", tc.args, stderr)
			}
			want := clone(baseline)
			for topic, ps := range tc.want {
				for p, o := range ps {
					want[topic][p] = o
				}
			}
			if got := committed(t, c, "g"); !equalOffsets(got, want) {
				t.Errorf("%q: committed %v, want %v", tc.args, got, want)
			}
		}

		// A group that does not exist yet gets the offsets (Kafka
		// allows it), but shifting needs a committed offset.
		c.ok("", "group", "reset-offsets", "-g", "fresh", "--topic", "r", "--to-offset", "2", "--execute")
		if got, want := committed(t, c, "fresh"), map[string]map[int32]int64{"r": {0: 2, 1: 2}}; !equalOffsets(got, want) {
			t.Errorf("new group: committed %v, want %v", got, want)
		}
		if err := c.fail("", "group", "reset-offsets", "-g", "fresh2", "--topic", "r", "--shift-by", "1"); !strings.Contains(err.Error(), "no committed offset to shift from") {
			t.Errorf("shift without a commit: %v", err)
		}
	})
}

func clone(m map[string]map[int32]int64) map[string]map[int32]int64 {
	out := make(map[string]map[int32]int64)
	for t, ps := range m {
		out[t] = make(map[int32]int64)
		for p, o := range ps {
			out[t][p] = o
		}
	}
	return out
}

func equalOffsets(a, b map[string]map[int32]int64) bool {
	if len(a) != len(b) {
		return false
	}
	for t, ps := range a {
		if len(ps) != len(b[t]) {
			return false
		}
		for p, o := range ps {
			if bo, ok := b[t][p]; !ok || bo != o {
				return false
			}
		}
	}
	return true
}

func TestGroupActiveMembersRefused(t *testing.T) {
	onBrokers(t, func(t *testing.T, c *cli) {
		c.ok("", "topic", "create", "busy", "-p", "2")
		produceN(t, c, "busy", map[int32]int{0: 5, 1: 5}, time.Now())
		m := startMember(t, c, "workers", "worker", "busy")
		m.commit(t, map[string]map[int32]int64{"busy": {0: 2, 1: 3}})
		before := committed(t, c, "workers")

		for _, args := range [][]string{
			{"group", "reset-offsets", "-g", "workers", "--topic", "busy", "--to-earliest", "--execute"},
			{"group", "reset-offsets", "-g", "workers", "--all-topics", "--to-latest"}, // Kafka refuses dry runs too
		} {
			err := c.fail("", args...)
			if want := `group "workers" has 1 active member (state Stable); stop them first`; !strings.Contains(err.Error(), want) {
				t.Errorf("%q: got %q, want %q", args, err, want)
			}
		}
		if err := c.fail("", "group", "delete", "workers"); !strings.Contains(err.Error(), `group "workers" has 1 active member`) {
			t.Errorf("delete active group: %v", err)
		}
		if err := c.fail("", "group", "delete", "workers", "--topic", "busy"); !strings.Contains(err.Error(), `active members subscribed to topic "busy"; stop them first`) {
			t.Errorf("delete offsets of a subscribed topic: %v", err)
		}
		if got := committed(t, c, "workers"); !equalOffsets(got, before) {
			t.Errorf("refused commands changed the offsets: %v, want %v", got, before)
		}

		m.stop()
		waitGroupState(t, c, "workers", "Empty")
		c.ok("", "group", "reset-offsets", "-g", "workers", "--topic", "busy", "--to-earliest", "--execute")
		if got, want := committed(t, c, "workers"), map[string]map[int32]int64{"busy": {0: 0, 1: 0}}; !equalOffsets(got, want) {
			t.Errorf("after the member left: committed %v, want %v", got, want)
		}
	})
}

func TestGroupDelete(t *testing.T) {
	onBrokers(t, func(t *testing.T, c *cli) {
		c.ok("", "topic", "create", "a", "-p", "2")
		c.ok("", "topic", "create", "b", "-p", "1")
		commitAsAdmin(t, c, "old", map[string]map[int32]int64{"a": {0: 1, 1: 2}, "b": {0: 3}})
		commitAsAdmin(t, c, "older", map[string]map[int32]int64{"b": {0: 1}})

		if got, want := c.ok("", "group", "delete", "old", "--topic", "a:1"), "Deleted the offsets of group \"old\" for topic \"a\", partition 1.\n"; got != want {
			t.Errorf("delete --topic a:1: got %q, want %q", got, want)
		}
		if got, want := committed(t, c, "old"), map[string]map[int32]int64{"a": {0: 1}, "b": {0: 3}}; !equalOffsets(got, want) {
			t.Errorf("after deleting a[1]: %v, want %v", got, want)
		}
		if got, want := c.ok("", "group", "delete", "old", "--topic", "a"), "Deleted the offsets of group \"old\" for topic \"a\", partition 0.\n"; got != want {
			t.Errorf("delete --topic a: got %q, want %q", got, want)
		}
		if got, want := committed(t, c, "old"), map[string]map[int32]int64{"b": {0: 3}}; !equalOffsets(got, want) {
			t.Errorf("after deleting a: %v, want %v", got, want)
		}
		if err := c.fail("", "group", "delete", "old", "--topic", "a"); !strings.Contains(err.Error(), `group "old" has no committed offsets for topic "a"`) {
			t.Errorf("delete --topic without offsets: %v", err)
		}

		if got, want := c.ok("", "group", "delete", "older", "old"), "Deleted group \"old\".\nDeleted group \"older\".\n"; got != want {
			t.Errorf("delete: got %q, want %q", got, want)
		}
		if rows := table(c.ok("", "group", "list")); len(rows) != 1 {
			t.Errorf("list after delete: %q, want only the header", rows)
		}
		if got := committed(t, c, "old"); len(got) != 0 {
			t.Errorf("deleted group still has offsets %v", got)
		}
		err := c.fail("", "group", "delete", "old")
		if !errors.Is(err, errGroupMissing) || !strings.Contains(err.Error(), `group "old" does not exist`) {
			t.Errorf("delete a deleted group: %v", err)
		}
	})
}

func TestGroupBadInput(t *testing.T) {
	onBrokers(t, func(t *testing.T, c *cli) {
		c.ok("", "topic", "create", "t", "-p", "2")
		commitAsAdmin(t, c, "g", map[string]map[int32]int64{"t": {0: 1}})

		out, _, err := c.run("", "group", "describe", "nope", "g")
		if !errors.Is(err, errGroupMissing) || !strings.Contains(err.Error(), `group "nope" does not exist (see "runnel group list")`) {
			t.Errorf("describe unknown group: %v", err)
		}
		if !strings.HasPrefix(out, "GROUP") || !strings.Contains(out, "\ng ") {
			t.Errorf("describe unknown+known printed %q, want the known group", out)
		}
		reset := []string{"group", "reset-offsets", "-g", "g"}
		for _, tc := range []struct {
			args []string
			want string
		}{
			{append(reset, "--topic", "t", "--to-datetime", "yesterday"), "want an ISO-8601 time"},
			{append(reset, "--topic", "t", "--to-datetime", "2026-12-02"), "want an ISO-8601 time"},
			{append(reset, "--topic", "t", "--to-datetime", "2026-13-02T10:00:00Z"), "want an ISO-8601 time"},
			{append(reset, "--topic", "t", "--to-earliest", "--to-latest"), "--to-earliest and --to-latest: pass exactly one mode"},
			{append(reset, "--topic", "t"), "missing a mode"},
			{append(reset, "--to-earliest"), "missing partitions: pass --topic"},
			{append(reset, "--topic", "t", "--all-topics", "--to-earliest"), "--topic and --all-topics"},
			{append(reset, "--topic", "t", "--to-earliest", "--execute", "--dry-run"), "--execute and --dry-run"},
			{append(reset, "--topic", "t", "--to-offset", "-1"), "want an offset of 0 or more"},
			{append(reset, "--topic", "t:x", "--to-earliest"), `partition "x" is not a partition number`},
			{append(reset, "--topic", "t:5", "--to-earliest"), `partition 5 does not exist: topic "t" has 2 partitions (0-1)`},
			{append(reset, "--topic", "missing", "--to-earliest"), `topic "missing" does not exist`},
			{append(reset, "--topic", "t", "--shift-by", "1"), "t[1]: the group has no committed offset to shift from"},
			{[]string{"group", "reset-offsets", "--topic", "t", "--to-earliest"}, "missing --group"},
			{[]string{"group", "reset-offsets", "-g", "nope", "--all-topics", "--to-earliest"}, `group "nope" has no committed offsets to reset`},
			{[]string{"group", "describe"}, "missing GROUP"},
			{[]string{"group", "describe", "g", "-o", "xml"}, "want text or json"},
			{[]string{"group", "describe", "g", "--members", "--state"}, "pass one of them"},
			{[]string{"group", "delete", "a", "b", "--topic", "t"}, "--topic deletes the offsets of one group"},
			{[]string{"group", "delete", "nope"}, `group "nope" does not exist`},
		} {
			if err := c.fail("", tc.args...); !strings.Contains(err.Error(), tc.want) {
				t.Errorf("runnel %s: got %q, want it to contain %q", strings.Join(tc.args, " "), err, tc.want)
			}
		}
		if got, want := committed(t, c, "g"), map[string]map[int32]int64{"t": {0: 1}}; !equalOffsets(got, want) {
			t.Errorf("bad input changed offsets: %v", got)
		}
	})
}

func TestParseDatetime(t *testing.T) {
	utc := func(s string) int64 { t, _ := time.Parse(time.RFC3339Nano, s); return t.UnixMilli() }
	for in, want := range map[string]int64{
		"2026-12-02T10:00:00Z":          utc("2026-12-02T10:00:00Z"),
		"2026-12-02T10:00:00":           utc("2026-12-02T10:00:00Z"), // no zone: UTC, as in Kafka
		"2026-12-02T10:00:00.250":       utc("2026-12-02T10:00:00.25Z"),
		"2026-12-02T10:00:00.198+08:00": utc("2026-12-02T02:00:00.198Z"),
		"2026-12-02T10:00:00.198+0800":  utc("2026-12-02T02:00:00.198Z"),
		"2026-12-02T10:00:00+08":        utc("2026-12-02T02:00:00Z"),
		"2026-12-02T10:00:00-05:30":     utc("2026-12-02T15:30:00Z"),
	} {
		got, err := parseDatetime(in)
		if err != nil || got.UnixMilli() != want {
			t.Errorf("parseDatetime(%q) = %v, %v; want %v", in, got, err, time.UnixMilli(want).UTC())
		}
	}
	for _, in := range []string{"", "2026-12-02", "10:00:00", "2026-12-02 10:00:00", "2026-02-30T10:00:00Z", "1764669600000"} {
		if _, err := parseDatetime(in); err == nil {
			t.Errorf("parseDatetime(%q) succeeded, want an error", in)
		}
	}
}

func TestPlanOffset(t *testing.T) {
	log := partitionOffsets{committed: 5, start: 2, end: 10, atTime: -1}
	noCommit := log
	noCommit.committed = -1
	atTime := log
	atTime.atTime = 7
	for _, tc := range []struct {
		spec    resetSpec
		o       partitionOffsets
		want    int64
		warning string
		err     bool
	}{
		{resetSpec{mode: toEarliest}, log, 2, "", false},
		{resetSpec{mode: toLatest}, log, 10, "", false},
		{resetSpec{mode: toCurrent}, log, 5, "", false},
		{resetSpec{mode: toCurrent}, noCommit, 10, "", false},
		{resetSpec{mode: toOffset, n: 4}, log, 4, "", false},
		{resetSpec{mode: toOffset, n: 0}, log, 2, "offset 0 is before the log start; using 2", false},
		{resetSpec{mode: toOffset, n: 11}, log, 10, "offset 11 is past the log end; using 10", false},
		{resetSpec{mode: shiftBy, n: -2}, log, 3, "", false},
		{resetSpec{mode: shiftBy, n: -4}, log, 2, "offset 1 is before the log start; using 2", false},
		{resetSpec{mode: shiftBy, n: 9}, log, 10, "offset 14 is past the log end; using 10", false},
		{resetSpec{mode: shiftBy, n: 1}, noCommit, 0, "", true},
		{resetSpec{mode: toDatetime}, atTime, 7, "", false},
		{resetSpec{mode: toDatetime}, log, 10, "", false},
	} {
		got, warning, err := planOffset(tc.spec, tc.o)
		if got != tc.want || warning != tc.warning || (err != nil) != tc.err {
			t.Errorf("planOffset(%+v, %+v) = %d, %q, %v; want %d, %q, error %t", tc.spec, tc.o, got, warning, err, tc.want, tc.warning, tc.err)
		}
	}
}
