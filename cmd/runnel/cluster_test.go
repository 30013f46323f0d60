package main

import (
	"bytes"
	"encoding/json"
	"net"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/runnel-io/runnel/broker/brokertest"
)

// clusterStatusJSON runs `cluster status -o json` (plus args) and decodes
// the report; the multi-node tests can call it on any cli.
func clusterStatusJSON(t *testing.T, c *cli, args ...string) clusterStatus {
	t.Helper()
	out := c.ok("", append([]string{"cluster", "status", "-o", "json"}, args...)...)
	if n := strings.Count(out, "\n"); n != 1 {
		t.Fatalf("cluster status -o json printed %d lines, want one object:\n%s", n, out)
	}
	var st clusterStatus
	dec := json.NewDecoder(strings.NewReader(out))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&st); err != nil {
		t.Fatalf("decoding %q: %v", out, err)
	}
	return st
}

// testMetadata builds kadm metadata from brokers and partitions, so the
// tests of newClusterStatus read like a cluster description.
type testMetadata struct{ kadm.Metadata }

func newTestMetadata(controller int32, brokers ...kadm.BrokerDetail) *testMetadata {
	return &testMetadata{kadm.Metadata{Cluster: "test-cluster", Controller: controller, Brokers: brokers, Topics: kadm.TopicDetails{}}}
}

// partition adds a partition (and its topic); leader -1 is no leader.
func (m *testMetadata) partition(topic string, p, leader int32, replicas, isr []int32, err error) *testMetadata {
	td, ok := m.Topics[topic]
	if !ok {
		td = kadm.TopicDetail{Topic: topic, Partitions: kadm.PartitionDetails{}}
	}
	td.Partitions[p] = kadm.PartitionDetail{Topic: topic, Partition: p, Leader: leader, Replicas: replicas, ISR: isr, Err: err}
	m.Topics[topic] = td
	return m
}

// minISRConfigs is a DescribeConfigs answer naming min.insync.replicas for
// each topic.
func minISRConfigs(minISR map[string]string) kadm.ResourceConfigs {
	var rcs kadm.ResourceConfigs
	for topic, v := range minISR {
		rcs = append(rcs, kadm.ResourceConfig{Name: topic, Configs: []kadm.Config{
			{Key: "cleanup.policy", Value: kmsg.StringPtr("delete")},
			{Key: "min.insync.replicas", Value: kmsg.StringPtr(v)},
		}})
	}
	return rcs
}

