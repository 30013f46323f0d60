package broker_test

// Bad input over raw TCP, as a harsh user (or a broken client, or a port
// scanner) sends it. Every case asserts its exact outcome — the Kafka error
// code Kafka 4.0 answers, or the connection closed by the broker — and then
// that a second connection, opened before the bad input, still works and
// that the data already stored reads back unchanged.

import (
	"encoding/binary"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/runnel-io/runnel/broker/brokertest"
)

const badInputMaxRequest = 2 << 20 // socket.request.max.bytes of the broker under test

// preFirstRequestCap is the frame size cap of a connection that has not yet
// sent a valid request.
const preFirstRequestCap = 512 << 10

type badInputCase struct {
	name string
	run  func(t *testing.T, b *brokertest.Broker)
}

func TestBadInput(t *testing.T) {
	b := brokertest.Start(t, map[string]string{
		"socket.request.max.bytes":  strconv.Itoa(badInputMaxRequest),
		"auto.create.topics.enable": "false",
	})
	setup := dialRaw(t, b.Addr())
	setup.createTopic("known", 1, nil)
	known := []string{"alpha", "beta", "gamma"}
	if p := setup.produce("known", 0, batchOf(known...)); p.ErrorCode != 0 {
		t.Fatalf("produce known records: %s", errName(p.ErrorCode))
	}

	var cases []badInputCase
	cases = append(cases, frameCases()...)
	cases = append(cases, versionCases()...)
	cases = append(cases, produceCases()...)
	cases = append(cases, adminCases()...)
	cases = append(cases, fetchCases()...)
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			other := dialRaw(t, b.Addr())
			other.metadataOK() // open, and past its first request, before the bad input

			tc.run(t, b)

			other.metadataOK()
			if got := values(other.readAll("known", 0, 0)); !slices.Equal(got, known) {
				t.Fatalf("stored records changed: got %q, want %q", got, known)
			}
		})
	}
}

