package batch_test

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"testing"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/s2"
	"github.com/klauspost/compress/zstd"
	"github.com/pierrec/lz4/v4"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/runnel-io/runnel/broker/internal/batch"
)

// codecs are the ways a test batch can be compressed. snappy is raw snappy
// (librdkafka, sarama); xerial is snappy in the Java client's framing.
var codecs = []struct {
	name  string
	codec batch.Codec
	xer   bool
}{
	{"none", batch.CodecNone, false},
	{"gzip", batch.CodecGzip, false},
	{"snappy", batch.CodecSnappy, false},
	{"xerial", batch.CodecSnappy, true},
	{"lz4", batch.CodecLZ4, false},
	{"zstd", batch.CodecZstd, false},
}

// compress compresses raw records for codec c; xer selects the xerial
// framing for snappy, with blocks of at most blockSize bytes.
func compress(tb testing.TB, c batch.Codec, xer bool, raw []byte) []byte {
	tb.Helper()
	var buf bytes.Buffer
	switch c {
	case batch.CodecNone:
		return raw
	case batch.CodecGzip:
		w := gzip.NewWriter(&buf)
		w.Write(raw)
		if err := w.Close(); err != nil {
			tb.Fatal(err)
		}
	case batch.CodecSnappy:
		if !xer {
			return s2.EncodeSnappy(nil, raw)
		}
		return xerial(raw, 32<<10)
	case batch.CodecLZ4:
		w := lz4.NewWriter(&buf)
		w.Write(raw)
		if err := w.Close(); err != nil {
			tb.Fatal(err)
		}
	case batch.CodecZstd:
		enc, err := zstd.NewWriter(nil, zstd.WithEncoderConcurrency(1))
		if err != nil {
			tb.Fatal(err)
		}
		defer enc.Close()
		return enc.EncodeAll(raw, nil)
	default:
		tb.Fatalf("codec %v", c)
	}
	return buf.Bytes()
}

// xerial frames raw as the Java client's SnappyOutputStream does.
func xerial(raw []byte, blockSize int) []byte {
	out := []byte{0x82, 'S', 'N', 'A', 'P', 'P', 'Y', 0, 0, 0, 0, 1, 0, 0, 0, 1}
	for len(raw) > 0 {
		n := min(blockSize, len(raw))
		block := s2.EncodeSnappy(nil, raw[:n])
		out = binary.BigEndian.AppendUint32(out, uint32(len(block)))
		out = append(out, block...)
		raw = raw[n:]
	}
	return out
}

// rec is a short way to write a record.
func rec(key, value string, headers ...kmsg.Header) kmsg.Record {
	r := kmsg.Record{Value: []byte(value), Headers: headers}
	if key != "\x00null" {
		r.Key = []byte(key)
	}
	return r
}

const nullKey = "\x00null"

// appendRecords encodes records with their lengths filled in; offset deltas
// are the records' own (rec leaves them 0: set them or use numbered).
func appendRecords(dst []byte, recs []kmsg.Record) []byte {
	for _, r := range recs {
		r.Length = 0
		r.Length = int32(len(r.AppendTo(nil)) - 1)
		dst = r.AppendTo(dst)
	}
	return dst
}

// numbered sets each record's offset delta to its index.
func numbered(recs []kmsg.Record) []kmsg.Record {
	out := make([]kmsg.Record, len(recs))
	for i, r := range recs {
		r.OffsetDelta = int32(i)
		r.TimestampDelta64 = int64(i)
		out[i] = r
	}
	return out
}

// build is the test batch builder: the records, numbered, compressed with
// codec c, in a batch whose header edit may change before encoding; the CRC
// is computed last.
func build(tb testing.TB, c batch.Codec, xer bool, recs []kmsg.Record, edit func(*kmsg.RecordBatch)) []byte {
	tb.Helper()
	return buildRaw(tb, c, xer, appendRecords(nil, numbered(recs)), len(recs), edit)
}

// buildRaw is build for records already encoded.
func buildRaw(tb testing.TB, c batch.Codec, xer bool, raw []byte, n int, edit func(*kmsg.RecordBatch)) []byte {
	tb.Helper()
	payload := compress(tb, c, xer, raw)
	rb := kmsg.RecordBatch{
		FirstOffset:          0,
		PartitionLeaderEpoch: -1,
		Magic:                2,
		Attributes:           int16(c),
		LastOffsetDelta:      int32(n - 1),
		FirstTimestamp:       1_700_000_000_000,
		MaxTimestamp:         1_700_000_000_000 + int64(n-1),
		ProducerID:           -1,
		ProducerEpoch:        -1,
		FirstSequence:        -1,
		NumRecords:           int32(n),
		Records:              payload,
	}
	rb.Length = int32(batch.HeaderSize - batch.LengthOverhead + len(payload))
	if edit != nil {
		edit(&rb)
	}
	b := rb.AppendTo(nil)
	seal(b)
	return b
}

// seal rewrites the CRC of batch b after a test changed its bytes.
func seal(b []byte) {
	if len(b) >= batch.HeaderSize {
		binary.BigEndian.PutUint32(b[17:], crc32.Checksum(b[21:], crc32.MakeTable(crc32.Castagnoli)))
	}
}

// sampleRecords are records with every shape a record can take.
func sampleRecords() []kmsg.Record {
	return []kmsg.Record{
		rec("k0", "v0"),
		rec(nullKey, "value with a null key"),
		rec("", ""),
		rec("k3", "v3", kmsg.Header{Key: "h", Value: []byte("hv")}, kmsg.Header{Key: "", Value: nil}),
		{Key: []byte("k4"), Value: nil}, // tombstone
		rec("k5", string(bytes.Repeat([]byte("x"), 3000))),
	}
}

// keyed are sampleRecords without the null key.
func keyed() []kmsg.Record {
	recs := sampleRecords()
	recs[1].Key = []byte("k1")
	return recs
}

// many returns n records of valueSize bytes each.
func many(n, valueSize int) []kmsg.Record {
	recs := make([]kmsg.Record, n)
	for i := range recs {
		v := bytes.Repeat([]byte{byte('a' + i%26)}, valueSize)
		recs[i] = kmsg.Record{Key: fmt.Appendf(nil, "key-%d", i), Value: v}
	}
	return recs
}
