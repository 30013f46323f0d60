package broker_test

// Helpers shared by the broker's black-box tests: a raw Kafka protocol
// connection that builds frames by hand (so tests can send what no client
// would), record batch builders, and small kgo/kadm conveniences. Every
// network operation has a deadline; nothing sleeps.

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"net"
	"slices"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/klauspost/compress/zstd"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/runnel-io/runnel/broker/brokertest"
)

// ioTimeout bounds every single read or write on a raw connection, and every
// wait for a client round trip.
const ioTimeout = 10 * time.Second

// rawConn is a Kafka protocol connection driven byte by byte.
type rawConn struct {
	t    testing.TB
	c    *net.TCPConn
	corr int32
}

func dialRaw(t testing.TB, addr string) *rawConn {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, ioTimeout)
	if err != nil {
		t.Fatalf("dial %s: %v", addr, err)
	}
	t.Cleanup(func() { c.Close() })
	return &rawConn{t: t, c: c.(*net.TCPConn), corr: 100}
}

// write writes b whole, failing the test on error.
func (rc *rawConn) write(b []byte) {
	rc.t.Helper()
	if err := rc.tryWrite(b); err != nil {
		rc.t.Fatalf("write %d bytes: %v", len(b), err)
	}
}

func (rc *rawConn) tryWrite(b []byte) error {
	rc.c.SetWriteDeadline(time.Now().Add(ioTimeout))
	_, err := rc.c.Write(b)
	return err
}

// frame prefixes b with its 4-byte size.
func frame(b []byte) []byte {
	out := binary.BigEndian.AppendUint32(make([]byte, 0, 4+len(b)), uint32(len(b)))
	return append(out, b...)
}

// appendRequestHeader appends a request header: v1 (key, version,
// correlation id, nullable client id) or, when flexible, v2 (v1 plus an
// empty tagged-field section).
func appendRequestHeader(dst []byte, key, version int16, corr int32, clientID string, flexible bool) []byte {
	dst = binary.BigEndian.AppendUint16(dst, uint16(key))
	dst = binary.BigEndian.AppendUint16(dst, uint16(version))
	dst = binary.BigEndian.AppendUint32(dst, uint32(corr))
	dst = binary.BigEndian.AppendUint16(dst, uint16(len(clientID)))
	dst = append(dst, clientID...)
	if flexible {
		dst = append(dst, 0) // no tagged fields
	}
	return dst
}

// requestFrame returns a whole frame for req at its set version.
func requestFrame(req kmsg.Request, corr int32) []byte {
	b := appendRequestHeader(nil, req.Key(), req.GetVersion(), corr, "harsh-test", req.IsFlexible())
	return frame(req.AppendTo(b))
}

// send writes req (at its set version) and returns its correlation id.
func (rc *rawConn) send(req kmsg.Request) int32 {
	rc.t.Helper()
	rc.corr++
	rc.write(requestFrame(req, rc.corr))
	return rc.corr
}

// sendRaw writes a frame with the given header and body bytes and returns
// its correlation id.
func (rc *rawConn) sendRaw(key, version int16, flexible bool, body []byte) int32 {
	rc.t.Helper()
	rc.corr++
	rc.write(frame(append(appendRequestHeader(nil, key, version, rc.corr, "harsh-test", flexible), body...)))
	return rc.corr
}

// readFrame reads one response frame.
func (rc *rawConn) readFrame() ([]byte, error) {
	rc.c.SetReadDeadline(time.Now().Add(ioTimeout))
	var size [4]byte
	if _, err := io.ReadFull(rc.c, size[:]); err != nil {
		return nil, err
	}
	n := int32(binary.BigEndian.Uint32(size[:]))
	if n < 4 || n > 256<<20 {
		return nil, fmt.Errorf("response frame size %d", n)
	}
	b := make([]byte, n)
	if _, err := io.ReadFull(rc.c, b); err != nil {
		return nil, err
	}
	return b, nil
}

