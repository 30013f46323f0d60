package broker_test

// Behaviour of the admin APIs (configs, topics, metadata, cluster) through
// real clients (kmsg requests issued through a kgo client, and raw
// connections), compared with what Kafka 4.0 answers. The data path is in
// api_data_test.go.

import (
	"net"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/runnel-io/runnel/broker/brokertest"
)

// --- configs ----------------------------------------------------------------

func describeConfigs(t *testing.T, cl *kgo.Client, typ kmsg.ConfigResourceType, name string) (map[string]kmsg.DescribeConfigsResponseResourceConfig, int16) {
	t.Helper()
	req := kmsg.NewPtrDescribeConfigsRequest()
	req.IncludeSynonyms = true
	rr := kmsg.NewDescribeConfigsRequestResource()
	rr.ResourceType, rr.ResourceName = typ, name
	req.Resources = append(req.Resources, rr)
	resp, err := req.RequestWith(testCtx(t), cl)
	if err != nil {
		t.Fatalf("DescribeConfigs %v %q: %v", typ, name, err)
	}
	if len(resp.Resources) != 1 {
		t.Fatalf("DescribeConfigs: %d resources", len(resp.Resources))
	}
	out := map[string]kmsg.DescribeConfigsResponseResourceConfig{}
	for _, c := range resp.Resources[0].Configs {
		out[c.Name] = c
	}
	return out, resp.Resources[0].ErrorCode
}

func topicConfigs(t *testing.T, cl *kgo.Client, topic string) map[string]kmsg.DescribeConfigsResponseResourceConfig {
	t.Helper()
	cs, code := describeConfigs(t, cl, kmsg.ConfigResourceTypeTopic, topic)
	if code != 0 {
		t.Fatalf("DescribeConfigs topic %s: %s", topic, errName(code))
	}
	return cs
}

// wantConfig asserts one described config's value and source.
func wantConfig(t *testing.T, cs map[string]kmsg.DescribeConfigsResponseResourceConfig, name, value string, source kmsg.ConfigSource) {
	t.Helper()
	c, ok := cs[name]
	if !ok {
		t.Errorf("config %s not described", name)
		return
	}
	if deref(c.Value) != value || c.Source != source {
		t.Errorf("config %s = %q (%v), want %q (%v)", name, deref(c.Value), c.Source, value, source)
	}
}

type configOp struct {
	op    kmsg.IncrementalAlterConfigOp
	name  string
	value string
}

func incrementalAlter(t *testing.T, cl *kgo.Client, typ kmsg.ConfigResourceType, name string, ops ...configOp) (int16, string) {
	t.Helper()
	req := kmsg.NewPtrIncrementalAlterConfigsRequest()
	rr := kmsg.NewIncrementalAlterConfigsRequestResource()
	rr.ResourceType, rr.ResourceName = typ, name
	for _, o := range ops {
		c := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
		c.Name, c.Op = o.name, o.op
		if o.op != kmsg.IncrementalAlterConfigOpDelete {
			c.Value = kmsg.StringPtr(o.value)
		}
		rr.Configs = append(rr.Configs, c)
	}
	req.Resources = append(req.Resources, rr)
	resp, err := req.RequestWith(testCtx(t), cl)
	if err != nil {
		t.Fatalf("IncrementalAlterConfigs: %v", err)
	}
	return resp.Resources[0].ErrorCode, deref(resp.Resources[0].ErrorMessage)
}

func createTopicWith(t *testing.T, cl *kgo.Client, name string, partitions int32, configs map[string]string) {
	t.Helper()
	req := kmsg.NewPtrCreateTopicsRequest()
	req.TimeoutMillis = 10000
	req.Topics = append(req.Topics, topicReq(name, partitions, 1, configs))
	resp, err := req.RequestWith(testCtx(t), cl)
	if err != nil {
		t.Fatalf("CreateTopics %s: %v", name, err)
	}
	if c := resp.Topics[0].ErrorCode; c != 0 {
		t.Fatalf("CreateTopics %s: %s %s", name, errName(c), deref(resp.Topics[0].ErrorMessage))
	}
}

