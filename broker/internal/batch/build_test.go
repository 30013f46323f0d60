package batch_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"

	"github.com/runnel-io/runnel/broker/internal/batch"
)

// Batches built with AppendRecord, Compress and AppendBatch (as the log
// cleaner rebuilds them) validate here and decode in franz-go's consumer,
// for every codec: produced raw to kfake, consumed with kgo. (kfake refuses
// produced batches with offset gaps; the broker's compaction test consumes
// gapped, rebuilt zstd batches with kgo.)
func TestBuiltBatchesDecodeInFranzGo(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cluster, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, "t"))
	if err != nil {
		t.Fatal(err)
	}
	defer cluster.Close()
	// Produce v9: later versions name topics by id.
	cl, err := kgo.NewClient(kgo.SeedBrokers(cluster.ListenAddrs()...), kgo.MaxVersions(kversion.V3_0_0()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()

	codecs := []batch.Codec{batch.CodecNone, batch.CodecGzip, batch.CodecSnappy, batch.CodecLZ4, batch.CodecZstd}
	for _, c := range codecs {
		var raw []byte
		for i := range 5 {
			r := batch.Record{TimestampDelta: int64(-3 + 2*i), OffsetDelta: int32(i), Key: []byte(fmt.Sprintf("k%d", i))}
			if i != 2 {
				r.Value = []byte(fmt.Sprintf("%v-%d", c, i))
			}
			if i == 4 {
				r.Headers = []batch.RecordHeader{{Key: []byte("h"), Value: nil}, {Key: []byte("h2"), Value: []byte("v")}}
			}
			raw = batch.AppendRecord(raw, &r)
		}
		cmp, err := batch.Compress(nil, c, raw)
		if err != nil {
			t.Fatal(err)
		}
		h := batch.Header{PartitionLeaderEpoch: -1, Attributes: int16(c), LastOffsetDelta: 4,
			FirstTimestamp: 1_700_000_000_000, MaxTimestamp: 1_700_000_000_005,
			ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1, NumRecords: 5}
		b := batch.AppendBatch(nil, &h, cmp)
		// Validate is for produced batches, whose offsets have no gaps; a
		// rebuilt batch is checked for its CRC and records.
		if bh, err := batch.ParseHeader(b); err != nil || batch.ComputeCRC(b) != bh.CRC || bh.Size() != len(b) {
			t.Fatalf("%v: built batch header %+v, %v", c, bh, err)
		}
		if err := batch.ForEachRecord(b, 0, func(*batch.Record) error { return nil }); err != nil {
			t.Fatalf("%v: built batch does not iterate: %v", c, err)
		}
		req := kmsg.NewPtrProduceRequest()
		req.Acks, req.TimeoutMillis = -1, 5000
		rt := kmsg.NewProduceRequestTopic()
		rt.Topic = "t"
		rp := kmsg.NewProduceRequestTopicPartition()
		rp.Records = b
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		resp, err := req.RequestWith(ctx, cl)
		if err != nil || resp.Topics[0].Partitions[0].ErrorCode != 0 {
			t.Fatalf("%v: produce: %v %+v", c, err, resp)
		}
	}

	cons, err := kgo.NewClient(kgo.SeedBrokers(cluster.ListenAddrs()...),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{"t": {0: kgo.NewOffset().AtStart()}}))
	if err != nil {
		t.Fatal(err)
	}
	defer cons.Close()
	var got []*kgo.Record
	for len(got) < 5*len(codecs) {
		fs := cons.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("consumed %d records", len(got))
		}
		for _, e := range fs.Errors() {
			t.Fatal(e.Err)
		}
		got = append(got, fs.Records()...)
	}
	for i, r := range got {
		c, j := codecs[i/5], i%5
		want := fmt.Sprintf("%v-%d", c, j)
		if j == 2 {
			want = ""
		}
		ts := time.UnixMilli(1_700_000_000_000 - 3 + 2*int64(j))
		if string(r.Key) != fmt.Sprintf("k%d", j) || string(r.Value) != want || (j == 2) != (r.Value == nil) ||
			r.Offset != int64(i) || !r.Timestamp.Equal(ts) || (j == 4) != (len(r.Headers) == 2) {
			t.Fatalf("%v record %d: key %q value %q offset %d ts %v headers %v", c, j, r.Key, r.Value, r.Offset, r.Timestamp, r.Headers)
		}
	}
}
