package batch_test

import (
	"fmt"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/runnel-io/runnel/broker/internal/batch"
)

// BenchmarkValidate validates an uncompressed batch of 16 records of 1 KB,
// what a produce handler does for every batch of a delete-policy topic.
func BenchmarkValidate(b *testing.B) {
	bt := build(b, batch.CodecNone, false, benchRecords(), nil)
	b.SetBytes(int64(len(bt)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := batch.Validate(bt, batch.ValidateOptions{RequireKeys: true}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkForEachRecord iterates 16 records of 1 KB per codec. Bytes per
// second are of decompressed records.
func BenchmarkForEachRecord(b *testing.B) {
	raw := appendRecords(nil, numbered(benchRecords()))
	for _, c := range codecs {
		b.Run(c.name, func(b *testing.B) {
			bt := buildRaw(b, c.codec, c.xer, raw, 16, nil)
			b.SetBytes(int64(len(raw)))
			b.ReportAllocs()
			for b.Loop() {
				n := 0
				err := batch.ForEachRecord(bt, 0, func(r *batch.Record) error { n++; return nil })
				if err != nil || n != 16 {
					b.Fatal(n, err)
				}
			}
		})
	}
}

// BenchmarkValidateCompacted validates compressed batches of a compacted
// topic, which decompresses them.
func BenchmarkValidateCompacted(b *testing.B) {
	raw := appendRecords(nil, numbered(benchRecords()))
	for _, c := range codecs[1:] {
		b.Run(c.name, func(b *testing.B) {
			bt := buildRaw(b, c.codec, c.xer, raw, 16, nil)
			b.SetBytes(int64(len(raw)))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := batch.Validate(bt, batch.ValidateOptions{RequireKeys: true}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// benchRecords are 16 records with 1 KB values of sales-event JSON, which
// compress about as well as real payloads do.
func benchRecords() []kmsg.Record {
	recs := make([]kmsg.Record, 16)
	x := uint32(2463534242)
	rnd := func() uint32 { x ^= x << 13; x ^= x >> 17; x ^= x << 5; return x }
	for i := range recs {
		var v []byte
		for len(v) < 1024 {
			v = fmt.Appendf(v, `{"store":%d,"sku":"SKU-%05d","qty":%d,"price_cents":%d,"ts":%d}`,
				rnd()%500, rnd()%100000, rnd()%20, rnd()%100000, 1_700_000_000_000+int64(rnd()%1000000))
		}
		recs[i] = kmsg.Record{Key: fmt.Appendf(nil, "store-%d", i), Value: v[:1024]}
	}
	return recs
}