func TestCreateTopicsValidateOnly(t *testing.T) {
	b := brokertest.Start(t, map[string]string{"auto.create.topics.enable": "false"})
	rc := dialRaw(t, b.Addr())
	got := rc.createTopics(true,
		topicReq("vo-ok", 3, 1, map[string]string{"retention.ms": "60000"}),
		topicReq("vo-bad", 3, 1, map[string]string{"retention.ms": "soon"}),
	)
	if got[0].ErrorCode != 0 || got[0].NumPartitions != 3 || got[0].ReplicationFactor != 1 {
		t.Errorf("validate_only vo-ok: %s, %d partitions, rf %d; want NONE, 3, 1", errName(got[0].ErrorCode), got[0].NumPartitions, got[0].ReplicationFactor)
	}
	if got[1].ErrorCode != kerr.InvalidConfig.Code {
		t.Errorf("validate_only vo-bad: %s, want INVALID_CONFIG", errName(got[1].ErrorCode))
	}
	for _, mt := range metadataFor(t, rc, "vo-ok", "vo-bad").Topics {
		if mt.ErrorCode != kerr.UnknownTopicOrPartition.Code {
			t.Errorf("after validate_only, topic %s: %s, want UNKNOWN_TOPIC_OR_PARTITION", deref(mt.Topic), errName(mt.ErrorCode))
		}
	}
	// The name is still free.
	rc.createTopic("vo-ok", 1, nil)
}

func TestDescribeConfigsTopic(t *testing.T) {
	b := brokertest.Start(t, map[string]string{"log.segment.bytes": "2097152"})
	cl := newClient(t, b)
	createTopicWith(t, cl, "described", 1, map[string]string{"retention.ms": "3600000"})
	cs := topicConfigs(t, cl, "described")

	wantConfig(t, cs, "retention.ms", "3600000", kmsg.ConfigSourceDynamicTopicConfig)
	if syn := cs["retention.ms"].ConfigSynonyms; len(syn) == 0 || syn[0].Name != "retention.ms" || deref(syn[0].Value) != "3600000" || syn[0].Source != kmsg.ConfigSourceDynamicTopicConfig {
		t.Errorf("retention.ms synonyms %+v, want the topic's own value first", syn)
	} else if !slices.ContainsFunc(syn, func(s kmsg.DescribeConfigsResponseResourceConfigConfigSynonym) bool {
		return s.Name == "log.retention.hours" && deref(s.Value) == "168" && s.Source == kmsg.ConfigSourceDefaultConfig
	}) {
		t.Errorf("retention.ms synonyms %+v lack the default log.retention.hours=168", syn)
	}

	wantConfig(t, cs, "segment.bytes", "2097152", kmsg.ConfigSourceStaticBrokerConfig)
	if syn := cs["segment.bytes"].ConfigSynonyms; len(syn) == 0 || syn[0].Name != "log.segment.bytes" || syn[0].Source != kmsg.ConfigSourceStaticBrokerConfig {
		t.Errorf("segment.bytes synonyms %+v, want log.segment.bytes (STATIC_BROKER_CONFIG) first", syn)
	}

	wantConfig(t, cs, "cleanup.policy", "delete", kmsg.ConfigSourceDefaultConfig)
	wantConfig(t, cs, "max.message.bytes", "1048588", kmsg.ConfigSourceDefaultConfig)
	for name, c := range cs {
		if c.ReadOnly {
			t.Errorf("topic config %s is read-only; every topic config can be altered", name)
		}
	}

	// Filtering by name, and an unknown topic.
	req := kmsg.NewPtrDescribeConfigsRequest()
	rr := kmsg.NewDescribeConfigsRequestResource()
	rr.ResourceType, rr.ResourceName, rr.ConfigNames = kmsg.ConfigResourceTypeTopic, "described", []string{"retention.ms"}
	missing := kmsg.NewDescribeConfigsRequestResource()
	missing.ResourceType, missing.ResourceName = kmsg.ConfigResourceTypeTopic, "no-such-topic"
	req.Resources = append(req.Resources, rr, missing)
	resp, err := req.RequestWith(testCtx(t), cl)
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Resources) != 2 || len(resp.Resources[0].Configs) != 1 || resp.Resources[0].Configs[0].Name != "retention.ms" {
		t.Errorf("DescribeConfigs with config names: %+v", resp.Resources)
	} else if resp.Resources[1].ErrorCode != kerr.UnknownTopicOrPartition.Code {
		t.Errorf("DescribeConfigs of a missing topic: %s, want UNKNOWN_TOPIC_OR_PARTITION", errName(resp.Resources[1].ErrorCode))
	}

	// The broker itself: static settings show as STATIC_BROKER_CONFIG.
	bs, code := describeConfigs(t, cl, kmsg.ConfigResourceTypeBroker, "1")
	if code != 0 {
		t.Fatalf("DescribeConfigs broker 1: %s", errName(code))
	}
	wantConfig(t, bs, "log.segment.bytes", "2097152", kmsg.ConfigSourceStaticBrokerConfig)
	wantConfig(t, bs, "log.retention.hours", "168", kmsg.ConfigSourceDefaultConfig)
	if c := bs["node.id"]; !c.ReadOnly {
		t.Errorf("broker config node.id is not read-only")
	}
}