// frameCases break the framing: sizes and truncation.
func frameCases() []badInputCase {
	size := func(n int32) []byte { return binary.BigEndian.AppendUint32(nil, uint32(n)) }
	return []badInputCase{
		{"negative frame size", func(t *testing.T, b *brokertest.Broker) {
			rc := dialRaw(t, b.Addr())
			rc.write(size(-1))
			rc.expectClosed()
		}},
		{"min int32 frame size after a valid request", func(t *testing.T, b *brokertest.Broker) {
			rc := dialRaw(t, b.Addr())
			rc.metadataOK()
			rc.write(size(-1 << 31))
			rc.expectClosed()
		}},
		{"zero frame size", func(t *testing.T, b *brokertest.Broker) {
			rc := dialRaw(t, b.Addr())
			rc.metadataOK()
			rc.write(size(0))
			rc.expectClosed()
		}},
		{"frame shorter than a request header", func(t *testing.T, b *brokertest.Broker) {
			rc := dialRaw(t, b.Addr())
			rc.write(frame([]byte{0, 3, 0}))
			rc.expectClosed()
		}},
		{"frame above socket.request.max.bytes after a valid request", func(t *testing.T, b *brokertest.Broker) {
			rc := dialRaw(t, b.Addr())
			rc.metadataOK()
			rc.write(size(badInputMaxRequest + 1)) // only the size: the broker must refuse before reading on
			rc.expectClosed()
		}},
		{"frame above the pre-first-request cap on a fresh connection", func(t *testing.T, b *brokertest.Broker) {
			rc := dialRaw(t, b.Addr())
			// The header bytes are no API the broker serves ("GET ").
			rc.write(append(size(preFirstRequestCap+1), "GET "...))
			rc.expectClosed()
		}},
		{"large produce as the first request is accepted: its header names Produce", func(t *testing.T, b *brokertest.Broker) {
			// franz-go opens a connection with a multi-MiB produce.
			setup := dialRaw(t, b.Addr())
			setup.createTopic("large-first", 1, map[string]string{"max.message.bytes": "3000000"})
			rc := dialRaw(t, b.Addr())
			big := strings.Repeat("x", 700<<10)
			if p := rc.produce("large-first", 0, batchOf(big)); p.ErrorCode != 0 {
				t.Fatalf("large first produce: %s", errName(p.ErrorCode))
			}
			if got := setup.readAll("large-first", 0, 0); len(got) != 1 || got[0].Value != big {
				t.Fatalf("the large first produce stored %d records", len(got))
			}
		}},
		{"first request just below the pre-first-request cap is accepted", func(t *testing.T, b *brokertest.Broker) {
			// Clients that skip ApiVersions (sarama with it off,
			// kafka-python with api_version set) may open with a produce.
			setup := dialRaw(t, b.Addr())
			setup.createTopic("first-big", 1, map[string]string{"max.message.bytes": "3000000"})
			rc := dialRaw(t, b.Addr())
			value := strings.Repeat("f", preFirstRequestCap-4096)
			if p := rc.produce("first-big", 0, batchOf(value)); p.ErrorCode != 0 {
				t.Fatalf("first request of %d bytes: %s", preFirstRequestCap-4096, errName(p.ErrorCode))
			}
		}},
		{"large valid request after a first valid request is accepted", func(t *testing.T, b *brokertest.Broker) {
			rc := dialRaw(t, b.Addr())
			rc.createTopic("large-ok", 1, map[string]string{"max.message.bytes": "3000000"})
			big := strings.Repeat("y", 1536<<10) // 1.5 MiB: above the first-request cap, below socket.request.max.bytes
			p := rc.produce("large-ok", 0, batchOf(big))
			if p.ErrorCode != 0 || p.BaseOffset != 0 {
				t.Fatalf("large produce: %s, base offset %d; want NONE at 0", errName(p.ErrorCode), p.BaseOffset)
			}
			if got := rc.readAll("large-ok", 0, 0); len(got) != 1 || got[0].Value != big {
				t.Fatalf("large record did not read back whole (%d records)", len(got))
			}
		}},
		{"half a frame left hanging", func(t *testing.T, b *brokertest.Broker) {
			// The harness then checks that other connections are served
			// while this one waits for bytes that never come.
			rc := dialRaw(t, b.Addr())
			f := requestFrame(kmsg.NewPtrMetadataRequest(), 1)
			rc.write(f[:len(f)/2])
		}},
		{"client id longer than the frame", func(t *testing.T, b *brokertest.Broker) {
			rc := dialRaw(t, b.Addr())
			hdr := appendRequestHeader(nil, kmsg.Metadata.Int16(), 4, 1, "", false)
			binary.BigEndian.PutUint16(hdr[8:], 1000) // client id length 1000, 0 bytes follow
			rc.write(frame(hdr))
			rc.expectClosed()
		}},
		{"truncated frame then close", func(t *testing.T, b *brokertest.Broker) {
			rc := dialRaw(t, b.Addr())
			f := requestFrame(kmsg.NewPtrMetadataRequest(), 1)
			rc.write(append(size(100), f[4:14]...))
			if err := rc.c.CloseWrite(); err != nil {
				t.Fatal(err)
			}
			rc.expectClosed()
		}},
	}
}

