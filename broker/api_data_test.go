package broker_test

// Behaviour of the data path through real clients and raw requests:
// offsets, idempotent producers, restarts, long polls, timestamps, topic
// lifecycle under load and retention, compared with what Kafka 4.0 does.

import (
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/runnel-io/runnel/broker"
	"github.com/runnel-io/runnel/broker/brokertest"
)

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
	waitDispatched(t, fetcher, rc, "poll-marker")
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

// --- topic lifecycle under load -------------------------------------------

func TestCreatePartitionsThenProduceToTheNewOnes(t *testing.T) {
	b := brokertest.Start(t)
	rc := dialRaw(t, b.Addr())
	rc.createTopic("grows", 1, nil)
	req := kmsg.NewPtrCreatePartitionsRequest()
	req.TimeoutMillis = 10000
	rt := kmsg.NewCreatePartitionsRequestTopic()
	rt.Topic, rt.Count = "grows", 4
	req.Topics = append(req.Topics, rt)
	if resp := rc.roundTrip(req).(*kmsg.CreatePartitionsResponse); resp.Topics[0].ErrorCode != 0 {
		t.Fatalf("CreatePartitions to 4: %s %s", errName(resp.Topics[0].ErrorCode), deref(resp.Topics[0].ErrorMessage))
	}
	if n := len(metadataFor(t, rc, "grows").Topics[0].Partitions); n != 4 {
		t.Fatalf("after CreatePartitions: %d partitions, want 4", n)
	}
	for part := range int32(4) {
		if p := rc.produce("grows", part, batchOf("to-"+strconv.Itoa(int(part)))); p.ErrorCode != 0 || p.BaseOffset != 0 {
			t.Errorf("produce to partition %d: %s at %d", part, errName(p.ErrorCode), p.BaseOffset)
		}
	}
}

// waitDispatched returns once every request sent so far on c has been
// dispatched: c's requests are read in order, so it sends a CreateTopics for
// marker after them and polls (on other) until the topic exists. A fetch
// sent before is then waiting (a metadata commit has passed since).
func waitDispatched(t *testing.T, c, other *rawConn, marker string) {
	t.Helper()
	req := kmsg.NewPtrCreateTopicsRequest()
	req.Version = 7
	req.TimeoutMillis = 10000
	req.Topics = append(req.Topics, topicReq(marker, 1, 1, nil))
	c.send(req)
	for deadline := time.Now().Add(ioTimeout); metadataFor(t, other, marker).Topics[0].ErrorCode != 0; {
		if time.Now().After(deadline) {
			t.Fatalf("marker topic %s not created within %v", marker, ioTimeout)
		}
	}
}

// Kafka completes a waiting fetch at once when a partition it waits on goes
// away (DelayedFetch.tryComplete, case A), rather than at max_wait.
func TestFetchWaitingOnADeletedTopicReturnsPromptly(t *testing.T) {
	b := brokertest.Start(t, map[string]string{"auto.create.topics.enable": "false"})
	rc := dialRaw(t, b.Addr())
	rc.createTopic("doomed", 1, nil)
	fetcher := dialRaw(t, b.Addr())
	corr := fetcher.send(fetchReq("doomed", 0, 0, -1, 6000, 1))
	start := time.Now()
	waitDispatched(t, fetcher, rc, "doomed-marker")
	done := make(chan error, 1)
	resp := kmsg.NewPtrFetchResponse()
	resp.Version = 12
	go func() {
		f, err := fetcher.readFrame()
		if err == nil {
			if got := int32(binary.BigEndian.Uint32(f)); got != corr || len(f) < 5 {
				err = fmt.Errorf("correlation id %d, want %d", got, corr)
			} else {
				err = resp.ReadFrom(f[5:])
			}
		}
		done <- err
	}()

	del := kmsg.NewPtrDeleteTopicsRequest()
	del.Version = 6
	del.TimeoutMillis = 10000
	dt := kmsg.NewDeleteTopicsRequestTopic()
	dt.Topic = kmsg.StringPtr("doomed")
	del.Topics = append(del.Topics, dt)
	if r := rc.roundTrip(del).(*kmsg.DeleteTopicsResponse); r.Topics[0].ErrorCode != 0 {
		t.Fatalf("DeleteTopics: %s", errName(r.Topics[0].ErrorCode))
	}
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("fetch: %v", err)
		}
		if elapsed := time.Since(start); elapsed > 3*time.Second {
			t.Errorf("fetch on a deleted topic returned after %v, at its max_wait; want promptly", elapsed)
		}
		sp := fetchPartition(t, resp)
		if sp.ErrorCode != kerr.UnknownTopicOrPartition.Code && sp.ErrorCode != kerr.NotLeaderForPartition.Code {
			t.Errorf("fetch on a deleted topic: %s, want UNKNOWN_TOPIC_OR_PARTITION or NOT_LEADER_OR_FOLLOWER", errName(sp.ErrorCode))
		}
	case <-time.After(4 * time.Second):
		t.Fatalf("fetch waiting on a deleted topic did not return within 4s (it waits for its 6s max_wait)")
	}
}