// read reads the response to the request with correlation id corr into
// resp (whose version must be set), failing the test on any mismatch.
func (rc *rawConn) read(corr int32, resp kmsg.Response) {
	rc.t.Helper()
	b, err := rc.readFrame()
	if err != nil {
		rc.t.Fatalf("read response to correlation id %d (%s): %v", corr, kmsg.NameForKey(resp.Key()), err)
	}
	decodeResponse(rc.t, b, corr, resp)
}

func decodeResponse(t testing.TB, b []byte, corr int32, resp kmsg.Response) {
	t.Helper()
	got := int32(binary.BigEndian.Uint32(b))
	if got != corr {
		t.Fatalf("response correlation id %d, want %d (%s)", got, corr, kmsg.NameForKey(resp.Key()))
	}
	b = b[4:]
	// Flexible responses carry a tagged-field section in the header,
	// except ApiVersions, whose response header is always v0.
	if resp.IsFlexible() && resp.Key() != kmsg.ApiVersions.Int16() {
		if len(b) == 0 || b[0] != 0 {
			t.Fatalf("%s response: unexpected response header tags %x", kmsg.NameForKey(resp.Key()), b[:min(len(b), 8)])
		}
		b = b[1:]
	}
	if err := resp.ReadFrom(b); err != nil {
		t.Fatalf("decode %s v%d response: %v", kmsg.NameForKey(resp.Key()), resp.GetVersion(), err)
	}
}

// roundTrip sends req and reads its response.
func (rc *rawConn) roundTrip(req kmsg.Request) kmsg.Response {
	rc.t.Helper()
	corr := rc.send(req)
	resp := req.ResponseKind()
	resp.SetVersion(req.GetVersion())
	rc.read(corr, resp)
	return resp
}

// expectClosed asserts that the broker closes the connection: a read
// returns EOF (or a reset, when the broker closed with unread input) before
// the deadline, with no response bytes first.
func (rc *rawConn) expectClosed() {
	rc.t.Helper()
	rc.c.SetReadDeadline(time.Now().Add(ioTimeout))
	var buf [64]byte
	n, err := rc.c.Read(buf[:])
	switch {
	case n > 0:
		rc.t.Fatalf("expected the broker to close the connection, got %d bytes of response: %x", n, buf[:n])
	case errors.Is(err, io.EOF), errors.Is(err, syscall.ECONNRESET):
	default:
		rc.t.Fatalf("expected the broker to close the connection (EOF), got %v", err)
	}
}

// metadataOK asserts a Metadata round trip works on rc.
func (rc *rawConn) metadataOK() {
	rc.t.Helper()
	req := kmsg.NewPtrMetadataRequest()
	req.Version = 12
	resp := rc.roundTrip(req).(*kmsg.MetadataResponse)
	if len(resp.Brokers) != 1 || resp.ClusterID == nil {
		rc.t.Fatalf("metadata round trip: brokers %v, cluster id %v", resp.Brokers, resp.ClusterID)
	}
}

// --- record batches ---------------------------------------------------------

// rec is one record to put in a batch.
type rec struct {
	key, value []byte
	tsDelta    int64
}

func recs(values ...string) []rec {
	var out []rec
	for i, v := range values {
		out = append(out, rec{key: []byte("k" + strconv.Itoa(i)), value: []byte(v)})
	}
	return out
}

func encodeRecord(i int, r rec) []byte {
	kr := kmsg.Record{TimestampDelta64: r.tsDelta, OffsetDelta: int32(i), Key: r.key, Value: r.value}
	body := kr.AppendTo(nil)
	kr.Length = int32(len(body) - 1) // Length 0 took one varint byte
	return kr.AppendTo(nil)
}