func TestIncrementalAlterConfigsTopic(t *testing.T) {
	b := brokertest.Start(t)
	cl := newClient(t, b)
	createTopicWith(t, cl, "inc", 1, nil)
	const topic = kmsg.ConfigResourceTypeTopic
	set, del := kmsg.IncrementalAlterConfigOpSet, kmsg.IncrementalAlterConfigOpDelete
	appendOp, subtract := kmsg.IncrementalAlterConfigOpAppend, kmsg.IncrementalAlterConfigOpSubtract

	if code, msg := incrementalAlter(t, cl, topic, "inc", configOp{set, "retention.ms", "1000"}, configOp{set, "segment.ms", "600000"}); code != 0 {
		t.Fatalf("SET: %s %s", errName(code), msg)
	}
	cs := topicConfigs(t, cl, "inc")
	wantConfig(t, cs, "retention.ms", "1000", kmsg.ConfigSourceDynamicTopicConfig)
	wantConfig(t, cs, "segment.ms", "600000", kmsg.ConfigSourceDynamicTopicConfig)

	if code, msg := incrementalAlter(t, cl, topic, "inc", configOp{del, "retention.ms", ""}); code != 0 {
		t.Fatalf("DELETE: %s %s", errName(code), msg)
	}
	cs = topicConfigs(t, cl, "inc")
	wantConfig(t, cs, "retention.ms", "604800000", kmsg.ConfigSourceDefaultConfig)
	wantConfig(t, cs, "segment.ms", "600000", kmsg.ConfigSourceDynamicTopicConfig) // untouched

	// APPEND to a list config the topic does not set: Kafka 4.0 appends to
	// the default value (ConfigurationControlManager.getParts), so
	// "delete" + "compact" is "delete,compact".
	if code, msg := incrementalAlter(t, cl, topic, "inc", configOp{appendOp, "cleanup.policy", "compact"}); code != 0 {
		t.Fatalf("APPEND: %s %s", errName(code), msg)
	}
	if got := listConfig(topicConfigs(t, cl, "inc"), "cleanup.policy"); !sameSet(got, []string{"delete", "compact"}) {
		t.Errorf("after APPEND compact to the default cleanup.policy: %q, want delete,compact", got)
	}
	if code, msg := incrementalAlter(t, cl, topic, "inc", configOp{subtract, "cleanup.policy", "delete"}); code != 0 {
		t.Fatalf("SUBTRACT: %s %s", errName(code), msg)
	}
	if got := listConfig(topicConfigs(t, cl, "inc"), "cleanup.policy"); !sameSet(got, []string{"compact"}) {
		t.Errorf("after SUBTRACT delete: cleanup.policy %q, want compact", got)
	}

	// Refusals change nothing.
	for _, bad := range []configOp{
		{appendOp, "retention.ms", "5"},  // not a list
		{set, "retention.ms", "abc"},     // not a number
		{set, "no.such.config", "1"},     // unknown
		{set, "cleanup.policy", "bogus"}, // not allowed
	} {
		code, msg := incrementalAlter(t, cl, topic, "inc", bad)
		if code != kerr.InvalidConfig.Code || !strings.Contains(msg, bad.name) {
			t.Errorf("%v %s=%s: %s %q, want INVALID_CONFIG naming the key", bad.op, bad.name, bad.value, errName(code), msg)
		}
	}
	if code, _ := incrementalAlter(t, cl, topic, "inc", configOp{kmsg.IncrementalAlterConfigOp(9), "retention.ms", "5"}); code != kerr.InvalidRequest.Code {
		t.Errorf("unknown operation 9: %s, want INVALID_REQUEST", errName(code))
	}
	if code, _ := incrementalAlter(t, cl, topic, "no-such-topic", configOp{set, "retention.ms", "5"}); code != kerr.UnknownTopicOrPartition.Code {
		t.Errorf("alter a missing topic: %s, want UNKNOWN_TOPIC_OR_PARTITION", errName(code))
	}
	cs = topicConfigs(t, cl, "inc")
	wantConfig(t, cs, "retention.ms", "604800000", kmsg.ConfigSourceDefaultConfig)
	wantConfig(t, cs, "segment.ms", "600000", kmsg.ConfigSourceDynamicTopicConfig)
}

