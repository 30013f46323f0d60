package batch_test

import (
	"bytes"
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/runnel-io/runnel/broker/internal/batch"
)

// Batches as franz-go's producer really writes them (its streaming
// compressors, xerial-framed snappy, idempotent sequence numbers) validate
// and iterate. They are produced to kfake and fetched back raw.
func TestFranzGoProducedBatches(t *testing.T) {
	if testing.Short() {
		t.Skip("starts an in-process kfake cluster")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	cluster, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, "t"))
	if err != nil {
		t.Fatal(err)
	}
	defer cluster.Close()

	producers := []struct {
		name  string
		codec kgo.CompressionCodec
		want  batch.Codec
	}{
		{"none", kgo.NoCompression(), batch.CodecNone},
		{"gzip", kgo.GzipCompression(), batch.CodecGzip},
		{"snappy", kgo.SnappyCompression(), batch.CodecSnappy},
		{"lz4", kgo.Lz4Compression(), batch.CodecLZ4},
		{"zstd", kgo.ZstdCompression(), batch.CodecZstd},
	}
	const perBatch = 50
	for _, p := range producers {
		cl, err := kgo.NewClient(
			kgo.SeedBrokers(cluster.ListenAddrs()...),
			kgo.DefaultProduceTopic("t"),
			kgo.ProducerBatchCompression(p.codec),
			kgo.ProducerLinger(time.Minute), // one batch per flush
		)
		if err != nil {
			t.Fatal(err)
		}
		for j := range perBatch {
			r := &kgo.Record{Key: fmt.Appendf(nil, "%s-%d", p.name, j), Value: make([]byte, 500+j)}
			if j == 3 {
				r.Headers = []kgo.RecordHeader{{Key: "h", Value: []byte("v")}}
			}
			cl.Produce(ctx, r, func(_ *kgo.Record, err error) {
				if err != nil {
					t.Errorf("produce %s: %v", p.name, err)
				}
			})
		}
		if err := cl.Flush(ctx); err != nil {
			t.Fatal(err)
		}
		cl.Close()
	}

	cl, err := kgo.NewClient(kgo.SeedBrokers(cluster.ListenAddrs()...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	raw := fetchRaw(ctx, t, cl, "t")

	// A producer usually sends its 50 records in one batch, but may cut
	// it (a slow machine, a retry): count records per codec across batches.
	count := map[batch.Codec]int{}
	var order []batch.Codec
	for len(raw) > 0 {
		h, err := batch.ParseHeader(raw)
		if err != nil {
			t.Fatal(err)
		}
		b := raw[:h.Size()]
		raw = raw[h.Size():]
		batch.SetBaseOffset(b, 0) // as the producer sent it
		if _, err := batch.Validate(b, batch.ValidateOptions{RequireKeys: true}); err != nil {
			t.Fatalf("%s batch: %v", h.Codec(), err)
		}
		if !h.HasProducerID() || int(h.BaseSequence) != count[h.Codec()] {
			t.Fatalf("%s batch: sequence %d after %d records", h.Codec(), h.BaseSequence, count[h.Codec()])
		}
		if h.Codec() == batch.CodecSnappy {
			t.Logf("snappy batch xerial-framed: %v", bytes.HasPrefix(b[batch.HeaderSize:], []byte("\x82SNAPPY\x00")))
		}
		n := 0
		err = batch.ForEachRecord(b, 0, func(r *batch.Record) error {
			j := count[h.Codec()] + n
			if int(r.OffsetDelta) != n || len(r.Value) != 500+j {
				return fmt.Errorf("record %d: delta %d, %d value bytes", j, r.OffsetDelta, len(r.Value))
			}
			if j == 3 && (len(r.Headers) != 1 || string(r.Headers[0].Key) != "h") {
				return fmt.Errorf("record 3 headers %v", r.Headers)
			}
			n++
			return nil
		})
		if err != nil || n != int(h.NumRecords) {
			t.Fatalf("%s batch: %d records, %v", h.Codec(), n, err)
		}
		if count[h.Codec()] == 0 {
			order = append(order, h.Codec())
		}
		count[h.Codec()] += n
	}
	if len(order) != len(producers) {
		t.Fatalf("saw codecs %v", order)
	}
	for i, p := range producers {
		if order[i] != p.want || count[p.want] != perBatch {
			t.Fatalf("codec %d is %s with %d records, want %s with %d", i, order[i], count[order[i]], p.want, perBatch)
		}
	}
}

// fetchRaw returns the raw record batches of partition 0 of topic.
func fetchRaw(ctx context.Context, t *testing.T, cl *kgo.Client, topic string) []byte {
	t.Helper()
	meta := kmsg.NewPtrMetadataRequest()
	mt := kmsg.NewMetadataRequestTopic()
	mt.Topic = kmsg.StringPtr(topic)
	meta.Topics = append(meta.Topics, mt)
	mresp, err := meta.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}

	req := kmsg.NewPtrFetchRequest()
	req.MaxWaitMillis = 100
	req.MaxBytes = 50 << 20
	ft := kmsg.NewFetchRequestTopic()
	ft.Topic = topic
	ft.TopicID = mresp.Topics[0].TopicID
	fp := kmsg.NewFetchRequestTopicPartition()
	fp.Partition = 0
	fp.PartitionMaxBytes = 50 << 20
	ft.Partitions = append(ft.Partitions, fp)
	req.Topics = append(req.Topics, ft)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
		t.Fatalf("fetch response %+v", resp)
	}
	p := resp.Topics[0].Partitions[0]
	if p.ErrorCode != 0 {
		t.Fatalf("fetch error %d", p.ErrorCode)
	}
	return p.RecordBatches
}