// newBatch returns a v2 batch header for records (no producer id, CreateTime
// firstTs for every record plus its delta). Change fields, then encode.
func newBatch(firstTs int64, rs []rec) *kmsg.RecordBatch {
	b := &kmsg.RecordBatch{
		Magic:           2,
		LastOffsetDelta: int32(len(rs) - 1),
		FirstTimestamp:  firstTs,
		MaxTimestamp:    firstTs,
		ProducerID:      -1,
		ProducerEpoch:   -1,
		FirstSequence:   -1,
		NumRecords:      int32(len(rs)),
	}
	for i, r := range rs {
		b.Records = append(b.Records, encodeRecord(i, r)...)
		b.MaxTimestamp = max(b.MaxTimestamp, firstTs+r.tsDelta)
	}
	return b
}

var crc32c = crc32.MakeTable(crc32.Castagnoli)

// encodeBatch encodes b with a correct length and CRC32C.
func encodeBatch(b *kmsg.RecordBatch) []byte {
	out := b.AppendTo(nil)
	binary.BigEndian.PutUint32(out[8:], uint32(len(out)-12))
	binary.BigEndian.PutUint32(out[17:], crc32.Checksum(out[21:], crc32c))
	return out
}

// batchOf is an uncompressed, valid batch of values stamped now.
func batchOf(values ...string) []byte {
	return encodeBatch(newBatch(time.Now().UnixMilli(), recs(values...)))
}

// zstdBatch is a valid zstd-compressed batch of values.
func zstdBatch(t testing.TB, values ...string) []byte {
	t.Helper()
	kb := newBatch(time.Now().UnixMilli(), recs(values...))
	enc, err := zstd.NewWriter(nil)
	if err != nil {
		t.Fatal(err)
	}
	defer enc.Close()
	kb.Records = enc.EncodeAll(kb.Records, nil)
	kb.Attributes |= 4
	return encodeBatch(kb)
}

// legacyMessage is a one-message set in the pre-0.11 format (magic 0 or 1).
func legacyMessage(magic int8, value string) []byte {
	var m []byte
	m = append(m, byte(magic), 0) // magic, attributes
	if magic == 1 {
		m = binary.BigEndian.AppendUint64(m, uint64(time.Now().UnixMilli()))
	}
	m = binary.BigEndian.AppendUint32(m, 0xffffffff) // null key
	m = binary.BigEndian.AppendUint32(m, uint32(len(value)))
	m = append(m, value...)
	crc := crc32.ChecksumIEEE(m)
	out := binary.BigEndian.AppendUint64(nil, 0) // offset
	out = binary.BigEndian.AppendUint32(out, uint32(4+len(m)))
	out = binary.BigEndian.AppendUint32(out, crc)
	return append(out, m...)
}

// produceReq is a Produce v9 request of one partition's records.
func produceReq(topic string, part int32, acks int16, records []byte) *kmsg.ProduceRequest {
	req := kmsg.NewPtrProduceRequest()
	req.Version = 9
	req.Acks = acks
	req.TimeoutMillis = 10000
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Partition = part
	rp.Records = records
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	return req
}

// producePartition returns the only partition answer of resp.
func producePartition(t testing.TB, resp *kmsg.ProduceResponse) kmsg.ProduceResponseTopicPartition {
	t.Helper()
	if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
		t.Fatalf("produce response has %d topics, want one topic with one partition: %+v", len(resp.Topics), resp.Topics)
	}
	return resp.Topics[0].Partitions[0]
}

// produceRaw produces records on rc and returns the partition's answer.
func (rc *rawConn) produce(topic string, part int32, records []byte) kmsg.ProduceResponseTopicPartition {
	rc.t.Helper()
	return producePartition(rc.t, rc.roundTrip(produceReq(topic, part, -1, records)).(*kmsg.ProduceResponse))
}

// storedRecord is a record read back from the broker.
type storedRecord struct {
	Offset    int64
	Key       string
	Value     string
	Timestamp int64
}