func listConfig(cs map[string]kmsg.DescribeConfigsResponseResourceConfig, name string) []string {
	var out []string
	for _, v := range strings.Split(deref(cs[name].Value), ",") {
		if v = strings.TrimSpace(v); v != "" {
			out = append(out, v)
		}
	}
	return out
}

func sameSet(a, b []string) bool {
	a, b = slices.Clone(a), slices.Clone(b)
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(a, b)
}

func TestIncrementalAlterConfigsBroker(t *testing.T) {
	b := brokertest.Start(t)
	cl := newClient(t, b)
	createTopicWith(t, cl, "follows-broker", 1, nil)
	const broker = kmsg.ConfigResourceTypeBroker
	set, del := kmsg.IncrementalAlterConfigOpSet, kmsg.IncrementalAlterConfigOpDelete

	// Cluster-wide default.
	if code, msg := incrementalAlter(t, cl, broker, "", configOp{set, "log.retention.ms", "7200000"}); code != 0 {
		t.Fatalf("SET log.retention.ms on broker \"\": %s %s", errName(code), msg)
	}
	bs, _ := describeConfigs(t, cl, broker, "1")
	wantConfig(t, bs, "log.retention.ms", "7200000", kmsg.ConfigSourceDynamicDefaultBrokerConfig)
	wantConfig(t, topicConfigs(t, cl, "follows-broker"), "retention.ms", "7200000", kmsg.ConfigSourceDynamicDefaultBrokerConfig)
	defaults, code := describeConfigs(t, cl, broker, "")
	if code != 0 {
		t.Fatalf("DescribeConfigs broker \"\": %s", errName(code))
	}
	wantConfig(t, defaults, "log.retention.ms", "7200000", kmsg.ConfigSourceDynamicDefaultBrokerConfig)

	// This node's own value wins over the cluster-wide one.
	if code, msg := incrementalAlter(t, cl, broker, "1", configOp{set, "log.retention.ms", "3600000"}); code != 0 {
		t.Fatalf("SET log.retention.ms on broker 1: %s %s", errName(code), msg)
	}
	bs, _ = describeConfigs(t, cl, broker, "1")
	wantConfig(t, bs, "log.retention.ms", "3600000", kmsg.ConfigSourceDynamicBrokerConfig)
	wantConfig(t, topicConfigs(t, cl, "follows-broker"), "retention.ms", "3600000", kmsg.ConfigSourceDynamicBrokerConfig)

	if code, msg := incrementalAlter(t, cl, broker, "1", configOp{del, "log.retention.ms", ""}); code != 0 {
		t.Fatalf("DELETE log.retention.ms on broker 1: %s %s", errName(code), msg)
	}
	bs, _ = describeConfigs(t, cl, broker, "1")
	wantConfig(t, bs, "log.retention.ms", "7200000", kmsg.ConfigSourceDynamicDefaultBrokerConfig)

	// A key that cannot change at runtime is refused. Kafka 4.0 answers
	// INVALID_REQUEST here (ConfigAdminManager.validateBrokerConfigChange,
	// KAFKA-13609); INVALID_CONFIG is the honest code. Either is a refusal.
	for _, name := range []string{"1", ""} {
		code, msg := incrementalAlter(t, cl, broker, name, configOp{set, "auto.create.topics.enable", "false"})
		if (code != kerr.InvalidConfig.Code && code != kerr.InvalidRequest.Code) || !strings.Contains(msg, "auto.create.topics.enable") {
			t.Errorf("SET auto.create.topics.enable on broker %q: %s %q, want a refusal naming the key", name, errName(code), msg)
		}
	}
	bs, _ = describeConfigs(t, cl, broker, "1")
	wantConfig(t, bs, "auto.create.topics.enable", "true", kmsg.ConfigSourceDefaultConfig)
	if code, _ := incrementalAlter(t, cl, broker, "1", configOp{set, "log.retention.ms", "forever"}); code == 0 {
		t.Errorf("SET log.retention.ms=forever was accepted")
	}
}

