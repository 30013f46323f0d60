package broker_test

// The produce cases of TestBadInput (badinput_test.go): malformed or
// refused record batches and produce settings.

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/runnel-io/runnel/broker/brokertest"
)

// produceCases send produce requests whose records or settings Kafka 4.0
// refuses with a partition-level error. Kafka's references:
// ProduceRequest.validateRecords (v3+: exactly one batch, magic 2, else
// InvalidRecordException → INVALID_RECORD), UnifiedLog.analyzeAndValidateRecords
// (size → MESSAGE_TOO_LARGE, CRC → CORRUPT_MESSAGE), LogValidator.validateBatch
// and validateRecord (counts, control bit, sequence, keys → INVALID_RECORD).
func produceCases() []badInputCase {
	now := func() int64 { return time.Now().UnixMilli() }
	refused := func(name string, configs map[string]string, records func() []byte, want *kerr.Error) badInputCase {
		return badInputCase{"produce " + name, func(t *testing.T, b *brokertest.Broker) {
			rc := dialRaw(t, b.Addr())
			topic := "p-" + strings.Map(func(r rune) rune {
				if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '_' {
					return r
				}
				return '-'
			}, name)
			rc.createTopic(topic, 1, configs)
			p := rc.produce(topic, 0, records())
			if p.ErrorCode != want.Code {
				t.Errorf("error %s (message %q), want %s", errName(p.ErrorCode), deref(p.ErrorMessage), errName(want.Code))
			}
			if p.BaseOffset != -1 {
				t.Errorf("refused batch got base offset %d, want -1", p.BaseOffset)
			}
			rc.metadataOK() // answered, not closed
			if got := rc.readAll(topic, 0, 0); len(got) != 0 {
				t.Fatalf("a refused batch was stored: %v", got)
			}
		}}
	}
	return []badInputCase{
		refused("CRC mismatch", nil, func() []byte {
			b := batchOf("one", "two")
			b[len(b)-2] ^= 0xff // a byte of the last record's value
			return b
		}, kerr.CorruptMessage),
		refused("NumRecords 3 with 2 records", nil, func() []byte {
			kb := newBatch(now(), recs("one", "two"))
			kb.NumRecords = 3 // CRC recomputed: the producer built it this way
			return encodeBatch(kb)
		}, kerr.InvalidRecord),
		refused("NumRecords and last offset delta claim 3 with 2 records", nil, func() []byte {
			kb := newBatch(now(), recs("one", "two"))
			kb.NumRecords, kb.LastOffsetDelta = 3, 2
			return encodeBatch(kb)
		}, kerr.InvalidRecord),
		refused("magic 0 message set", nil, func() []byte { return legacyMessage(0, "old") }, kerr.InvalidRecord),
		refused("magic 1 message set", nil, func() []byte { return legacyMessage(1, "old") }, kerr.InvalidRecord),
		refused("control bit set by a client", nil, func() []byte {
			kb := newBatch(now(), recs("one"))
			kb.Attributes |= 0x20
			return encodeBatch(kb)
		}, kerr.InvalidRecord),
		refused("producer id without a base sequence", nil, func() []byte {
			kb := newBatch(now(), recs("one"))
			kb.ProducerID, kb.ProducerEpoch, kb.FirstSequence = 4242, 0, -1
			return encodeBatch(kb)
		}, kerr.InvalidRecord),
		refused("batch larger than max.message.bytes", map[string]string{"max.message.bytes": "1024"},
			func() []byte { return batchOf(strings.Repeat("z", 2048)) }, kerr.MessageTooLarge),
		refused("keyless record to a compacted topic", map[string]string{"cleanup.policy": "compact"}, func() []byte {
			return encodeBatch(newBatch(now(), []rec{{key: []byte("k"), value: []byte("keyed")}, {value: []byte("keyless")}}))
		}, kerr.InvalidRecord),
		refused("two batches for one partition", nil, func() []byte {
			return append(batchOf("first"), batchOf("second")...)
		}, kerr.InvalidRecord),
		refused("empty records", nil, func() []byte { return []byte{} }, kerr.InvalidRecord),
		refused("timestamp 2h ahead of the broker's clock", nil, func() []byte {
			// message.timestamp.after.max.ms defaults to 1h in Kafka 4.0.
			return encodeBatch(newBatch(time.Now().Add(2*time.Hour).UnixMilli(), recs("future")))
		}, kerr.InvalidTimestamp),
		{"produce a zstd batch with Produce v6", func(t *testing.T, b *brokertest.Broker) {
			// Kafka: zstd needs Produce v7+ (KIP-110); older requests get
			// UNSUPPORTED_COMPRESSION_TYPE (ProduceRequest.validateRecords).
			rc := dialRaw(t, b.Addr())
			rc.createTopic("p-zstd-v6", 1, nil)
			req := produceReq("p-zstd-v6", 0, -1, zstdBatch(t, "squeezed"))
			req.Version = 6
			p := producePartition(t, rc.roundTrip(req).(*kmsg.ProduceResponse))
			if p.ErrorCode != kerr.UnsupportedCompressionType.Code {
				t.Errorf("zstd at Produce v6: %s, want UNSUPPORTED_COMPRESSION_TYPE(76)", errName(p.ErrorCode))
			}
			if hw := rc.highWatermark("p-zstd-v6", 0); hw != 0 {
				t.Fatalf("zstd batch of a v6 produce was stored (high watermark %d)", hw)
			}
			req = produceReq("p-zstd-v6", 0, -1, zstdBatch(t, "squeezed"))
			req.Version = 7
			if p := producePartition(t, rc.roundTrip(req).(*kmsg.ProduceResponse)); p.ErrorCode != 0 {
				t.Errorf("zstd at Produce v7: %s, want NONE", errName(p.ErrorCode))
			}
		}},
		{"produce acks=2", func(t *testing.T, b *brokertest.Broker) {
			rc := dialRaw(t, b.Addr())
			rc.createTopic("p-acks2", 1, nil)
			p := producePartition(t, rc.roundTrip(produceReq("p-acks2", 0, 2, batchOf("x"))).(*kmsg.ProduceResponse))
			if p.ErrorCode != kerr.InvalidRequiredAcks.Code {
				t.Fatalf("acks=2: %s, want INVALID_REQUIRED_ACKS(21)", errName(p.ErrorCode))
			}
			if got := rc.readAll("p-acks2", 0, 0); len(got) != 0 {
				t.Fatalf("acks=2 stored records: %v", got)
			}
		}},
		{"produce to a missing topic", func(t *testing.T, b *brokertest.Broker) {
			rc := dialRaw(t, b.Addr())
			if p := rc.produce("no-such-topic", 0, batchOf("x")); p.ErrorCode != kerr.UnknownTopicOrPartition.Code {
				t.Fatalf("missing topic: %s, want UNKNOWN_TOPIC_OR_PARTITION(3)", errName(p.ErrorCode))
			}
			rc.metadataOK()
		}},
		{"produce to a missing partition", func(t *testing.T, b *brokertest.Broker) {
			rc := dialRaw(t, b.Addr())
			rc.createTopic("p-missing-part", 2, nil)
			for _, part := range []int32{2, 7, -1} {
				if p := rc.produce("p-missing-part", part, batchOf("x")); p.ErrorCode != kerr.UnknownTopicOrPartition.Code {
					t.Fatalf("partition %d: %s, want UNKNOWN_TOPIC_OR_PARTITION(3)", part, errName(p.ErrorCode))
				}
			}
		}},
		{"produce acks=0 gets no response but is stored", func(t *testing.T, b *brokertest.Broker) {
			rc := dialRaw(t, b.Addr())
			rc.createTopic("p-acks0", 1, nil)
			rc.send(produceReq("p-acks0", 0, 0, batchOf("fire", "forget")))
			md := kmsg.NewPtrMetadataRequest()
			md.Version = 12
			corr := rc.send(md)
			resp := kmsg.NewPtrMetadataResponse()
			resp.Version = 12
			rc.read(corr, resp) // the next frame answers the metadata request
			if got := values(rc.readAll("p-acks0", 0, 0)); !slices.Equal(got, []string{"fire", "forget"}) {
				t.Fatalf("acks=0 records: got %q", got)
			}
		}},
		{"produce acks=0 with a corrupt batch closes the connection", func(t *testing.T, b *brokertest.Broker) {
			// Kafka (KafkaApis.handleProduceRequest): acks=0 has no response
			// to carry an error, so the broker closes the connection to
			// make the producer notice and refresh its metadata.
			rc := dialRaw(t, b.Addr())
			rc.createTopic("p-acks0-bad", 1, nil)
			bad := batchOf("x")
			bad[len(bad)-1] ^= 0xff
			rc.send(produceReq("p-acks0-bad", 0, 0, bad))
			md := kmsg.NewPtrMetadataRequest()
			md.Version = 12
			rc.tryWrite(requestFrame(md, 999)) // may fail if already closed
			rc.expectClosed()
		}},
	}
}