func TestNewClusterStatus(t *testing.T) {
	m := newTestMetadata(2,
		kadm.BrokerDetail{NodeID: 1, Host: "k1", Port: 9092, Rack: kmsg.StringPtr("a")},
		kadm.BrokerDetail{NodeID: 2, Host: "k2", Port: 9092, Rack: kmsg.StringPtr("b")},
		kadm.BrokerDetail{NodeID: 3, Host: "k3", Port: 9093},
	).
		partition("healthy", 0, 1, []int32{1, 2, 3}, []int32{1, 2, 3}, nil).
		partition("orders", 0, 1, []int32{1, 2}, []int32{1}, nil).               // under-replicated
		partition("orders", 1, -1, []int32{2, 4}, nil, kerr.LeaderNotAvailable). // offline; node 4 is not listed
		partition("orders", 2, 2, []int32{2, 3}, []int32{3, 2}, nil).            // healthy, ISR out of order
		partition("nocfg", 0, 3, []int32{3}, []int32{3}, nil)                    // min.insync.replicas unknown
	m.Topics["broken"] = kadm.TopicDetail{Topic: "broken", Err: kerr.LeaderNotAvailable} // no partitions known
	configs := append(minISRConfigs(map[string]string{"healthy": "2", "orders": "2"}),
		kadm.ResourceConfig{Name: "nocfg", Err: kerr.TopicAuthorizationFailed})

	want := clusterStatus{
		ClusterID:    new("test-cluster"),
		ControllerID: new(int32(2)),
		Healthy:      false,
		Nodes: []nodeStatus{
			{ID: 1, Host: "k1", Port: 9092, Rack: new("a"), Listed: true, Leaders: 2, Replicas: 2},
			{ID: 2, Host: "k2", Port: 9092, Rack: new("b"), Listed: true, Controller: true, Leaders: 1, Replicas: 4, OutOfSync: 2},
			{ID: 3, Host: "k3", Port: 9093, Listed: true, Leaders: 1, Replicas: 3},
			{ID: 4, Replicas: 1, OutOfSync: 1},
		},
		Totals:              statusTotals{Topics: 4, Partitions: 5, UnderReplicated: 2, UnderMinISR: 2, Offline: 1},
		MinISRUnknownTopics: []string{"nocfg"},
		TopicErrors:         []topicError{{"broken", kerr.LeaderNotAvailable.Error()}},
		Partitions: []partitionProblem{
			{Topic: "orders", Partition: 0, Leader: new(int32(1)), Replicas: []int32{1, 2}, ISR: []int32{1}, UnderReplicated: true, UnderMinISR: new(true)},
			{Topic: "orders", Partition: 1, Replicas: []int32{2, 4}, ISR: []int32{}, Offline: true, UnderReplicated: true, UnderMinISR: new(true)},
		},
	}
	got := newClusterStatus(m.Metadata, describedCluster{controller: -1}, configs, 20)
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got\n%s\nwant\n%s", mustJSON(t, got), mustJSON(t, want))
	}

	t.Run("limit", func(t *testing.T) {
		got := newClusterStatus(m.Metadata, describedCluster{controller: -1}, configs, 1)
		if len(got.Partitions) != 1 || got.Partitions[0].Partition != 0 || got.PartitionsOmitted != 1 {
			t.Errorf("--limit 1: got partitions %s, %d omitted; want orders/0 and 1 omitted", mustJSON(t, got.Partitions), got.PartitionsOmitted)
		}
		if got.Totals != want.Totals {
			t.Errorf("--limit changed the totals: %+v", got.Totals)
		}
		if all := newClusterStatus(m.Metadata, describedCluster{controller: -1}, configs, 0); len(all.Partitions) != 2 || all.PartitionsOmitted != 0 {
			t.Errorf("--limit 0: got %d partitions, %d omitted; want all 2", len(all.Partitions), all.PartitionsOmitted)
		}
	})

	t.Run("DescribeCluster wins", func(t *testing.T) {
		got := newClusterStatus(m.Metadata, describedCluster{clusterID: "other", controller: 3}, configs, 20)
		var controllers []int32
		for _, n := range got.Nodes {
			if n.Controller {
				controllers = append(controllers, n.ID)
			}
		}
		if *got.ControllerID != 3 || !slices.Equal(controllers, []int32{3}) || *got.ClusterID != "test-cluster" {
			t.Errorf("got controller %d, flagged %v, cluster %q; want 3, [3] and Metadata's cluster id", *got.ControllerID, controllers, *got.ClusterID)
		}
	})

	t.Run("healthy and unknown", func(t *testing.T) {
		m := newTestMetadata(-1, kadm.BrokerDetail{NodeID: 0, Host: "::1", Port: 9092}).
			partition("t", 0, 0, []int32{0}, []int32{0}, nil)
		m.Cluster = ""
		got := newClusterStatus(m.Metadata, describedCluster{controller: -1}, nil, 20)
		if !got.Healthy || got.ClusterID != nil || got.ControllerID != nil || got.Nodes[0].Controller ||
			got.Partitions == nil || !slices.Equal(got.MinISRUnknownTopics, []string{"t"}) {
			t.Errorf("got %s; want healthy, null cluster id and controller, t's min ISR unknown", mustJSON(t, got))
		}
	})
}

func TestPrintClusterStatus(t *testing.T) {
	m := newTestMetadata(1,
		kadm.BrokerDetail{NodeID: 1, Host: "k1", Port: 9092, Rack: kmsg.StringPtr("a")},
		kadm.BrokerDetail{NodeID: 2, Host: "::1", Port: 9092},
	).
		partition("a", 0, 1, []int32{1, 2}, []int32{1}, nil).
		partition("b", 0, -1, []int32{3}, []int32{}, nil).
		partition("b", 1, 2, []int32{2, 1}, []int32{2, 1}, nil)
	m.Topics["gone"] = kadm.TopicDetail{Topic: "gone", Err: kerr.UnknownTopicOrPartition}
	st := newClusterStatus(m.Metadata, describedCluster{controller: -1}, minISRConfigs(map[string]string{"a": "2"}), 1)

	var out, errOut bytes.Buffer
	if err := printClusterStatus(&out, &errOut, st); err != nil {
		t.Fatal(err)
	}
	want := "Cluster: test-cluster\tController: 1\tStatus: unhealthy (1 offline partition, 2 under-replicated partitions)\n" +
		"Topics: 3\tPartitions: 3\tUnder-replicated: 2\tUnder-min-ISR: 1 (min.insync.replicas unknown for 1 topic)\tOffline: 1\n" +
		"\n" +
		"NODE  ADDRESS     RACK  CONTROLLER  LEADERS  REPLICAS  OUT-OF-ISR\n" +
		"1     k1:9092     a     yes         1        2         0\n" +
		"2     [::1]:9092  -     -           1        2         1\n" +
		"3     -           -     -           0        1         1\n" +
		"\n" +
		"TOPIC  PARTITION  LEADER  REPLICAS  ISR  STATUS\n" +
		"a      0          1       1,2       1    under-replicated,under-min-isr\n" +
		"... 1 more (see --limit)\n"
	if out.String() != want {
		t.Errorf("got\n%s\nwant\n%s", out.String(), want)
	}
	if want := "Warning: topic \"gone\": " + kerr.UnknownTopicOrPartition.Error() + "\n"; errOut.String() != want {
		t.Errorf("stderr: got %q, want %q", errOut.String(), want)
	}
}