func TestAlterConfigsReplacesTheSet(t *testing.T) {
	b := brokertest.Start(t)
	cl := newClient(t, b)
	createTopicWith(t, cl, "replaced", 1, map[string]string{"retention.ms": "1000", "segment.ms": "600000"})

	alter := func(configs map[string]string) (int16, string) {
		req := kmsg.NewPtrAlterConfigsRequest()
		rr := kmsg.NewAlterConfigsRequestResource()
		rr.ResourceType, rr.ResourceName = kmsg.ConfigResourceTypeTopic, "replaced"
		for _, k := range sortedKeys(configs) {
			c := kmsg.NewAlterConfigsRequestResourceConfig()
			c.Name, c.Value = k, kmsg.StringPtr(configs[k])
			rr.Configs = append(rr.Configs, c)
		}
		req.Resources = append(req.Resources, rr)
		resp, err := req.RequestWith(testCtx(t), cl)
		if err != nil {
			t.Fatal(err)
		}
		return resp.Resources[0].ErrorCode, deref(resp.Resources[0].ErrorMessage)
	}
	if code, msg := alter(map[string]string{"max.message.bytes": "2000"}); code != 0 {
		t.Fatalf("AlterConfigs: %s %s", errName(code), msg)
	}
	cs := topicConfigs(t, cl, "replaced")
	wantConfig(t, cs, "max.message.bytes", "2000", kmsg.ConfigSourceDynamicTopicConfig)
	wantConfig(t, cs, "retention.ms", "604800000", kmsg.ConfigSourceDefaultConfig)
	wantConfig(t, cs, "segment.ms", "604800000", kmsg.ConfigSourceDefaultConfig)

	if code, msg := alter(map[string]string{"max.message.bytes": "lots"}); code != kerr.InvalidConfig.Code || !strings.Contains(msg, "max.message.bytes") {
		t.Errorf("AlterConfigs with a bad value: %s %q, want INVALID_CONFIG naming the key", errName(code), msg)
	}
	wantConfig(t, topicConfigs(t, cl, "replaced"), "max.message.bytes", "2000", kmsg.ConfigSourceDynamicTopicConfig)
}

// --- metadata and cluster ---------------------------------------------------

func metadataAuto(t *testing.T, rc *rawConn, allow bool, topics ...string) *kmsg.MetadataResponse {
	t.Helper()
	req := kmsg.NewPtrMetadataRequest()
	req.Version = 12
	req.AllowAutoTopicCreation = allow
	for _, n := range topics {
		rt := kmsg.NewMetadataRequestTopic()
		rt.Topic = kmsg.StringPtr(n)
		req.Topics = append(req.Topics, rt)
	}
	return rc.roundTrip(req).(*kmsg.MetadataResponse)
}