// versionCases send API keys and versions the broker does not serve.
func versionCases() []badInputCase {
	closes := func(name string, key, version int16, flexible bool, body func() []byte) badInputCase {
		return badInputCase{name, func(t *testing.T, b *brokertest.Broker) {
			rc := dialRaw(t, b.Addr())
			rc.sendRaw(key, version, flexible, body())
			rc.expectClosed()
		}}
	}
	encode := func(req kmsg.Request, version int16) func() []byte {
		return func() []byte { req.SetVersion(version); return req.AppendTo(nil) }
	}
	return []badInputCase{
		closes("unknown API key 999", 999, 0, false, func() []byte { return []byte{0, 0, 0, 0} }),
		closes("negative API key", -1, 0, false, func() []byte { return nil }),
		closes("Produce v2 (below Kafka 4.0's floor)", kmsg.Produce.Int16(), 2, false,
			encode(produceReq("known", 0, -1, batchOf("x")), 2)),
		closes("Fetch v3 (below Kafka 4.0's floor)", kmsg.Fetch.Int16(), 3, false,
			encode(fetchReq("known", 0, 0, -1, 0, 0), 3)),
		{"Produce above the advertised max version", func(t *testing.T, b *brokertest.Broker) {
			rc := dialRaw(t, b.Addr())
			max := advertisedMax(t, rc, kmsg.Produce)
			req := produceReq("known", 0, -1, batchOf("x"))
			req.Version = max // encoded at our max, labelled max+1
			rc.sendRaw(kmsg.Produce.Int16(), max+1, true, req.AppendTo(nil))
			rc.expectClosed()
		}},
		{"Metadata above the advertised max version", func(t *testing.T, b *brokertest.Broker) {
			rc := dialRaw(t, b.Addr())
			max := advertisedMax(t, rc, kmsg.Metadata)
			req := kmsg.NewPtrMetadataRequest()
			req.Version = max
			rc.sendRaw(kmsg.Metadata.Int16(), max+1, true, req.AppendTo(nil))
			rc.expectClosed()
		}},
		{"known key with an undecodable body", func(t *testing.T, b *brokertest.Broker) {
			rc := dialRaw(t, b.Addr())
			rc.sendRaw(kmsg.Metadata.Int16(), 12, true, []byte{0xff}) // a varint cut short
			rc.expectClosed()
		}},
		{"ApiVersions v3 with an illegal client software name", func(t *testing.T, b *brokertest.Broker) {
			// Kafka (ApiVersionsRequest.isValid): name and version must
			// match [a-zA-Z0-9](?:[a-zA-Z0-9\-.]*[a-zA-Z0-9])?, else
			// INVALID_REQUEST; the connection stays open.
			rc := dialRaw(t, b.Addr())
			for _, name := range []string{"", "bad name!", "-leading-dash"} {
				req := kmsg.NewPtrApiVersionsRequest()
				req.Version = 3
				req.ClientSoftwareName, req.ClientSoftwareVersion = name, "1.0"
				if resp := rc.roundTrip(req).(*kmsg.ApiVersionsResponse); resp.ErrorCode != kerr.InvalidRequest.Code {
					t.Errorf("client software name %q: %s, want INVALID_REQUEST(42)", name, errName(resp.ErrorCode))
				}
			}
			rc.metadataOK()
		}},
		{"ApiVersions v99 gets the v0 UNSUPPORTED_VERSION answer", func(t *testing.T, b *brokertest.Broker) {
			rc := dialRaw(t, b.Addr())
			body := kmsg.NewPtrApiVersionsRequest()
			body.Version = 3
			body.ClientSoftwareName, body.ClientSoftwareVersion = "harsh", "1.0"
			corr := rc.sendRaw(kmsg.ApiVersions.Int16(), 99, true, body.AppendTo(nil))
			resp := kmsg.NewPtrApiVersionsResponse()
			resp.Version = 0
			rc.read(corr, resp)
			if resp.ErrorCode != kerr.UnsupportedVersion.Code {
				t.Fatalf("ApiVersions v99: error %s, want UNSUPPORTED_VERSION(35)", errName(resp.ErrorCode))
			}
			keys := map[int16]kmsg.ApiVersionsResponseApiKey{}
			for _, k := range resp.ApiKeys {
				keys[k.ApiKey] = k
			}
			if k, ok := keys[kmsg.ApiVersions.Int16()]; !ok || k.MinVersion != 0 || k.MaxVersion < 3 {
				t.Fatalf("ApiVersions v99: ApiVersions key %+v (present %v), want 0..>=3", k, ok)
			}
			if k, ok := keys[kmsg.Produce.Int16()]; !ok || k.MinVersion != 3 {
				t.Fatalf("ApiVersions v99: Produce key %+v (present %v), want min 3", k, ok)
			}
			rc.metadataOK() // the connection stays open so the client can retry
		}},
	}
}

