package serde_test

import (
	"testing"

	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/runnel-io/runnel/streams/serde"
)

// benchSerde measures Encode into a reused buffer and Decode of its output,
// the way a task uses a serde per record.
func benchSerde[T any](b *testing.B, s serde.Serde[T], v T) {
	b.Run("Encode", func(b *testing.B) {
		b.ReportAllocs()
		buf := make([]byte, 0, 256)
		var err error
		for b.Loop() {
			if buf, err = s.Encode(buf[:0], v); err != nil {
				b.Fatal(err)
			}
		}
		b.SetBytes(int64(len(buf)))
	})
	b.Run("Decode", func(b *testing.B) {
		b.ReportAllocs()
		in, err := s.Encode(nil, v)
		if err != nil {
			b.Fatal(err)
		}
		b.SetBytes(int64(len(in)))
		for b.Loop() {
			if _, err := s.Decode(in); err != nil {
				b.Fatal(err)
			}
		}
	})
}

func BenchmarkInt64(b *testing.B)   { benchSerde(b, serde.Int64, 1<<40+7) }
func BenchmarkInt32(b *testing.B)   { benchSerde(b, serde.Int32, 1<<20+7) }
func BenchmarkFloat64(b *testing.B) { benchSerde(b, serde.Float64, 3.25) }
func BenchmarkBool(b *testing.B)    { benchSerde(b, serde.Bool, true) }
func BenchmarkString(b *testing.B)  { benchSerde(b, serde.String, "store-17/sku-004211") }
func BenchmarkBytes(b *testing.B)   { benchSerde(b, serde.Bytes, []byte("store-17/sku-004211")) }

func BenchmarkJSON(b *testing.B) {
	benchSerde(b, serde.JSON[order](), order{ID: "o-1", Qty: 3, Price: 9.99, Tags: []string{"a", "b"}})
}

func BenchmarkProto(b *testing.B) {
	benchSerde(b, stringValueSerde(), wrapperspb.String("store-17/sku-004211"))
}
