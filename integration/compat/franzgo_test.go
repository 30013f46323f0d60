package compat

import (
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

func kgoCodec(codec string) kgo.CompressionCodec {
	switch codec {
	case "gzip":
		return kgo.GzipCompression()
	case "snappy":
		return kgo.SnappyCompression()
	case "lz4":
		return kgo.Lz4Compression()
	case "zstd":
		return kgo.ZstdCompression()
	}
	return kgo.NoCompression()
}

func toKgo(topic string, r record) *kgo.Record {
	hs := make([]kgo.RecordHeader, 0, len(r.Headers))
	for _, h := range r.Headers {
		hs = append(hs, kgo.RecordHeader{Key: h.Key, Value: []byte(h.Value)})
	}
	return &kgo.Record{
		Topic:     topic,
		Partition: r.Partition,
		Key:       []byte(r.Key),
		Value:     []byte(r.Value),
		Headers:   hs,
		Timestamp: time.UnixMilli(r.Timestamp),
	}
}

// produceKgo writes recs (all for one partition) to topic with franz-go in one
// batch compressed with codec, and checks the offsets it is acknowledged.
func produceKgo(t *testing.T, addr, topic, codec string, recs []record) {
	t.Helper()
	cl, err := kgo.NewClient(
		kgo.SeedBrokers(addr),
		kgo.ProducerBatchCompression(kgoCodec(codec)),
		kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.RequiredAcks(kgo.AllISRAcks()),
	)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	krecs := make([]*kgo.Record, len(recs))
	for i, r := range recs {
		krecs[i] = toKgo(topic, r)
	}
	if err := cl.ProduceSync(testContext(t, 30*time.Second), krecs...).FirstErr(); err != nil {
		t.Fatalf("franz-go produce: %v", err)
	}
	acked := make([]record, len(krecs))
	for i, r := range krecs {
		acked[i] = record{Partition: r.Partition, Offset: r.Offset}
	}
	assertProduced(t, "franz-go", acked, recs)
}

// TestFranzGo produces with franz-go (idempotent, the default) in one batch per
// codec and reads the records back with franz-go.
func TestFranzGo(t *testing.T) {
	t.Parallel()
	addr := startBroker(t)
	for _, codec := range codecs {
		t.Run(codec, func(t *testing.T) {
			topic := topicName(t)
			createTopic(t, addr, topic, 1)
			want := sampleRecords(20, codec)

			produceKgo(t, addr, topic, codec, want)
			assertRecords(t, "franz-go consume", readLog(t, addr, topic, 1, len(want), codec), want)
		})
	}
}

// TestFranzGoPartitions spreads records over three partitions by key (franz-go's
// default partitioner hashes keys) and checks each partition's offsets start at
// zero and are dense, and that records with one key stay in one partition in
// the order they were produced.
func TestFranzGoPartitions(t *testing.T) {
	t.Parallel()
	addr := startBroker(t)
	topic := topicName(t)
	createTopic(t, addr, topic, 3)

	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ProducerBatchCompression(kgo.ZstdCompression()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	sample := sampleRecords(60, "zstd")
	recs := make([]*kgo.Record, len(sample))
	for i, r := range sample {
		r.Key = []string{"store-1", "store-2", "store-3", "store-4", "store-5"}[i%5]
		recs[i] = toKgo(topic, r)
		recs[i].Partition = -1 // chosen by the partitioner
	}
	ctx := testContext(t, 30*time.Second)
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatalf("produce: %v", err)
	}

	// What the producer was told, per partition, in produce order.
	var want []record
	next := map[int32]int64{}
	partOf := map[string]int32{}
	for p := range int32(3) {
		for _, r := range recs {
			if r.Partition != p {
				continue
			}
			if r.Offset != next[p] {
				t.Errorf("record %q acknowledged at %d/%d, want offset %d", r.Value, p, r.Offset, next[p])
			}
			next[p]++
			if q, ok := partOf[string(r.Key)]; ok && q != p {
				t.Errorf("key %s went to partitions %d and %d", r.Key, q, p)
			}
			partOf[string(r.Key)] = p
			want = append(want, fromKgo(r))
		}
	}
	assertRecords(t, "franz-go consume", readLog(t, addr, topic, 3, len(recs), "zstd"), want)
}