// advertisedMax returns the max version the broker advertises for key.
func advertisedMax(t *testing.T, rc *rawConn, key kmsg.Key) int16 {
	t.Helper()
	req := kmsg.NewPtrApiVersionsRequest()
	req.Version = 3
	req.ClientSoftwareName, req.ClientSoftwareVersion = "harsh", "1.0"
	resp := rc.roundTrip(req).(*kmsg.ApiVersionsResponse)
	for _, k := range resp.ApiKeys {
		if k.ApiKey == key.Int16() {
			return k.MaxVersion
		}
	}
	t.Fatalf("ApiVersions does not advertise %s", key.Name())
	return 0
}

// adminCases send topic administration requests Kafka refuses.
func adminCases() []badInputCase {
	return []badInputCase{
		{"CreateTopics with bad names", func(t *testing.T, b *brokertest.Broker) {
			rc := dialRaw(t, b.Addr())
			bad := []string{"", ".", "..", strings.Repeat("n", 250), "a/b", "a b", "tab\there", "ünï"}
			var topics []kmsg.CreateTopicsRequestTopic
			for _, n := range bad {
				topics = append(topics, topicReq(n, 1, 1, nil))
			}
			topics = append(topics, topicReq("good-name_1.x", 1, 1, nil), topicReq(strings.Repeat("m", 249), 1, 1, nil))
			got := rc.createTopics(false, topics...)
			for i, n := range bad {
				if got[i].Topic != n || got[i].ErrorCode != kerr.InvalidTopicException.Code || got[i].ErrorMessage == nil || *got[i].ErrorMessage == "" {
					t.Errorf("topic %q: answer for %q, %s, message %q; want INVALID_TOPIC_EXCEPTION(17) with a message",
						n, got[i].Topic, errName(got[i].ErrorCode), deref(got[i].ErrorMessage))
				}
			}
			for _, g := range got[len(bad):] {
				if g.ErrorCode != 0 {
					t.Errorf("legal topic %q: %s %q", g.Topic, errName(g.ErrorCode), deref(g.ErrorMessage))
				}
			}
			md := metadataFor(t, rc, bad...)
			for _, mt := range md.Topics {
				if mt.ErrorCode == 0 {
					t.Errorf("bad topic %q exists after CreateTopics", deref(mt.Topic))
				}
			}
		}},
		{"CreateTopics duplicates, existing and colliding names, bad assignment", func(t *testing.T, b *brokertest.Broker) {
			rc := dialRaw(t, b.Addr())
			rc.createTopic("exists.already", 1, nil)
			assigned := topicReq("assigned-to-ghost", -1, -1, nil)
			a := kmsg.NewCreateTopicsRequestTopicReplicaAssignment()
			a.Partition, a.Replicas = 0, []int32{7}
			assigned.ReplicaAssignment = append(assigned.ReplicaAssignment, a)
			got := rc.createTopics(false,
				topicReq("twice", 1, 1, nil),
				topicReq("twice", 1, 1, nil),
				topicReq("exists.already", 1, 1, nil),
				topicReq("exists_already", 1, 1, nil), // '.' and '_' collide in metric names
				assigned,
			)
			want := []*kerr.Error{kerr.InvalidRequest, kerr.InvalidRequest, kerr.TopicAlreadyExists, kerr.InvalidTopicException, kerr.InvalidReplicaAssignment}
			for i, w := range want {
				if got[i].ErrorCode != w.Code {
					t.Errorf("%s: %s %q, want %s", got[i].Topic, errName(got[i].ErrorCode), deref(got[i].ErrorMessage), errName(w.Code))
				}
			}
			for _, mt := range metadataFor(t, rc, "twice", "exists_already", "assigned-to-ghost").Topics {
				if mt.ErrorCode == 0 {
					t.Errorf("topic %q was created", deref(mt.Topic))
				}
			}
		}},
		{"CreateTopics with invalid configs", func(t *testing.T, b *brokertest.Broker) {
			rc := dialRaw(t, b.Addr())
			cases := []struct{ topic, key, value string }{
				{"cfg-unknown", "no.such.config", "1"},
				{"cfg-retention", "retention.ms", "abc"},
				{"cfg-cleanup", "cleanup.policy", "bogus"},
				{"cfg-negative-segment", "segment.bytes", "-5"},
				{"cfg-broker-key", "log.retention.ms", "1000"},
			}
			var topics []kmsg.CreateTopicsRequestTopic
			var names []string
			for _, c := range cases {
				topics = append(topics, topicReq(c.topic, 1, 1, map[string]string{c.key: c.value}))
				names = append(names, c.topic)
			}
			got := rc.createTopics(false, topics...)
			for i, c := range cases {
				msg := deref(got[i].ErrorMessage)
				if got[i].ErrorCode != kerr.InvalidConfig.Code || !strings.Contains(msg, c.key) {
					t.Errorf("%s=%s: %s, message %q; want INVALID_CONFIG(40) naming %s", c.key, c.value, errName(got[i].ErrorCode), msg, c.key)
				}
			}
			for _, mt := range metadataFor(t, rc, names...).Topics {
				if mt.ErrorCode == 0 {
					t.Errorf("topic %q with a bad config was created", deref(mt.Topic))
				}
			}
		}},
		{"CreateTopics with bad partitions and replication factor", func(t *testing.T, b *brokertest.Broker) {
			rc := dialRaw(t, b.Addr())
			got := rc.createTopics(false,
				topicReq("zero-parts", 0, 1, nil),
				topicReq("negative-parts", -7, 1, nil),
				topicReq("rf-two", 1, 2, nil),
				topicReq("rf-zero", 1, 0, nil),
			)
			want := []*kerr.Error{kerr.InvalidPartitions, kerr.InvalidPartitions, kerr.InvalidReplicationFactor, kerr.InvalidReplicationFactor}
			for i, w := range want {
				if got[i].ErrorCode != w.Code || got[i].ErrorMessage == nil {
					t.Errorf("%s: %s %q, want %s with a message", got[i].Topic, errName(got[i].ErrorCode), deref(got[i].ErrorMessage), errName(w.Code))
				}
			}
			for _, mt := range metadataFor(t, rc, "zero-parts", "negative-parts", "rf-two", "rf-zero").Topics {
				if mt.ErrorCode == 0 {
					t.Errorf("topic %q was created", deref(mt.Topic))
				}
			}
		}},
		{"CreatePartitions to fewer or equal partitions", func(t *testing.T, b *brokertest.Broker) {
			rc := dialRaw(t, b.Addr())
			rc.createTopic("shrink-me", 3, nil)
			for _, n := range []int32{2, 3, 0, -1} {
				req := kmsg.NewPtrCreatePartitionsRequest()
				req.Version = 3
				req.TimeoutMillis = 10000
				rt := kmsg.NewCreatePartitionsRequestTopic()
				rt.Topic, rt.Count = "shrink-me", n
				req.Topics = append(req.Topics, rt)
				resp := rc.roundTrip(req).(*kmsg.CreatePartitionsResponse)
				if len(resp.Topics) != 1 || resp.Topics[0].ErrorCode != kerr.InvalidPartitions.Code {
					t.Errorf("CreatePartitions to %d: %+v, want INVALID_PARTITIONS(37)", n, resp.Topics)
				}
			}
			if md := metadataFor(t, rc, "shrink-me"); len(md.Topics[0].Partitions) != 3 {
				t.Fatalf("topic now has %d partitions, want 3", len(md.Topics[0].Partitions))
			}
		}},
		{"DeleteRecords beyond the high watermark", func(t *testing.T, b *brokertest.Broker) {
			rc := dialRaw(t, b.Addr())
			rc.createTopic("del-beyond", 1, nil)
			rc.produce("del-beyond", 0, batchOf("a", "b"))
			for _, off := range []int64{3, 1 << 40, -7} {
				req := kmsg.NewPtrDeleteRecordsRequest()
				req.Version = 2
				req.TimeoutMillis = 10000
				rt := kmsg.NewDeleteRecordsRequestTopic()
				rt.Topic = "del-beyond"
				rp := kmsg.NewDeleteRecordsRequestTopicPartition()
				rp.Partition, rp.Offset = 0, off
				rt.Partitions = append(rt.Partitions, rp)
				req.Topics = append(req.Topics, rt)
				resp := rc.roundTrip(req).(*kmsg.DeleteRecordsResponse)
				if code := resp.Topics[0].Partitions[0].ErrorCode; code != kerr.OffsetOutOfRange.Code {
					t.Errorf("DeleteRecords before %d: %s, want OFFSET_OUT_OF_RANGE(1)", off, errName(code))
				}
			}
			if got := values(rc.readAll("del-beyond", 0, 0)); !slices.Equal(got, []string{"a", "b"}) {
				t.Fatalf("records after refused DeleteRecords: %q", got)
			}
		}},
		{"pipelined mixed requests are answered in order", pipelined},
		{"200 pipelined requests, more than the in-flight limit", func(t *testing.T, b *brokertest.Broker) {
			rc := dialRaw(t, b.Addr())
			var out []byte
			first := rc.corr + 1
			for range 200 {
				req := kmsg.NewPtrApiVersionsRequest()
				req.Version = 3
				req.ClientSoftwareName, req.ClientSoftwareVersion = "harsh", "1.0"
				rc.corr++
				out = append(out, requestFrame(req, rc.corr)...)
			}
			rc.write(out)
			for i := range int32(200) {
				resp := kmsg.NewPtrApiVersionsResponse()
				resp.Version = 3
				rc.read(first+i, resp)
			}
		}},
	}
}