// Producers keep writing while the topic is deleted and recreated under
// them: every answer is a success or UNKNOWN_TOPIC_OR_PARTITION (or
// NOT_LEADER_OR_FOLLOWER for a partition closing under the append), and the
// broker stays healthy and consistent.
func TestProduceWhileTopicIsDeletedAndRecreated(t *testing.T) {
	b := brokertest.Start(t, map[string]string{"auto.create.topics.enable": "false"})
	admin := dialRaw(t, b.Addr())
	admin.createTopic("churn", 2, nil)

	stop := make(chan struct{})
	errs := make(chan error, 4)
	for w := range 4 {
		c, err := net.DialTimeout("tcp", b.Addr(), ioTimeout)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		go func() {
			var corr int32
			for {
				select {
				case <-stop:
					errs <- nil
					return
				default:
				}
				corr++
				c.SetDeadline(time.Now().Add(ioTimeout))
				if _, err := c.Write(requestFrame(produceReq("churn", int32(w%2), -1, batchOf("w"+strconv.Itoa(w))), corr)); err != nil {
					errs <- err
					return
				}
				var size [4]byte
				if _, err := io.ReadFull(c, size[:]); err != nil {
					errs <- err
					return
				}
				f := make([]byte, binary.BigEndian.Uint32(size[:]))
				if _, err := io.ReadFull(c, f); err != nil {
					errs <- err
					return
				}
				resp := kmsg.NewPtrProduceResponse()
				resp.Version = 9
				if err := resp.ReadFrom(f[5:]); err != nil {
					errs <- err
					return
				}
				switch code := resp.Topics[0].Partitions[0].ErrorCode; code {
				case 0, kerr.UnknownTopicOrPartition.Code, kerr.NotLeaderForPartition.Code:
				default:
					errs <- fmt.Errorf("produce during churn: %s", errName(code))
					return
				}
			}
		}()
	}
	for range 10 {
		del := kmsg.NewPtrDeleteTopicsRequest()
		del.Version = 6
		del.TimeoutMillis = 10000
		dt := kmsg.NewDeleteTopicsRequestTopic()
		dt.Topic = kmsg.StringPtr("churn")
		del.Topics = append(del.Topics, dt)
		if r := admin.roundTrip(del).(*kmsg.DeleteTopicsResponse); r.Topics[0].ErrorCode != 0 {
			t.Fatalf("DeleteTopics: %s", errName(r.Topics[0].ErrorCode))
		}
		admin.createTopic("churn", 2, nil)
	}
	close(stop)
	for range 4 {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
	// Whatever landed in the last incarnation reads back whole, with
	// offsets from 0 and no gaps.
	for part := range int32(2) {
		got := admin.readAll("churn", part, 0)
		for i, r := range got {
			if r.Offset != int64(i) {
				t.Fatalf("partition %d: record %d has offset %d", part, i, r.Offset)
			}
		}
	}
	admin.metadataOK()
}

// --- retention --------------------------------------------------------------

func TestRetentionDeletesExpiredData(t *testing.T) {
	b := brokertest.Start(t, map[string]string{"log.retention.check.interval.ms": "50"})
	rc := dialRaw(t, b.Addr())
	rc.createTopic("fleeting", 1, map[string]string{"retention.ms": "100", "segment.ms": "100"})
	for i := range 3 {
		rc.produce("fleeting", 0, batchOf("gone-"+strconv.Itoa(i)))
	}
	// Kafka rolls the active segment when every segment has expired
	// (UnifiedLog.deleteSegments), so all three records go.
	cl := newClient(t, b)
	deadline := time.Now().Add(ioTimeout)
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		off, _ := listOffset(t, cl, "fleeting", 0, -2)
		if off == 3 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("earliest offset still %d after %v with retention.ms=100; want 3", off, ioTimeout)
		}
		<-tick.C
	}
	if p := rc.produce("fleeting", 0, batchOf("fresh")); p.ErrorCode != 0 || p.BaseOffset != 3 {
		t.Fatalf("produce after retention: %s at %d, want NONE at 3", errName(p.ErrorCode), p.BaseOffset)
	}
}