// fetchOnce sends one Fetch v12 (by topic name) for one partition.
func fetchReq(topic string, part int32, offset int64, epoch int32, maxWait int32, minBytes int32) *kmsg.FetchRequest {
	req := kmsg.NewPtrFetchRequest()
	req.Version = 12
	req.ReplicaID = -1
	req.MaxWaitMillis = maxWait
	req.MinBytes = minBytes
	req.MaxBytes = 64 << 20
	req.SessionEpoch = -1
	rt := kmsg.NewFetchRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewFetchRequestTopicPartition()
	rp.Partition = part
	rp.CurrentLeaderEpoch = epoch
	rp.FetchOffset = offset
	rp.LogStartOffset = -1
	rp.PartitionMaxBytes = 16 << 20
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	return req
}

func fetchPartition(t testing.TB, resp *kmsg.FetchResponse) kmsg.FetchResponseTopicPartition {
	t.Helper()
	if resp.ErrorCode != 0 {
		t.Fatalf("fetch: top-level error %v", kerr.ErrorForCode(resp.ErrorCode))
	}
	if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
		t.Fatalf("fetch response has %d topics, want one with one partition", len(resp.Topics))
	}
	return resp.Topics[0].Partitions[0]
}

// readAll reads topic/part from offset up to the high watermark.
func (rc *rawConn) readAll(topic string, part int32, from int64) []storedRecord {
	rc.t.Helper()
	var out []storedRecord
	for {
		sp := fetchPartition(rc.t, rc.roundTrip(fetchReq(topic, part, from, -1, 0, 0)).(*kmsg.FetchResponse))
		if sp.ErrorCode != 0 {
			rc.t.Fatalf("fetch %s-%d at %d: %v", topic, part, from, kerr.ErrorForCode(sp.ErrorCode))
		}
		got := parseBatches(rc.t, sp.RecordBatches)
		for _, r := range got {
			if r.Offset >= from {
				out = append(out, r)
			}
		}
		if len(got) > 0 {
			from = got[len(got)-1].Offset + 1
		}
		if from >= sp.HighWatermark || len(got) == 0 {
			if from < sp.HighWatermark {
				rc.t.Fatalf("fetch %s-%d at %d returned nothing below the high watermark %d", topic, part, from, sp.HighWatermark)
			}
			return out
		}
	}
}

// highWatermark returns a partition's high watermark.
func (rc *rawConn) highWatermark(topic string, part int32) int64 {
	rc.t.Helper()
	sp := fetchPartition(rc.t, rc.roundTrip(fetchReq(topic, part, 0, -1, 0, 0)).(*kmsg.FetchResponse))
	if sp.ErrorCode != 0 && sp.ErrorCode != kerr.OffsetOutOfRange.Code {
		rc.t.Fatalf("fetch %s-%d: %s", topic, part, errName(sp.ErrorCode))
	}
	return sp.HighWatermark
}

// parseBatches decodes uncompressed v2 batches.
func parseBatches(t testing.TB, b []byte) []storedRecord {
	t.Helper()
	var out []storedRecord
	for len(b) >= 12 {
		size := 12 + int(int32(binary.BigEndian.Uint32(b[8:])))
		if size > len(b) {
			break // a partial batch at the end is allowed
		}
		var kb kmsg.RecordBatch
		if err := kb.ReadFrom(b[:size]); err != nil {
			t.Fatalf("decode batch: %v", err)
		}
		if kb.Attributes&7 != 0 {
			t.Fatalf("parseBatches: compressed batch (attributes %#x)", kb.Attributes)
		}
		data := kb.Records
		for range kb.NumRecords {
			l, n := binary.Varint(data)
			if n <= 0 || int(l)+n > len(data) {
				t.Fatalf("decode record: bad length")
			}
			var r kmsg.Record
			if err := r.ReadFrom(data[:n+int(l)]); err != nil {
				t.Fatalf("decode record: %v", err)
			}
			ts := kb.FirstTimestamp + r.TimestampDelta64
			if kb.Attributes&0x08 != 0 {
				ts = kb.MaxTimestamp
			}
			out = append(out, storedRecord{Offset: kb.FirstOffset + int64(r.OffsetDelta), Key: string(r.Key), Value: string(r.Value), Timestamp: ts})
			data = data[n+int(l):]
		}
		b = b[size:]
	}
	return out
}

