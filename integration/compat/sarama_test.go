package compat

import (
	"testing"
	"time"

	"github.com/IBM/sarama"
)

var saramaCodecs = map[string]sarama.CompressionCodec{
	"none":   sarama.CompressionNone,
	"gzip":   sarama.CompressionGZIP,
	"snappy": sarama.CompressionSnappy,
	"lz4":    sarama.CompressionLZ4,
	"zstd":   sarama.CompressionZSTD,
}

// TestSarama produces with sarama's SyncProducer (one SendMessages call per
// codec) and consumes with its partition consumer (no group), at sarama's
// default protocol version.
func TestSarama(t *testing.T) {
	t.Parallel()
	addr := startBroker(t)
	for _, codec := range codecs {
		t.Run(codec, func(t *testing.T) {
			topic := topicName(t)
			createTopic(t, addr, topic, 1)
			want := sampleRecords(20, codec)

			cfg := sarama.NewConfig()
			cfg.ClientID = "runnel-compat"
			cfg.Producer.Return.Successes = true
			cfg.Producer.RequiredAcks = sarama.WaitForAll
			cfg.Producer.Compression = saramaCodecs[codec]
			cfg.Producer.Partitioner = sarama.NewManualPartitioner
			cfg.Producer.Flush.Messages = len(want) // one batch
			cfg.Producer.Flush.Frequency = 50 * time.Millisecond
			cfg.Consumer.Return.Errors = true
			t.Logf("sarama protocol version %s", cfg.Version)

			prod, err := sarama.NewSyncProducer([]string{addr}, cfg)
			if err != nil {
				t.Fatalf("sync producer: %v", err)
			}
			defer prod.Close()
			msgs := make([]*sarama.ProducerMessage, len(want))
			for i, r := range want {
				hs := make([]sarama.RecordHeader, len(r.Headers))
				for j, h := range r.Headers {
					hs[j] = sarama.RecordHeader{Key: []byte(h.Key), Value: []byte(h.Value)}
				}
				msgs[i] = &sarama.ProducerMessage{
					Topic:     topic,
					Partition: r.Partition,
					Key:       sarama.StringEncoder(r.Key),
					Value:     sarama.StringEncoder(r.Value),
					Headers:   hs,
					Timestamp: time.UnixMilli(r.Timestamp),
				}
			}
			if err := prod.SendMessages(msgs); err != nil {
				t.Fatalf("SendMessages: %v", err)
			}
			acked := make([]record, len(msgs))
			for i, m := range msgs {
				acked[i] = record{Partition: m.Partition, Offset: m.Offset}
			}
			assertProduced(t, "sarama", acked, want)

			assertRecords(t, "log after sarama produce", readLog(t, addr, topic, 1, len(want), codec), want)

			cons, err := sarama.NewConsumer([]string{addr}, cfg)
			if err != nil {
				t.Fatalf("consumer: %v", err)
			}
			defer cons.Close()
			pc, err := cons.ConsumePartition(topic, 0, sarama.OffsetOldest)
			if err != nil {
				t.Fatalf("consume partition: %v", err)
			}
			defer pc.Close()
			ctx := testContext(t, 30*time.Second)
			var got []record
			for len(got) < len(want) {
				select {
				case m := <-pc.Messages():
					hs := make([]header, len(m.Headers))
					for j, h := range m.Headers {
						hs[j] = header{string(h.Key), string(h.Value)}
					}
					got = append(got, record{
						Partition: m.Partition,
						Offset:    m.Offset,
						Key:       string(m.Key),
						Value:     string(m.Value),
						Headers:   hs,
						Timestamp: m.Timestamp.UnixMilli(),
					})
				case err := <-pc.Errors():
					t.Fatalf("sarama consumer: %v", err)
				case <-ctx.Done():
					t.Fatalf("sarama consumer: have %d of %d records: %v", len(got), len(want), ctx.Err())
				}
			}
			assertRecords(t, "sarama consume", got, want)
		})
	}
}