func TestClusterStatus(t *testing.T) {
	c := newCLI(t)
	c.ok("", "topic", "create", "orders", "-p", "3", "-r", "1", "-c", "min.insync.replicas=1")
	c.ok("", "topic", "create", "logs", "-p", "1")

	ls := lines(c.ok("", "cluster", "status"))
	if len(ls) != 5 {
		t.Fatalf("cluster status: got %d lines, want 5:\n%s", len(ls), strings.Join(ls, "\n"))
	}
	if !strings.HasPrefix(ls[0], "Cluster: ") || !strings.HasSuffix(ls[0], "\tStatus: healthy") {
		t.Errorf("first line %q, want the cluster id and a healthy status", ls[0])
	}
	if want := "Topics: 2\tPartitions: 4\tUnder-replicated: 0\tUnder-min-ISR: 0\tOffline: 0"; ls[1] != want {
		t.Errorf("totals: got %q, want %q", ls[1], want)
	}
	nodes := table(strings.Join(ls[3:], "\n"))
	node := "?" // the one broker's node id, whatever it is
	if len(nodes) > 1 && len(nodes[1]) > 1 {
		node = nodes[1][0]
	}
	if want := [][]string{
		{"NODE", "ADDRESS", "RACK", "CONTROLLER", "LEADERS", "REPLICAS", "OUT-OF-ISR"},
		{node, c.addr, "-", "yes", "4", "4", "0"},
	}; !slices.EqualFunc(nodes, want, slices.Equal) {
		t.Errorf("nodes: got %q, want %q", nodes, want)
	}
	if !strings.HasSuffix(ls[0], "Controller: "+node+"\tStatus: healthy") {
		t.Errorf("first line %q, want controller %s", ls[0], node)
	}

	st := clusterStatusJSON(t, c)
	host, port, _ := net.SplitHostPort(c.addr)
	id, _ := strconv.Atoi(node)
	if st.ClusterID == nil || *st.ClusterID == "" || st.ControllerID == nil || *st.ControllerID != int32(id) || !st.Healthy {
		t.Errorf("json: got %s; want a cluster id, controller %d, healthy", mustJSON(t, st), id)
	}
	if want := []nodeStatus{{ID: int32(id), Host: host, Port: int32(atoi(t, port)), Listed: true, Controller: true, Leaders: 4, Replicas: 4}}; !reflect.DeepEqual(st.Nodes, want) {
		t.Errorf("json nodes: got %s, want %s", mustJSON(t, st.Nodes), mustJSON(t, want))
	}
	if want := (statusTotals{Topics: 2, Partitions: 4}); st.Totals != want {
		t.Errorf("json totals: got %+v, want %+v", st.Totals, want)
	}
	if len(st.MinISRUnknownTopics) != 0 || len(st.TopicErrors) != 0 || len(st.Partitions) != 0 || st.PartitionsOmitted != 0 {
		t.Errorf("json: got %s; want min.insync.replicas known everywhere and no problems", mustJSON(t, st))
	}

	var out, errb strings.Builder
	if code := run(t.Context(), []string{"-b", c.addr, "cluster", "status", "--fail-unhealthy"}, strings.NewReader(""), &out, &errb); code != 0 || errb.Len() != 0 {
		t.Errorf("--fail-unhealthy on a healthy cluster: exit code %d, stderr %q", code, errb.String())
	}

	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"cluster", "status", "-o", "yaml"}, "want text or json"},
		{[]string{"cluster", "status", "--limit", "-1"}, "want 0 (no limit) or more"},
		{[]string{"cluster", "status", "x"}, "takes no arguments"},
	} {
		if err := c.fail("", tc.args...); !strings.Contains(err.Error(), tc.want) {
			t.Errorf("runnel %s: got %q, want it to mention %q", strings.Join(tc.args, " "), err, tc.want)
		}
	}
}