// fetchCases fetch at offsets and epochs the partition cannot serve.
func fetchCases() []badInputCase {
	return []badInputCase{
		{"fetch beyond the log end or before the log start", func(t *testing.T, b *brokertest.Broker) {
			rc := dialRaw(t, b.Addr())
			for _, off := range []int64{4, 1 << 40, -5} {
				sp := fetchPartition(t, rc.roundTrip(fetchReq("known", 0, off, -1, 0, 0)).(*kmsg.FetchResponse))
				if sp.ErrorCode != kerr.OffsetOutOfRange.Code {
					t.Errorf("fetch at %d: %s, want OFFSET_OUT_OF_RANGE(1)", off, errName(sp.ErrorCode))
				}
				if len(sp.RecordBatches) != 0 {
					t.Errorf("fetch at %d returned %d bytes of records", off, len(sp.RecordBatches))
				}
			}
			// At exactly the log end there is nothing yet, and no error.
			sp := fetchPartition(t, rc.roundTrip(fetchReq("known", 0, 3, -1, 0, 0)).(*kmsg.FetchResponse))
			if sp.ErrorCode != 0 || len(sp.RecordBatches) != 0 || sp.HighWatermark != 3 {
				t.Errorf("fetch at the log end: %s, %d bytes, high watermark %d", errName(sp.ErrorCode), len(sp.RecordBatches), sp.HighWatermark)
			}
		}},
		{"fetch an unknown topic, partition or topic id", func(t *testing.T, b *brokertest.Broker) {
			rc := dialRaw(t, b.Addr())
			if sp := fetchPartition(t, rc.roundTrip(fetchReq("no-such-topic", 0, 0, -1, 0, 0)).(*kmsg.FetchResponse)); sp.ErrorCode != kerr.UnknownTopicOrPartition.Code {
				t.Errorf("fetch a missing topic: %s, want UNKNOWN_TOPIC_OR_PARTITION(3)", errName(sp.ErrorCode))
			}
			if sp := fetchPartition(t, rc.roundTrip(fetchReq("known", 9, 0, -1, 0, 0)).(*kmsg.FetchResponse)); sp.ErrorCode != kerr.UnknownTopicOrPartition.Code {
				t.Errorf("fetch a missing partition: %s, want UNKNOWN_TOPIC_OR_PARTITION(3)", errName(sp.ErrorCode))
			}
			req := fetchReq("", 0, 0, -1, 0, 0)
			req.Version = 13
			req.Topics[0].TopicID = [16]byte{1, 2, 3}
			if sp := fetchPartition(t, rc.roundTrip(req).(*kmsg.FetchResponse)); sp.ErrorCode != kerr.UnknownTopicID.Code {
				t.Errorf("fetch v13 of an unknown topic id: %s, want UNKNOWN_TOPIC_ID(100)", errName(sp.ErrorCode))
			}
			// By the right id, v13 reads the records.
			req = fetchReq("", 0, 0, -1, 0, 0)
			req.Version = 13
			req.Topics[0].TopicID = metadataFor(t, rc, "known").Topics[0].TopicID
			if sp := fetchPartition(t, rc.roundTrip(req).(*kmsg.FetchResponse)); sp.ErrorCode != 0 || len(parseBatches(t, sp.RecordBatches)) != 3 {
				t.Errorf("fetch v13 by topic id: %s, %d records", errName(sp.ErrorCode), len(parseBatches(t, sp.RecordBatches)))
			}
		}},
		{"fetch with a leader epoch the broker does not have", func(t *testing.T, b *brokertest.Broker) {
			rc := dialRaw(t, b.Addr())
			epoch := metadataFor(t, rc, "known").Topics[0].Partitions[0].LeaderEpoch
			sp := fetchPartition(t, rc.roundTrip(fetchReq("known", 0, 0, epoch+1, 0, 0)).(*kmsg.FetchResponse))
			if sp.ErrorCode != kerr.UnknownLeaderEpoch.Code {
				t.Errorf("fetch with epoch %d (leader's %d): %s, want UNKNOWN_LEADER_EPOCH(75)", epoch+1, epoch, errName(sp.ErrorCode))
			}
			if epoch > 0 {
				sp := fetchPartition(t, rc.roundTrip(fetchReq("known", 0, 0, epoch-1, 0, 0)).(*kmsg.FetchResponse))
				if sp.ErrorCode != kerr.FencedLeaderEpoch.Code {
					t.Errorf("fetch with epoch %d (leader's %d): %s, want FENCED_LEADER_EPOCH(74)", epoch-1, epoch, errName(sp.ErrorCode))
				}
			}
			sp = fetchPartition(t, rc.roundTrip(fetchReq("known", 0, 0, epoch, 0, 0)).(*kmsg.FetchResponse))
			if sp.ErrorCode != 0 || len(parseBatches(t, sp.RecordBatches)) != 3 {
				t.Errorf("fetch with the leader's epoch %d: %s, %d records", epoch, errName(sp.ErrorCode), len(parseBatches(t, sp.RecordBatches)))
			}
		}},
	}
}

