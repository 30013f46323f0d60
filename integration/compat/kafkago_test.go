package compat

import (
	"sync"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"
	"github.com/segmentio/kafka-go/compress"
)

var kafkaGoCodecs = map[string]compress.Compression{
	"none":   0,
	"gzip":   kafka.Gzip,
	"snappy": kafka.Snappy,
	"lz4":    kafka.Lz4,
	"zstd":   kafka.Zstd,
}

// TestKafkaGo produces with segmentio/kafka-go's Writer (one WriteMessages
// call per codec) and consumes with its Reader on partition 0 (no group).
func TestKafkaGo(t *testing.T) {
	t.Parallel()
	addr := startBroker(t)
	for _, codec := range codecs {
		t.Run(codec, func(t *testing.T) {
			topic := topicName(t)
			createTopic(t, addr, topic, 1)
			want := sampleRecords(20, codec)

			var (
				mu    sync.Mutex // Completion runs on the writer's goroutine
				acked []record
			)
			// kafka-go's default Transport is shared by every Writer and
			// caches metadata for 6s: a topic created after the first
			// write would be unknown to it. Give each writer its own.
			tr := &kafka.Transport{}
			defer tr.CloseIdleConnections()
			w := &kafka.Writer{
				Addr:         kafka.TCP(addr),
				Transport:    tr,
				Topic:        topic,
				Balancer:     &kafka.LeastBytes{}, // one partition: always 0
				RequiredAcks: kafka.RequireAll,
				Compression:  kafkaGoCodecs[codec],
				BatchSize:    len(want),
				BatchTimeout: 50 * time.Millisecond,
				Completion: func(msgs []kafka.Message, err error) {
					mu.Lock()
					defer mu.Unlock()
					for _, m := range msgs {
						acked = append(acked, record{Partition: int32(m.Partition), Offset: m.Offset})
					}
				},
			}
			msgs := make([]kafka.Message, len(want))
			for i, r := range want {
				hs := make([]kafka.Header, len(r.Headers))
				for j, h := range r.Headers {
					hs[j] = kafka.Header{Key: h.Key, Value: []byte(h.Value)}
				}
				msgs[i] = kafka.Message{
					Key:     []byte(r.Key),
					Value:   []byte(r.Value),
					Headers: hs,
					Time:    time.UnixMilli(r.Timestamp),
				}
			}
			ctx := testContext(t, 30*time.Second)
			if err := w.WriteMessages(ctx, msgs...); err != nil {
				t.Fatalf("WriteMessages: %v", err)
			}
			if err := w.Close(); err != nil {
				t.Fatalf("close writer: %v", err)
			}
			mu.Lock()
			assertProduced(t, "kafka-go", acked, want)
			mu.Unlock()

			assertRecords(t, "log after kafka-go produce", readLog(t, addr, topic, 1, len(want), codec), want)

			rd := kafka.NewReader(kafka.ReaderConfig{
				Brokers:   []string{addr},
				Topic:     topic,
				Partition: 0,
				MinBytes:  1,
				MaxBytes:  1 << 20,
				MaxWait:   100 * time.Millisecond,
			})
			defer rd.Close()
			if err := rd.SetOffset(kafka.FirstOffset); err != nil {
				t.Fatal(err)
			}
			var got []record
			for len(got) < len(want) {
				m, err := rd.ReadMessage(ctx)
				if err != nil {
					t.Fatalf("ReadMessage: have %d of %d records: %v", len(got), len(want), err)
				}
				hs := make([]header, len(m.Headers))
				for j, h := range m.Headers {
					hs[j] = header{h.Key, string(h.Value)}
				}
				got = append(got, record{
					Partition: int32(m.Partition),
					Offset:    m.Offset,
					Key:       string(m.Key),
					Value:     string(m.Value),
					Headers:   hs,
					Timestamp: m.Time.UnixMilli(),
				})
			}
			assertRecords(t, "kafka-go consume", got, want)
		})
	}
}