// TestClusterStatusFailUnhealthy checks the exit status 2 end to end. A
// single broker cannot lose a replica, so kfake answers Metadata with an
// offline partition whose replica is on a broker missing from the list.
func TestClusterStatusFailUnhealthy(t *testing.T) {
	kc, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.ClusterID("kfake"))
	if err != nil {
		t.Fatalf("kfake: %v", err)
	}
	t.Cleanup(kc.Close)
	addr := kc.ListenAddrs()[0]
	host, port, _ := net.SplitHostPort(addr)
	portN := int32(atoi(t, port))
	kc.ControlKey(int16(kmsg.Metadata), func(req kmsg.Request) (kmsg.Response, error, bool) {
		kc.KeepControl()
		resp := req.ResponseKind().(*kmsg.MetadataResponse)
		b := kmsg.NewMetadataResponseBroker()
		b.NodeID, b.Host, b.Port = 0, host, portN
		resp.Brokers = append(resp.Brokers, b)
		resp.ControllerID = 0
		rt := kmsg.NewMetadataResponseTopic()
		rt.Topic = kmsg.StringPtr("orders")
		p := kmsg.NewMetadataResponseTopicPartition()
		p.Leader, p.Replicas, p.ISR = -1, []int32{1}, []int32{1}
		p.ErrorCode = kerr.LeaderNotAvailable.Code
		rt.Partitions = append(rt.Partitions, p)
		resp.Topics = append(resp.Topics, rt)
		return resp, nil, true
	})

	var out, errb strings.Builder
	code := run(t.Context(), []string{"-b", addr, "cluster", "status", "--fail-unhealthy"}, strings.NewReader(""), &out, &errb)
	if code != 2 {
		t.Errorf("exit code %d, want 2", code)
	}
	if want := "runnel: cluster unhealthy: 1 offline partition\n"; errb.String() != want {
		t.Errorf("stderr %q, want %q", errb.String(), want)
	}
	if want := "orders  0          none    1         1    offline\n"; !strings.HasSuffix(out.String(), want) {
		t.Errorf("stdout:\n%s\nwant the report first, ending in %q", out.String(), want)
	}
	out.Reset()
	errb.Reset()
	if code := run(t.Context(), []string{"-b", addr, "cluster", "status"}, strings.NewReader(""), &out, &errb); code != 0 {
		t.Errorf("without --fail-unhealthy: exit code %d, want 0; stderr %q", code, errb.String())
	}
}

func atoi(t *testing.T, s string) int {
	t.Helper()
	n, err := strconv.Atoi(s)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestClusterStatusThreeNodes: against a real three-node Runnel cluster,
// the report names the active controller and three nodes; with one node
// stopped the partitions it held are under-replicated (--fail-unhealthy
// exits 2), and once it is back the cluster is healthy again.
func TestClusterStatusThreeNodes(t *testing.T) {
	cl := brokertest.StartCluster(t, 3)
	c := &cli{t: t, addr: strings.Join(cl.Seeds(), ",")}
	c.ok("", "topic", "create", "orders", "--partitions", "3", "--replication-factor", "3")
	healthy := func() clusterStatus {
		t.Helper()
		var st clusterStatus
		deadline := time.Now().Add(30 * time.Second)
		for {
			st = clusterStatusJSON(t, c)
			if st.Healthy && st.Totals.UnderReplicated == 0 && len(st.Nodes) == 3 || time.Now().After(deadline) {
				return st
			}
			time.Sleep(50 * time.Millisecond) // polling a condition
		}
	}
	st := healthy()
	if !st.Healthy || len(st.Nodes) != 3 || st.ControllerID == nil {
		t.Fatalf("a healthy cluster: %+v", st)
	}
	controllers := 0
	for _, n := range st.Nodes {
		if n.Controller {
			controllers++
		}
		if n.Replicas != 3 {
			t.Errorf("node %d holds %d replicas, want 3", n.ID, n.Replicas)
		}
	}
	if controllers != 1 {
		t.Fatalf("%d nodes say they are the controller", controllers)
	}

	cl.Node(3).Stop(t)
	c.addr = strings.Join(cl.Seeds(), ",")
	deadline := time.Now().Add(30 * time.Second)
	for st = clusterStatusJSON(t, c); st.Totals.UnderReplicated < 3 && time.Now().Before(deadline); st = clusterStatusJSON(t, c) {
		time.Sleep(50 * time.Millisecond) // polling a condition
	}
	if st.Healthy || st.Totals.UnderReplicated != 3 || st.Totals.Offline != 0 {
		t.Fatalf("with node 3 stopped: %+v", st)
	}
	var out, errb bytes.Buffer
	if code := run(t.Context(), []string{"-b", c.addr, "cluster", "status", "--fail-unhealthy"}, strings.NewReader(""), &out, &errb); code != 2 {
		t.Fatalf("--fail-unhealthy with a node down: exit code %d, want 2; stderr %q", code, errb.String())
	}

	cl.Restart(3)
	c.addr = strings.Join(cl.Seeds(), ",")
	if st = healthy(); !st.Healthy {
		t.Fatalf("after node 3 returned: %+v", st)
	}
}