// metadataFor asks for the named topics without auto-creation.
func metadataFor(t *testing.T, rc *rawConn, topics ...string) *kmsg.MetadataResponse {
	t.Helper()
	req := kmsg.NewPtrMetadataRequest()
	req.Version = 12
	for _, n := range topics {
		rt := kmsg.NewMetadataRequestTopic()
		rt.Topic = kmsg.StringPtr(n)
		req.Topics = append(req.Topics, rt)
	}
	resp := rc.roundTrip(req).(*kmsg.MetadataResponse)
	if len(resp.Topics) != len(topics) {
		t.Fatalf("metadata: %d topics for %d asked", len(resp.Topics), len(topics))
	}
	return resp
}

// pipelined sends 20 requests of mixed kinds in one write, then reads the
// answers: they must come in request order with matching correlation ids,
// even though some (produce, long-poll fetch) are answered off the reader.
func pipelined(t *testing.T, b *brokertest.Broker) {
	rc := dialRaw(t, b.Addr())
	rc.createTopic("pipe", 1, nil)
	type pending struct {
		corr int32
		req  kmsg.Request
	}
	var sent []pending
	var out []byte
	for i := range 20 {
		var req kmsg.Request
		switch i % 6 {
		case 0:
			m := kmsg.NewPtrMetadataRequest()
			m.Version = 12
			req = m
		case 1:
			a := kmsg.NewPtrApiVersionsRequest()
			a.Version = 3
			a.ClientSoftwareName, a.ClientSoftwareVersion = "harsh", "1.0"
			req = a
		case 2:
			req = produceReq("pipe", 0, -1, batchOf("v"+strconv.Itoa(i)))
		case 3:
			// Waits (up to 200ms) for more data than will come.
			req = fetchReq("pipe", 0, 0, -1, 200, 1<<20)
		case 4:
			l := kmsg.NewPtrListOffsetsRequest()
			l.Version = 8
			l.ReplicaID = -1
			lt := kmsg.NewListOffsetsRequestTopic()
			lt.Topic = "pipe"
			lp := kmsg.NewListOffsetsRequestTopicPartition()
			lp.Partition, lp.Timestamp, lp.CurrentLeaderEpoch = 0, -1, -1
			lt.Partitions = append(lt.Partitions, lp)
			l.Topics = append(l.Topics, lt)
			req = l
		case 5:
			req = produceReq("pipe", 0, 1, batchOf("w"+strconv.Itoa(i)))
		}
		rc.corr++
		sent = append(sent, pending{rc.corr, req})
		out = append(out, requestFrame(req, rc.corr)...)
	}
	rc.write(out)
	var bases []int64
	for _, p := range sent {
		resp := p.req.ResponseKind()
		resp.SetVersion(p.req.GetVersion())
		rc.read(p.corr, resp)
		switch r := resp.(type) {
		case *kmsg.ProduceResponse:
			sp := producePartition(t, r)
			if sp.ErrorCode != 0 {
				t.Fatalf("pipelined produce: %s", errName(sp.ErrorCode))
			}
			bases = append(bases, sp.BaseOffset)
		case *kmsg.ApiVersionsResponse:
			if r.ErrorCode != 0 {
				t.Fatalf("pipelined ApiVersions: %s", errName(r.ErrorCode))
			}
		case *kmsg.FetchResponse:
			if sp := fetchPartition(t, r); sp.ErrorCode != 0 {
				t.Fatalf("pipelined fetch: %s", errName(sp.ErrorCode))
			}
		case *kmsg.ListOffsetsResponse:
			if code := r.Topics[0].Partitions[0].ErrorCode; code != 0 {
				t.Fatalf("pipelined ListOffsets: %s", errName(code))
			}
		}
	}
	for i, base := range bases {
		if base != int64(i) {
			t.Fatalf("pipelined produces got base offsets %v, want 0, 1, 2, ... in request order", bases)
		}
	}
}