func TestAutoCreateTopics(t *testing.T) {
	t.Run("enabled", func(t *testing.T) {
		b := brokertest.Start(t, map[string]string{"auto.create.topics.enable": "true", "num.partitions": "3"})
		rc := dialRaw(t, b.Addr())
		metadataAuto(t, rc, true, "auto-made") // may answer LEADER_NOT_AVAILABLE while creating, as Kafka does
		md := metadataFor(t, rc, "auto-made")
		if mt := md.Topics[0]; mt.ErrorCode != 0 || len(mt.Partitions) != 3 {
			t.Fatalf("auto-created topic: %s with %d partitions, want 3 (num.partitions)", errName(mt.ErrorCode), len(mt.Partitions))
		}
		if p := rc.produce("auto-made", 2, batchOf("x")); p.ErrorCode != 0 {
			t.Fatalf("produce to the auto-created topic: %s", errName(p.ErrorCode))
		}
		// A client that does not allow auto-creation does not get it.
		if mt := metadataAuto(t, rc, false, "not-allowed").Topics[0]; mt.ErrorCode != kerr.UnknownTopicOrPartition.Code {
			t.Errorf("allow_auto_topic_creation=false: %s", errName(mt.ErrorCode))
		}
		if mt := metadataFor(t, rc, "not-allowed").Topics[0]; mt.ErrorCode != kerr.UnknownTopicOrPartition.Code {
			t.Errorf("topic created although the client did not allow it")
		}
		// An illegal name is not created.
		if mt := metadataAuto(t, rc, true, "bad name").Topics[0]; mt.ErrorCode != kerr.InvalidTopicException.Code {
			t.Errorf("auto-create %q: %s, want INVALID_TOPIC_EXCEPTION", "bad name", errName(mt.ErrorCode))
		}
	})
	t.Run("disabled", func(t *testing.T) {
		b := brokertest.Start(t, map[string]string{"auto.create.topics.enable": "false"})
		rc := dialRaw(t, b.Addr())
		if mt := metadataAuto(t, rc, true, "not-made").Topics[0]; mt.ErrorCode != kerr.UnknownTopicOrPartition.Code {
			t.Fatalf("auto.create.topics.enable=false: %s, want UNKNOWN_TOPIC_OR_PARTITION", errName(mt.ErrorCode))
		}
		if mt := metadataFor(t, rc, "not-made").Topics[0]; mt.ErrorCode != kerr.UnknownTopicOrPartition.Code {
			t.Fatalf("topic was created with auto.create.topics.enable=false")
		}
		if p := rc.produce("not-made", 0, batchOf("x")); p.ErrorCode != kerr.UnknownTopicOrPartition.Code {
			t.Fatalf("produce to a missing topic: %s", errName(p.ErrorCode))
		}
	})
}

func TestDescribeCluster(t *testing.T) {
	b := brokertest.Start(t)
	rc := dialRaw(t, b.Addr())
	md := metadataFor(t, rc)
	describe := func(version int16, endpoint int8) *kmsg.DescribeClusterResponse {
		req := kmsg.NewPtrDescribeClusterRequest()
		req.Version = version
		req.EndpointType = endpoint
		return rc.roundTrip(req).(*kmsg.DescribeClusterResponse)
	}
	resp := describe(1, 1)
	if resp.ErrorCode != 0 {
		t.Fatalf("DescribeCluster: %s", errName(resp.ErrorCode))
	}
	if resp.ClusterID != deref(md.ClusterID) || resp.ClusterID == "" {
		t.Errorf("cluster id %q, metadata says %q", resp.ClusterID, deref(md.ClusterID))
	}
	if resp.ControllerID != 1 || resp.EndpointType != 1 {
		t.Errorf("controller %d, endpoint type %d; want 1, 1", resp.ControllerID, resp.EndpointType)
	}
	host, port, _ := net.SplitHostPort(b.Addr())
	if len(resp.Brokers) != 1 || resp.Brokers[0].NodeID != 1 || resp.Brokers[0].Host != host || strconv.Itoa(int(resp.Brokers[0].Port)) != port {
		t.Errorf("brokers %+v, want node 1 at %s", resp.Brokers, b.Addr())
	}
	if v0 := describe(0, 0); v0.ErrorCode != 0 || v0.ClusterID != resp.ClusterID {
		t.Errorf("DescribeCluster v0: %s, cluster %q", errName(v0.ErrorCode), v0.ClusterID)
	}
	// Kafka (AuthHelper.computeDescribeClusterResponse): asking a broker
	// listener for controllers is MISMATCHED_ENDPOINT_TYPE; an endpoint type
	// that does not exist is UNSUPPORTED_ENDPOINT_TYPE.
	if r := describe(1, 2); r.ErrorCode != kerr.MismatchedEndpointType.Code {
		t.Errorf("DescribeCluster for controllers: %s, want MISMATCHED_ENDPOINT_TYPE", errName(r.ErrorCode))
	}
	if r := describe(1, 9); r.ErrorCode != kerr.UnsupportedEndpointType.Code {
		t.Errorf("DescribeCluster for endpoint type 9: %s, want UNSUPPORTED_ENDPOINT_TYPE", errName(r.ErrorCode))
	}
}