func values(rs []storedRecord) []string {
	var out []string
	for _, r := range rs {
		out = append(out, r.Value)
	}
	return out
}

// --- topics and clients -----------------------------------------------------

// createTopic creates a topic over rc and fails the test on error.
func (rc *rawConn) createTopic(name string, partitions int32, configs map[string]string) {
	rc.t.Helper()
	st := rc.createTopics(false, topicReq(name, partitions, 1, configs))[0]
	if st.ErrorCode != 0 {
		rc.t.Fatalf("create topic %q: %v: %v", name, kerr.ErrorForCode(st.ErrorCode), deref(st.ErrorMessage))
	}
}

func topicReq(name string, partitions int32, rf int16, configs map[string]string) kmsg.CreateTopicsRequestTopic {
	rt := kmsg.NewCreateTopicsRequestTopic()
	rt.Topic = name
	rt.NumPartitions = partitions
	rt.ReplicationFactor = rf
	for _, k := range sortedKeys(configs) {
		c := kmsg.NewCreateTopicsRequestTopicConfig()
		c.Name = k
		v := configs[k]
		c.Value = &v
		rt.Configs = append(rt.Configs, c)
	}
	return rt
}

func (rc *rawConn) createTopics(validateOnly bool, topics ...kmsg.CreateTopicsRequestTopic) []kmsg.CreateTopicsResponseTopic {
	rc.t.Helper()
	req := kmsg.NewPtrCreateTopicsRequest()
	req.Version = 7
	req.TimeoutMillis = 10000
	req.ValidateOnly = validateOnly
	req.Topics = topics
	resp := rc.roundTrip(req).(*kmsg.CreateTopicsResponse)
	if len(resp.Topics) != len(topics) {
		rc.t.Fatalf("create topics: %d answers for %d topics", len(resp.Topics), len(topics))
	}
	return resp.Topics
}

func sortedKeys(m map[string]string) []string {
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return ks
}

func deref(s *string) string {
	if s == nil {
		return "<nil>"
	}
	return *s
}

// newClient returns a kgo client for b, closed when the test ends.
func newClient(t testing.TB, b *brokertest.Broker, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(b.Addr()), kgo.RequestRetries(2)}, opts...)...)
	if err != nil {
		t.Fatalf("kgo client: %v", err)
	}
	t.Cleanup(cl.Close)
	return cl
}

func newAdmin(t testing.TB, b *brokertest.Broker) *kadm.Client {
	return kadm.NewClient(newClient(t, b))
}

// testCtx is a context that ends with the test or after ioTimeout.
func testCtx(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), ioTimeout)
	t.Cleanup(cancel)
	return ctx
}

// consume reads n records of topic (all partitions, from the start) with
// a fresh consumer.
func consume(t testing.TB, b *brokertest.Broker, topic string, n int) []*kgo.Record {
	t.Helper()
	cl := newClient(t, b, kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	ctx := testCtx(t)
	var out []*kgo.Record
	for len(out) < n {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("consume %s: got %d of %d records before the deadline", topic, len(out), n)
		}
		for _, e := range fs.Errors() {
			t.Fatalf("consume %s: %v", topic, e.Err)
		}
		out = append(out, fs.Records()...)
	}
	return out
}

// errCode names a Kafka error code for messages.
func errName(code int16) string {
	if code == 0 {
		return "NONE(0)"
	}
	if e, ok := kerr.ErrorForCode(code).(*kerr.Error); ok {
		return fmt.Sprintf("%s(%d)", e.Message, code)
	}
	return fmt.Sprintf("code %d", code)
}