// A long-poll fetch whose client goes away must not keep the broker from
// stopping: the fetch's wait ends with its connection.
func TestBadInputLongPollThenDisconnect(t *testing.T) {
	b := brokertest.Start(t)
	rc := dialRaw(t, b.Addr())
	rc.createTopic("abandoned", 1, nil)
	rc.send(fetchReq("abandoned", 0, 0, -1, 1<<31-1, 1<<30)) // wait ~24 days for 1 GiB
	other := dialRaw(t, b.Addr())
	other.metadataOK()
	rc.c.Close()
	other.metadataOK()

	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		b.Close()
	}()
	select {
	case <-stopped:
	case <-time.After(ioTimeout):
		t.Fatalf("broker did not stop within %v after a long-poll fetch's client went away", ioTimeout)
	}
}

// One CreateTopics asking for a huge partition count must be refused
// up front, not carried out: Kafka 4.0's controller refuses any single
// operation of more than 10,000 metadata records with POLICY_VIOLATION
// ("Unable to perform excessively large batch operation."). Runnel today
// tries to open every partition — 20,000 take minutes and exhaust the
// process's file descriptors — so this test is opt-in until that is fixed,
// lest it wedge the suite.
func TestBadInputHugePartitionCount(t *testing.T) {
	if os.Getenv("RUNNEL_TEST_HUGE_TOPICS") == "" {
		t.Skip("broker opens every requested partition (see the report of the harsh-input tests); set RUNNEL_TEST_HUGE_TOPICS=1 to run")
	}
	b := brokertest.Start(t)
	rc := dialRaw(t, b.Addr())
	got := rc.createTopics(false, topicReq("huge", 100_000, 1, nil))
	if got[0].ErrorCode != kerr.PolicyViolation.Code {
		t.Fatalf("100,000 partitions: %s %q, want POLICY_VIOLATION(44)", errName(got[0].ErrorCode), deref(got[0].ErrorMessage))
	}
	if mt := metadataFor(t, rc, "huge").Topics[0]; mt.ErrorCode != kerr.UnknownTopicOrPartition.Code {
		t.Fatalf("the refused topic exists")
	}
}
