package broker_test

// Behaviour of the admin and data APIs through real clients (kgo, kadm,
// and kmsg requests issued through a kgo client), compared with what Kafka
// 4.0 answers.

import (
	"encoding/binary"
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/runnel-io/runnel/broker"
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

// --- offsets ----------------------------------------------------------------

// listOffset asks ListOffsets (v8) for one partition.
func listOffset(t *testing.T, cl *kgo.Client, topic string, part int32, ts int64) (offset, timestamp int64) {
	t.Helper()
	req := kmsg.NewPtrListOffsetsRequest()
	req.ReplicaID = -1
	rt := kmsg.NewListOffsetsRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewListOffsetsRequestTopicPartition()
	rp.Partition, rp.Timestamp, rp.CurrentLeaderEpoch = part, ts, -1
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(testCtx(t), cl)
	if err != nil {
		t.Fatalf("ListOffsets: %v", err)
	}
	sp := resp.Topics[0].Partitions[0]
	if sp.ErrorCode != 0 {
		t.Fatalf("ListOffsets %s-%d at %d: %s", topic, part, ts, errName(sp.ErrorCode))
	}
	return sp.Offset, sp.Timestamp
}

func produceSync(t *testing.T, cl *kgo.Client, rs ...*kgo.Record) {
	t.Helper()
	if err := cl.ProduceSync(testCtx(t), rs...).FirstErr(); err != nil {
		t.Fatalf("produce: %v", err)
	}
}

func TestListOffsets(t *testing.T) {
	b := brokertest.Start(t)
	cl := newClient(t, b, kgo.DefaultProduceTopic("times"))
	createTopicWith(t, cl, "times", 1, nil)
	base := time.Now().Add(-3 * time.Hour).Truncate(time.Millisecond)
	// One batch each; timestamps not in offset order: offset 1 has the max.
	tss := []time.Time{base, base.Add(2 * time.Hour), base.Add(time.Hour)}
	for i, ts := range tss {
		produceSync(t, cl, &kgo.Record{Value: []byte(strconv.Itoa(i)), Timestamp: ts})
	}
	ms := func(t time.Time) int64 { return t.UnixMilli() }

	if off, _ := listOffset(t, cl, "times", 0, -2); off != 0 {
		t.Errorf("earliest: %d, want 0", off)
	}
	if off, _ := listOffset(t, cl, "times", 0, -1); off != 3 {
		t.Errorf("latest: %d, want 3", off)
	}
	if off, ts := listOffset(t, cl, "times", 0, -3); off != 1 || ts != ms(tss[1]) {
		t.Errorf("max timestamp: offset %d ts %d, want 1 at %d", off, ts, ms(tss[1]))
	}
	for _, c := range []struct {
		at         int64
		off, tsOut int64
	}{
		{ms(base) - 1000, 0, ms(tss[0])},             // before everything: the first record
		{ms(base), 0, ms(tss[0])},                    // exactly the first
		{ms(base) + 1, 1, ms(tss[1])},                // offset 1 is the first at or after, though offset 2 is closer in time
		{ms(base.Add(time.Hour)), 1, ms(tss[1])},     // exactly offset 2's time: offset 1 still comes first
		{ms(base.Add(2 * time.Hour)), 1, ms(tss[1])}, // exactly the max
		{ms(base.Add(2*time.Hour)) + 1, -1, -1},      // after the max timestamp: none
		{ms(time.Now().Add(time.Hour)), -1, -1},      // the future
	} {
		if off, ts := listOffset(t, cl, "times", 0, c.at); off != c.off || ts != c.tsOut {
			t.Errorf("ListOffsets at %d: offset %d ts %d, want %d at %d", c.at, off, ts, c.off, c.tsOut)
		}
	}
}

func TestDeleteRecordsMovesLogStart(t *testing.T) {
	b := brokertest.Start(t)
	cl := newClient(t, b, kgo.DefaultProduceTopic("trimmed"))
	createTopicWith(t, cl, "trimmed", 1, nil)
	for i := range 10 {
		produceSync(t, cl, &kgo.Record{Value: []byte(strconv.Itoa(i))})
	}
	adm := newAdmin(t, b)
	res, err := adm.DeleteRecords(testCtx(t), offsetsFor("trimmed", 0, 4))
	if err != nil {
		t.Fatal(err)
	}
	if r, ok := res.Lookup("trimmed", 0); !ok || r.Err != nil || r.LowWatermark != 4 {
		t.Fatalf("DeleteRecords: %+v (found %v), want low watermark 4", r, ok)
	}
	if off, _ := listOffset(t, cl, "trimmed", 0, -2); off != 4 {
		t.Errorf("earliest after DeleteRecords: %d, want 4", off)
	}
	got := consume(t, b, "trimmed", 6)
	if got[0].Offset != 4 || string(got[0].Value) != "4" || string(got[5].Value) != "9" {
		t.Errorf("consumer from the start began at offset %d (%q), want 4", got[0].Offset, got[0].Value)
	}
	rc := dialRaw(t, b.Addr())
	if sp := fetchPartition(t, rc.roundTrip(fetchReq("trimmed", 0, 2, -1, 0, 0)).(*kmsg.FetchResponse)); sp.ErrorCode != kerr.OffsetOutOfRange.Code || sp.LogStartOffset != 4 {
		t.Errorf("fetch below the log start: %s, log start %d; want OFFSET_OUT_OF_RANGE, 4", errName(sp.ErrorCode), sp.LogStartOffset)
	}
	// Deleting below the log start again is no error and changes nothing.
	res, err = adm.DeleteRecords(testCtx(t), offsetsFor("trimmed", 0, 2))
	if r, _ := res.Lookup("trimmed", 0); err != nil || r.Err != nil || r.LowWatermark != 4 {
		t.Errorf("DeleteRecords below the log start: %+v %v, want low watermark 4", r, err)
	}
}

func TestDeleteTopicThenRecreateStartsEmpty(t *testing.T) {
	b := brokertest.Start(t, map[string]string{"auto.create.topics.enable": "false"})
	rc := dialRaw(t, b.Addr())
	rc.createTopic("phoenix", 1, map[string]string{"retention.ms": "123456"})
	rc.produce("phoenix", 0, batchOf("old-1", "old-2", "old-3"))
	oldID := metadataFor(t, rc, "phoenix").Topics[0].TopicID

	req := kmsg.NewPtrDeleteTopicsRequest()
	req.Version = 6
	req.TimeoutMillis = 10000
	dt := kmsg.NewDeleteTopicsRequestTopic()
	dt.Topic = kmsg.StringPtr("phoenix")
	req.Topics = append(req.Topics, dt)
	if resp := rc.roundTrip(req).(*kmsg.DeleteTopicsResponse); resp.Topics[0].ErrorCode != 0 {
		t.Fatalf("DeleteTopics: %s", errName(resp.Topics[0].ErrorCode))
	}
	if md := metadataFor(t, rc, "phoenix"); md.Topics[0].ErrorCode != kerr.UnknownTopicOrPartition.Code {
		t.Fatalf("deleted topic: %s", errName(md.Topics[0].ErrorCode))
	}
	if p := rc.produce("phoenix", 0, batchOf("ghost")); p.ErrorCode != kerr.UnknownTopicOrPartition.Code {
		t.Fatalf("produce to the deleted topic: %s", errName(p.ErrorCode))
	}

	rc.createTopic("phoenix", 1, nil)
	md := metadataFor(t, rc, "phoenix")
	if md.Topics[0].TopicID == oldID {
		t.Errorf("recreated topic kept the old topic id")
	}
	if got := rc.readAll("phoenix", 0, 0); len(got) != 0 {
		t.Fatalf("recreated topic holds %d old records: %v", len(got), got)
	}
	if p := rc.produce("phoenix", 0, batchOf("new")); p.ErrorCode != 0 || p.BaseOffset != 0 {
		t.Fatalf("first produce to the recreated topic: %s at %d, want NONE at 0", errName(p.ErrorCode), p.BaseOffset)
	}
	if got := values(rc.readAll("phoenix", 0, 0)); !slices.Equal(got, []string{"new"}) {
		t.Fatalf("recreated topic: %q", got)
	}
	cl := newClient(t, b)
	wantConfig(t, topicConfigs(t, cl, "phoenix"), "retention.ms", "604800000", kmsg.ConfigSourceDefaultConfig)
}

func offsetsFor(topic string, part int32, at int64) kadm.Offsets {
	var os kadm.Offsets
	os.AddOffset(topic, part, at, -1)
	return os
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

// --- idempotent producers ---------------------------------------------------

func initProducerID(t *testing.T, rc *rawConn) (int64, int16) {
	t.Helper()
	req := kmsg.NewPtrInitProducerIDRequest()
	req.Version = 4
	req.TransactionTimeoutMillis = 60000
	req.ProducerID, req.ProducerEpoch = -1, -1
	resp := rc.roundTrip(req).(*kmsg.InitProducerIDResponse)
	if resp.ErrorCode != 0 || resp.ProducerID < 0 {
		t.Fatalf("InitProducerID: %s id %d", errName(resp.ErrorCode), resp.ProducerID)
	}
	return resp.ProducerID, resp.ProducerEpoch
}

func idempotentBatch(pid int64, epoch int16, seq int32, values ...string) []byte {
	kb := newBatch(time.Now().UnixMilli(), recs(values...))
	kb.ProducerID, kb.ProducerEpoch, kb.FirstSequence = pid, epoch, seq
	return encodeBatch(kb)
}

func TestIdempotentProducerDedupes(t *testing.T) {
	b := brokertest.Start(t)
	rc := dialRaw(t, b.Addr())
	rc.createTopic("idem", 1, nil)
	pid, epoch := initProducerID(t, rc)

	first := idempotentBatch(pid, epoch, 0, "a", "b", "c")
	if p := rc.produce("idem", 0, slices.Clone(first)); p.ErrorCode != 0 || p.BaseOffset != 0 {
		t.Fatalf("first batch: %s at %d", errName(p.ErrorCode), p.BaseOffset)
	}
	second := idempotentBatch(pid, epoch, 3, "d")
	if p := rc.produce("idem", 0, slices.Clone(second)); p.ErrorCode != 0 || p.BaseOffset != 3 {
		t.Fatalf("second batch: %s at %d", errName(p.ErrorCode), p.BaseOffset)
	}
	// A retry of either batch (same producer, epoch and sequences) gets the
	// original offsets and is not stored again.
	for _, c := range []struct {
		batch []byte
		base  int64
	}{{first, 0}, {second, 3}} {
		if p := rc.produce("idem", 0, slices.Clone(c.batch)); p.ErrorCode != 0 || p.BaseOffset != c.base {
			t.Errorf("duplicate batch: %s at %d, want NONE at the original %d", errName(p.ErrorCode), p.BaseOffset, c.base)
		}
	}
	// A gap in the sequence is refused.
	if p := rc.produce("idem", 0, idempotentBatch(pid, epoch, 7, "gap")); p.ErrorCode != kerr.OutOfOrderSequenceNumber.Code {
		t.Errorf("sequence gap: %s, want OUT_OF_ORDER_SEQUENCE_NUMBER", errName(p.ErrorCode))
	}
	if p := rc.produce("idem", 0, idempotentBatch(pid, epoch, 4, "e")); p.ErrorCode != 0 || p.BaseOffset != 4 {
		t.Errorf("next in sequence: %s at %d, want NONE at 4", errName(p.ErrorCode), p.BaseOffset)
	}
	if got := values(rc.readAll("idem", 0, 0)); !slices.Equal(got, []string{"a", "b", "c", "d", "e"}) {
		t.Fatalf("log holds %q, want a b c d e once each", got)
	}
}

func TestIdempotentProducerStateSurvivesRestart(t *testing.T) {
	b := brokertest.Start(t)
	rc := dialRaw(t, b.Addr())
	rc.createTopic("idem-restart", 1, nil)
	pid, epoch := initProducerID(t, rc)
	last := idempotentBatch(pid, epoch, 2, "c")
	rc.produce("idem-restart", 0, idempotentBatch(pid, epoch, 0, "a", "b"))
	if p := rc.produce("idem-restart", 0, slices.Clone(last)); p.ErrorCode != 0 || p.BaseOffset != 2 {
		t.Fatalf("last batch: %s at %d", errName(p.ErrorCode), p.BaseOffset)
	}

	b.Stop(t)
	b2 := brokertest.StartWith(t, broker.Config{Settings: b.Settings})
	rc2 := dialRaw(t, b2.Addr())
	if p := rc2.produce("idem-restart", 0, slices.Clone(last)); p.ErrorCode != 0 || p.BaseOffset != 2 {
		t.Errorf("duplicate after restart: %s at %d, want NONE at the original 2", errName(p.ErrorCode), p.BaseOffset)
	}
	if p := rc2.produce("idem-restart", 0, idempotentBatch(pid, epoch, 5, "gap")); p.ErrorCode != kerr.OutOfOrderSequenceNumber.Code {
		t.Errorf("sequence gap after restart: %s, want OUT_OF_ORDER_SEQUENCE_NUMBER", errName(p.ErrorCode))
	}
	if p := rc2.produce("idem-restart", 0, idempotentBatch(pid, epoch, 3, "d")); p.ErrorCode != 0 || p.BaseOffset != 3 {
		t.Errorf("next in sequence after restart: %s at %d, want NONE at 3", errName(p.ErrorCode), p.BaseOffset)
	}
	if got := values(rc2.readAll("idem-restart", 0, 0)); !slices.Equal(got, []string{"a", "b", "c", "d"}) {
		t.Fatalf("log after restart holds %q", got)
	}
	// A second, clean restart: the state is saved again.
	b2.Stop(t)
	b3 := brokertest.StartWith(t, broker.Config{Settings: b.Settings})
	rc3 := dialRaw(t, b3.Addr())
	if p := rc3.produce("idem-restart", 0, idempotentBatch(pid, epoch, 3, "d")); p.ErrorCode != 0 || p.BaseOffset != 3 {
		t.Errorf("duplicate after the second restart: %s at %d, want NONE at 3", errName(p.ErrorCode), p.BaseOffset)
	}
}

// --- restarts ---------------------------------------------------------------

func TestRestartKeepsDataAndTopicConfigs(t *testing.T) {
	b := brokertest.Start(t)
	rc := dialRaw(t, b.Addr())
	rc.createTopic("durable", 2, map[string]string{"retention.ms": "7654321", "cleanup.policy": "compact,delete"})
	rc.produce("durable", 0, batchOf("p0-a", "p0-b"))
	rc.produce("durable", 1, batchOf("p1-a"))
	rc.produce("durable", 0, batchOf("p0-c"))
	cl := newClient(t, b)
	if code, msg := incrementalAlter(t, cl, kmsg.ConfigResourceTypeTopic, "durable", configOp{kmsg.IncrementalAlterConfigOpSet, "max.message.bytes", "5000"}); code != 0 {
		t.Fatalf("alter: %s %s", errName(code), msg)
	}
	oldID := metadataFor(t, rc, "durable").Topics[0].TopicID

	b.Stop(t)
	b2 := brokertest.StartWith(t, broker.Config{Settings: b.Settings})
	rc2 := dialRaw(t, b2.Addr())
	md := metadataFor(t, rc2, "durable")
	if mt := md.Topics[0]; mt.ErrorCode != 0 || len(mt.Partitions) != 2 || mt.TopicID != oldID {
		t.Fatalf("after restart: %s, %d partitions, same id %v", errName(mt.ErrorCode), len(mt.Partitions), mt.TopicID == oldID)
	}
	if got := values(rc2.readAll("durable", 0, 0)); !slices.Equal(got, []string{"p0-a", "p0-b", "p0-c"}) {
		t.Errorf("partition 0 after restart: %q", got)
	}
	if got := values(rc2.readAll("durable", 1, 0)); !slices.Equal(got, []string{"p1-a"}) {
		t.Errorf("partition 1 after restart: %q", got)
	}
	// The leader-epoch cache survives too.
	epoch := md.Topics[0].Partitions[0].LeaderEpoch
	if p := offsetForLeaderEpoch(t, rc2, "durable", 0, epoch, -1); p.ErrorCode != 0 || p.LeaderEpoch != epoch || p.EndOffset != 3 {
		t.Errorf("OffsetForLeaderEpoch %d after restart: %s epoch %d end %d, want epoch %d end 3", epoch, errName(p.ErrorCode), p.LeaderEpoch, p.EndOffset, epoch)
	}
	cs := topicConfigs(t, newClient(t, b2), "durable")
	wantConfig(t, cs, "retention.ms", "7654321", kmsg.ConfigSourceDynamicTopicConfig)
	wantConfig(t, cs, "max.message.bytes", "5000", kmsg.ConfigSourceDynamicTopicConfig)
	if got := listConfig(cs, "cleanup.policy"); !sameSet(got, []string{"compact", "delete"}) {
		t.Errorf("cleanup.policy after restart: %q", got)
	}
	if p := rc2.produce("durable", 0, batchOf("p0-d")); p.ErrorCode != 0 || p.BaseOffset != 3 {
		t.Errorf("produce after restart: %s at %d, want NONE at 3", errName(p.ErrorCode), p.BaseOffset)
	}
	// max.message.bytes still applies.
	if p := rc2.produce("durable", 1, encodeBatch(newBatch(time.Now().UnixMilli(), []rec{{key: []byte("k"), value: make([]byte, 6000)}}))); p.ErrorCode != kerr.MessageTooLarge.Code {
		t.Errorf("oversized batch after restart: %s, want MESSAGE_TOO_LARGE", errName(p.ErrorCode))
	}
}

// --- fetch ------------------------------------------------------------------

func TestFetchLongPollReturnsWhenDataArrives(t *testing.T) {
	b := brokertest.Start(t)
	rc := dialRaw(t, b.Addr())
	rc.createTopic("poll", 1, nil)
	rc.produce("poll", 0, batchOf("before"))

	type result struct {
		resp *kmsg.FetchResponse
		err  error
	}
	done := make(chan result, 1)
	fetcher := dialRaw(t, b.Addr())
	corr := fetcher.send(fetchReq("poll", 0, 1, -1, 10000, 1)) // at the log end; wait up to 10s
	start := time.Now()
	go func() {
		resp := kmsg.NewPtrFetchResponse()
		resp.Version = 12
		f, err := fetcher.readFrame()
		switch {
		case err != nil:
		case int32(binary.BigEndian.Uint32(f)) != corr:
			err = fmt.Errorf("correlation id %d, want %d", int32(binary.BigEndian.Uint32(f)), corr)
		case len(f) < 5 || f[4] != 0:
			err = fmt.Errorf("bad response header tags")
		default:
			err = resp.ReadFrom(f[5:])
		}
		done <- result{resp, err}
	}()

	rc.produce("poll", 0, batchOf("wake-up"))
	select {
	case r := <-done:
		if r.err != nil {
			t.Fatalf("long-poll fetch: %v", r.err)
		}
		if elapsed := time.Since(start); elapsed > 5*time.Second {
			t.Errorf("long-poll fetch returned after %v; it should return as soon as a record arrives", elapsed)
		}
		sp := fetchPartition(t, r.resp)
		if got := values(parseBatches(t, sp.RecordBatches)); !slices.Equal(got, []string{"wake-up"}) || sp.ErrorCode != 0 {
			t.Fatalf("long-poll fetch: %s, records %q", errName(sp.ErrorCode), got)
		}
	case <-time.After(8 * time.Second):
		t.Fatalf("long-poll fetch with max_wait 10s did not return within 8s of a produce")
	}
}

func TestFetchMaxWaitExpiresEmpty(t *testing.T) {
	b := brokertest.Start(t)
	rc := dialRaw(t, b.Addr())
	rc.createTopic("idle", 1, nil)
	start := time.Now()
	sp := fetchPartition(t, rc.roundTrip(fetchReq("idle", 0, 0, -1, 300, 1)).(*kmsg.FetchResponse))
	if elapsed := time.Since(start); elapsed < 250*time.Millisecond {
		t.Errorf("fetch with max_wait 300ms and nothing to read returned after %v", elapsed)
	}
	if sp.ErrorCode != 0 || len(sp.RecordBatches) != 0 || sp.HighWatermark != 0 {
		t.Errorf("idle fetch: %s, %d bytes, high watermark %d", errName(sp.ErrorCode), len(sp.RecordBatches), sp.HighWatermark)
	}
}

// --- timestamps -------------------------------------------------------------

func TestLogAppendTimeTopic(t *testing.T) {
	b := brokertest.Start(t)
	rc := dialRaw(t, b.Addr())
	rc.createTopic("lat", 1, map[string]string{"message.timestamp.type": "LogAppendTime"})
	old := time.Date(2001, 1, 1, 0, 0, 0, 0, time.UTC).UnixMilli()
	before := time.Now().UnixMilli()
	p := rc.produce("lat", 0, encodeBatch(newBatch(old, []rec{{key: []byte("k"), value: []byte("v1")}, {key: []byte("k"), value: []byte("v2"), tsDelta: 5}})))
	after := time.Now().UnixMilli()
	if p.ErrorCode != 0 {
		t.Fatalf("produce: %s", errName(p.ErrorCode))
	}
	if p.LogAppendTime < before || p.LogAppendTime > after {
		t.Errorf("produce response log append time %d, want within [%d, %d]", p.LogAppendTime, before, after)
	}
	for _, r := range consume(t, b, "lat", 2) {
		if ms := r.Timestamp.UnixMilli(); ms != p.LogAppendTime {
			t.Errorf("record %d timestamp %d, want the broker's %d", r.Offset, ms, p.LogAppendTime)
		}
		if r.Attrs.TimestampType() != 1 {
			t.Errorf("record %d timestamp type %d, want 1 (LogAppendTime)", r.Offset, r.Attrs.TimestampType())
		}
	}
	// A CreateTime topic keeps the producer's time.
	rc.createTopic("ct", 1, nil)
	ts := time.Now().Add(-time.Minute).UnixMilli()
	if p := rc.produce("ct", 0, encodeBatch(newBatch(ts, recs("x")))); p.ErrorCode != 0 || p.LogAppendTime != -1 {
		t.Fatalf("CreateTime produce: %s, log append time %d (want -1)", errName(p.ErrorCode), p.LogAppendTime)
	}
	if got := rc.readAll("ct", 0, 0); len(got) != 1 || got[0].Timestamp != ts {
		t.Errorf("CreateTime record: %+v, want timestamp %d", got, ts)
	}
}