func TestOffsetForLeaderEpoch(t *testing.T) {
	b := brokertest.Start(t)
	rc := dialRaw(t, b.Addr())
	rc.createTopic("epochs", 1, nil)
	epoch := metadataFor(t, rc, "epochs").Topics[0].Partitions[0].LeaderEpoch
	ask := func(leaderEpoch, current int32) kmsg.OffsetForLeaderEpochResponseTopicPartition {
		return offsetForLeaderEpoch(t, rc, "epochs", 0, leaderEpoch, current)
	}
	// An empty partition: the leader's epoch starts at offset 0 (Kafka
	// caches the epoch start when the replica becomes leader).
	if p := ask(epoch, epoch); p.ErrorCode != 0 || p.LeaderEpoch != epoch || p.EndOffset != 0 {
		t.Errorf("empty partition, epoch %d: %s epoch %d end %d; want epoch %d end 0", epoch, errName(p.ErrorCode), p.LeaderEpoch, p.EndOffset, epoch)
	}
	rc.produce("epochs", 0, batchOf("a", "b", "c"))
	if p := ask(epoch, epoch); p.ErrorCode != 0 || p.LeaderEpoch != epoch || p.EndOffset != 3 {
		t.Errorf("epoch %d: %s epoch %d end %d; want epoch %d end 3", epoch, errName(p.ErrorCode), p.LeaderEpoch, p.EndOffset, epoch)
	}
	if p := ask(epoch+5, -1); p.ErrorCode != 0 || p.LeaderEpoch != -1 || p.EndOffset != -1 {
		t.Errorf("epoch %d above any known: %s epoch %d end %d; want -1, -1", epoch+5, errName(p.ErrorCode), p.LeaderEpoch, p.EndOffset)
	}
	if p := ask(epoch, epoch+1); p.ErrorCode != kerr.UnknownLeaderEpoch.Code {
		t.Errorf("current leader epoch %d (leader's %d): %s, want UNKNOWN_LEADER_EPOCH", epoch+1, epoch, errName(p.ErrorCode))
	}
	// Batches are stamped with the leader epoch.
	sp := fetchPartition(t, rc.roundTrip(fetchReq("epochs", 0, 0, -1, 0, 0)).(*kmsg.FetchResponse))
	var kb kmsg.RecordBatch
	if err := kb.ReadFrom(sp.RecordBatches); err != nil || kb.PartitionLeaderEpoch != epoch {
		t.Errorf("stored batch leader epoch %d (%v), want %d", kb.PartitionLeaderEpoch, err, epoch)
	}
}

func offsetForLeaderEpoch(t *testing.T, rc *rawConn, topic string, part, leaderEpoch, current int32) kmsg.OffsetForLeaderEpochResponseTopicPartition {
	t.Helper()
	req := kmsg.NewPtrOffsetForLeaderEpochRequest()
	req.Version = 4
	req.ReplicaID = -1
	rt := kmsg.NewOffsetForLeaderEpochRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewOffsetForLeaderEpochRequestTopicPartition()
	rp.Partition, rp.LeaderEpoch, rp.CurrentLeaderEpoch = part, leaderEpoch, current
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	return rc.roundTrip(req).(*kmsg.OffsetForLeaderEpochResponse).Topics[0].Partitions[0]
}
