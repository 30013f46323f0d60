package batch_test

import (
	"encoding/binary"
	"errors"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/runnel-io/runnel/broker/internal/batch"
)

func TestValidateAcceptsEveryCodec(t *testing.T) {
	for _, c := range codecs {
		t.Run(c.name, func(t *testing.T) {
			b := build(t, c.codec, c.xer, sampleRecords(), nil)
			h, err := batch.Validate(b, batch.ValidateOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if h.NumRecords != 6 || h.Codec() != c.codec || h.Size() != len(b) {
				t.Fatalf("header %+v", h)
			}
			// With keys required, every codec is opened and walked.
			kb := build(t, c.codec, c.xer, keyed(), nil)
			if _, err := batch.Validate(kb, batch.ValidateOptions{RequireKeys: true}); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// editBytes returns a mutation of an encoded batch; reseal recomputes the CRC
// afterwards, as a producer that built the batch that way would have.
func editBytes(reseal bool, f func(b []byte) []byte) func(b []byte) []byte {
	return func(b []byte) []byte {
		b = f(b)
		if reseal {
			seal(b)
		}
		return b
	}
}

func TestValidateErrors(t *testing.T) {
	plain := func(recs ...kmsg.Record) func(testing.TB) []byte {
		return func(tb testing.TB) []byte { return build(tb, batch.CodecNone, false, recs, nil) }
	}
	header := func(edit func(*kmsg.RecordBatch)) func(testing.TB) []byte {
		return func(tb testing.TB) []byte { return build(tb, batch.CodecNone, false, sampleRecords(), edit) }
	}
	raw := func(raw []byte, n int) func(testing.TB) []byte {
		return func(tb testing.TB) []byte { return buildRaw(tb, batch.CodecNone, false, raw, n, nil) }
	}
	// encoded record bodies, written by hand where kmsg cannot be made
	// to write them wrong.
	record := func(body ...byte) []byte {
		return append(binary.AppendVarint(nil, int64(len(body))), body...)
	}
	okRecord := record(0, 0, 0, 2, 'k', 2, 'v', 0) // attrs, ts, offset, key "k", value "v", 0 headers

	tests := []struct {
		name  string
		batch func(testing.TB) []byte
		edit  func([]byte) []byte
		opts  batch.ValidateOptions
		want  error
	}{
		{name: "magic 0", batch: plain(rec("k", "v")), edit: editBytes(false, func(b []byte) []byte { b[16] = 0; return b }), want: batch.ErrLegacyMagic},
		{name: "magic 1", batch: plain(rec("k", "v")), edit: editBytes(false, func(b []byte) []byte { b[16] = 1; return b }), want: batch.ErrLegacyMagic},
		{name: "magic 1 message set shorter than a header", batch: plain(rec("k", "v")), edit: func(b []byte) []byte { b[16] = 1; return b[:34] }, want: batch.ErrLegacyMagic},
		{name: "magic 3", batch: plain(rec("k", "v")), edit: func(b []byte) []byte { b[16] = 3; return b }, want: batch.ErrMagic},
		{name: "empty", batch: plain(rec("k", "v")), edit: func(b []byte) []byte { return nil }, want: batch.ErrShort},
		{name: "header cut", batch: plain(rec("k", "v")), edit: func(b []byte) []byte { return b[:40] }, want: batch.ErrShort},
		{name: "last byte missing", batch: plain(rec("k", "v")), edit: func(b []byte) []byte { return b[:len(b)-1] }, want: batch.ErrShort},
		{name: "trailing byte", batch: plain(rec("k", "v")), edit: func(b []byte) []byte { return append(b, 0) }, want: batch.ErrLength},
		{name: "two batches", batch: plain(rec("k", "v")), edit: func(b []byte) []byte { return append(b, b...) }, want: batch.ErrLength},
		{name: "length below header", batch: header(func(rb *kmsg.RecordBatch) { rb.Length = 48 }), want: batch.ErrLength},
		{name: "length negative", batch: header(func(rb *kmsg.RecordBatch) { rb.Length = -1 }), want: batch.ErrLength},
		{name: "length past the bytes", batch: header(func(rb *kmsg.RecordBatch) { rb.Length += 10 }), want: batch.ErrShort},
		{name: "crc", batch: plain(rec("k", "v")), edit: func(b []byte) []byte { b[len(b)-1] ^= 1; return b }, want: batch.ErrCRC},
		{name: "crc field", batch: plain(rec("k", "v")), edit: func(b []byte) []byte { b[17] ^= 0x80; return b }, want: batch.ErrCRC},
		{name: "codec 5", batch: header(func(rb *kmsg.RecordBatch) { rb.Attributes |= 5 }), want: batch.ErrCodec},
		{name: "codec 7", batch: header(func(rb *kmsg.RecordBatch) { rb.Attributes |= 7 }), want: batch.ErrCodec},
		{name: "codec bits damaged in transit", batch: plain(rec("k", "v")), edit: func(b []byte) []byte { b[22] |= 6; return b }, want: batch.ErrCRC},
		{name: "control", batch: header(func(rb *kmsg.RecordBatch) { rb.Attributes |= batch.AttrControl }), want: batch.ErrControl},
		{name: "no records", batch: header(func(rb *kmsg.RecordBatch) { rb.NumRecords, rb.LastOffsetDelta = 0, -1 }), want: batch.ErrRecordCount},
		{name: "negative count", batch: header(func(rb *kmsg.RecordBatch) { rb.NumRecords = -1 }), want: batch.ErrRecordCount},
		{name: "last offset delta too big", batch: header(func(rb *kmsg.RecordBatch) { rb.LastOffsetDelta++ }), want: batch.ErrRecordCount},
		{name: "count says more, delta agrees", batch: header(func(rb *kmsg.RecordBatch) { rb.NumRecords++; rb.LastOffsetDelta++ }), want: batch.ErrRecordCount},
		{name: "count says fewer, delta agrees", batch: header(func(rb *kmsg.RecordBatch) { rb.NumRecords--; rb.LastOffsetDelta-- }), want: batch.ErrRecordCount},
		{name: "count beyond bytes", batch: header(func(rb *kmsg.RecordBatch) { rb.NumRecords, rb.LastOffsetDelta = 1<<30, 1<<30-1 }), want: batch.ErrRecordCount},
		{name: "base offset not 0", batch: header(func(rb *kmsg.RecordBatch) { rb.FirstOffset = 5 }), want: batch.ErrBaseOffset},
		{name: "stored: base offset", batch: header(func(rb *kmsg.RecordBatch) { rb.FirstOffset = 5 }), opts: batch.ValidateOptions{Stored: true}},
		{name: "idempotent without sequence", batch: header(func(rb *kmsg.RecordBatch) { rb.ProducerID, rb.ProducerEpoch = 7, 0 }), want: batch.ErrSequence},
		{name: "offset delta skips", batch: func(tb testing.TB) []byte {
			recs := numbered(sampleRecords())
			recs[2].OffsetDelta = 3
			return buildRaw(tb, batch.CodecNone, false, appendRecords(nil, recs), len(recs), nil)
		}, want: batch.ErrOffsetDeltas},
		{name: "offset deltas all zero", batch: func(tb testing.TB) []byte {
			return buildRaw(tb, batch.CodecNone, false, appendRecords(nil, sampleRecords()), 6, nil)
		}, want: batch.ErrOffsetDeltas},
		{name: "record length past batch", batch: raw(append(binary.AppendVarint(nil, 100), okRecord[1:]...), 1), want: batch.ErrCorrupt},
		{name: "record length negative", batch: raw(append(binary.AppendVarint(nil, -2), okRecord[1:]...), 1), want: batch.ErrCorrupt},
		{name: "record length short of fields", batch: raw(record(0, 0, 0, 2, 'k', 2, 'v'), 1), want: batch.ErrCorrupt},
		{name: "record length past fields", batch: raw(record(0, 0, 0, 2, 'k', 2, 'v', 0, 0), 1), want: batch.ErrCorrupt},
		{name: "empty record", batch: raw(append(record(), 0, 0, 0, 0, 0, 0), 1), want: batch.ErrCorrupt},
		{name: "key past record", batch: raw(record(0, 0, 0, 20, 'k', 2, 'v', 0), 1), want: batch.ErrCorrupt},
		{name: "key length -2", batch: raw(record(0, 0, 0, 3, 2, 'v', 0), 1), want: batch.ErrCorrupt},
		{name: "value past record", batch: raw(record(0, 0, 0, 2, 'k', 4, 'v', 0), 1), want: batch.ErrCorrupt},
		{name: "varint too long", batch: raw(record(0, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x00, 0, 2, 'k', 2, 'v', 0), 1), want: batch.ErrCorrupt},
		{name: "offset varint overflows", batch: raw(record(0, 0, 0xff, 0xff, 0xff, 0xff, 0x7f, 2, 'k', 2, 'v', 0), 1), want: batch.ErrCorrupt},
		{name: "negative header count", batch: raw(record(0, 0, 0, 2, 'k', 2, 'v', 1), 1), want: batch.ErrCorrupt},
		{name: "header count past record", batch: raw(record(0, 0, 0, 2, 'k', 2, 'v', 0x7e), 1), want: batch.ErrCorrupt},
		{name: "null header key", batch: raw(record(0, 0, 0, 2, 'k', 2, 'v', 2, 1, 2, 'v'), 1), want: batch.ErrCorrupt},
		{name: "header value past record", batch: raw(record(0, 0, 0, 2, 'k', 2, 'v', 2, 2, 'h', 9), 1), want: batch.ErrCorrupt},
		{name: "null key, compacted", batch: plain(rec("k", "v"), rec(nullKey, "v")), opts: batch.ValidateOptions{RequireKeys: true}, want: batch.ErrNoKey},
		{name: "empty key is a key", batch: plain(rec("", "v")), opts: batch.ValidateOptions{RequireKeys: true}},
		{name: "control allowed", batch: header(func(rb *kmsg.RecordBatch) { rb.Attributes |= batch.AttrControl }), opts: batch.ValidateOptions{AllowControl: true}},
		{name: "stored: sequence not checked", batch: header(func(rb *kmsg.RecordBatch) { rb.ProducerID = 7 }), opts: batch.ValidateOptions{Stored: true}},
		{name: "stored: count over range", batch: header(func(rb *kmsg.RecordBatch) { rb.LastOffsetDelta-- }), opts: batch.ValidateOptions{Stored: true}, want: batch.ErrRecordCount},
		{name: "stored: decreasing deltas", batch: func(tb testing.TB) []byte {
			recs := numbered(sampleRecords())
			recs[3].OffsetDelta = 1
			return buildRaw(tb, batch.CodecNone, false, appendRecords(nil, recs), len(recs), nil)
		}, opts: batch.ValidateOptions{Stored: true}, want: batch.ErrOffsetDeltas},
		{name: "stored: delta past last", batch: func(tb testing.TB) []byte {
			recs := numbered(sampleRecords())
			recs[5].OffsetDelta = 9
			return buildRaw(tb, batch.CodecNone, false, appendRecords(nil, recs), len(recs), nil)
		}, opts: batch.ValidateOptions{Stored: true}, want: batch.ErrOffsetDeltas},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := tt.batch(t)
			if tt.edit != nil {
				b = tt.edit(b)
			}
			_, err := batch.Validate(b, tt.opts)
			if !errors.Is(err, tt.want) || (tt.want == nil) != (err == nil) {
				t.Fatalf("Validate: %v, want %v", err, tt.want)
			}
			if tt.want == batch.ErrMagic && errors.Is(err, batch.ErrLegacyMagic) {
				t.Fatalf("Validate: %v, want not ErrLegacyMagic", err)
			}
		})
	}
}

// Compressed batches are opened only for compacted topics, and then held to
// the same rules and the decompression limit.
func TestValidateCompressed(t *testing.T) {
	for _, c := range codecs[1:] {
		t.Run(c.name, func(t *testing.T) {
			nullKeyed := build(t, c.codec, c.xer, sampleRecords(), nil)
			if _, err := batch.Validate(nullKeyed, batch.ValidateOptions{}); err != nil {
				t.Fatalf("delete topic: %v", err)
			}
			if _, err := batch.Validate(nullKeyed, batch.ValidateOptions{RequireKeys: true}); !errors.Is(err, batch.ErrNoKey) {
				t.Fatalf("compacted topic: %v, want ErrNoKey", err)
			}

			// Count wrong inside the compressed records: only seen when opened.
			short := build(t, c.codec, c.xer, keyed(), func(rb *kmsg.RecordBatch) { rb.NumRecords++; rb.LastOffsetDelta++ })
			if _, err := batch.Validate(short, batch.ValidateOptions{}); err != nil {
				t.Fatalf("delete topic: %v", err)
			}
			if _, err := batch.Validate(short, batch.ValidateOptions{RequireKeys: true}); !errors.Is(err, batch.ErrRecordCount) {
				t.Fatalf("compacted topic: %v, want ErrRecordCount", err)
			}

			// Garbage where the compressed records should be.
			garbage := buildRaw(t, batch.CodecNone, false, []byte("this is not compressed at all, not by any codec"), 1,
				func(rb *kmsg.RecordBatch) { rb.Attributes = int16(c.codec) })
			if _, err := batch.Validate(garbage, batch.ValidateOptions{RequireKeys: true}); !errors.Is(err, batch.ErrDecompress) {
				t.Fatalf("garbage: %v, want ErrDecompress", err)
			}

			// Over the limit.
			big := build(t, c.codec, c.xer, many(64, 1024), nil)
			if _, err := batch.Validate(big, batch.ValidateOptions{RequireKeys: true, MaxDecompressed: 32 << 10}); !errors.Is(err, batch.ErrTooLarge) {
				t.Fatalf("over limit: %v, want ErrTooLarge", err)
			}
			if _, err := batch.Validate(big, batch.ValidateOptions{RequireKeys: true, MaxDecompressed: 128 << 10}); err != nil {
				t.Fatalf("under limit: %v", err)
			}
		})
	}
}

// A compacted batch keeps its offset range with gaps, or no records at all;
// logs and followers accept it with Stored.
func TestValidateStoredCompacted(t *testing.T) {
	recs := sampleRecords()[:3]
	recs[0].OffsetDelta, recs[1].OffsetDelta, recs[2].OffsetDelta = 1, 4, 9
	for _, c := range codecs {
		t.Run(c.name, func(t *testing.T) {
			b := buildRaw(t, c.codec, c.xer, appendRecords(nil, recs), 3, func(rb *kmsg.RecordBatch) { rb.LastOffsetDelta = 9 })
			if _, err := batch.Validate(b, batch.ValidateOptions{}); !errors.Is(err, batch.ErrRecordCount) {
				t.Fatalf("as produced: %v, want ErrRecordCount", err)
			}
			if _, err := batch.Validate(b, batch.ValidateOptions{Stored: true, RequireKeys: c.codec != batch.CodecNone, AllowControl: true}); !errors.Is(err, batch.ErrNoKey) && c.codec != batch.CodecNone {
				t.Fatalf("stored, keys: %v, want ErrNoKey", err)
			}
			if _, err := batch.Validate(b, batch.ValidateOptions{Stored: true}); err != nil {
				t.Fatalf("stored: %v", err)
			}
			var deltas []int32
			err := batch.ForEachRecord(b, 0, func(r *batch.Record) error {
				deltas = append(deltas, r.OffsetDelta)
				return nil
			})
			if err != nil || len(deltas) != 3 || deltas[0] != 1 || deltas[1] != 4 || deltas[2] != 9 {
				t.Fatalf("ForEachRecord: %v %v", deltas, err)
			}
		})
	}

	empty := buildRaw(t, batch.CodecNone, false, nil, 0, func(rb *kmsg.RecordBatch) {
		rb.LastOffsetDelta, rb.ProducerID, rb.ProducerEpoch, rb.FirstSequence = 4, 7, 0, 10
	})
	if _, err := batch.Validate(empty, batch.ValidateOptions{Stored: true, RequireKeys: true}); err != nil {
		t.Fatalf("empty stored batch: %v", err)
	}
	if _, err := batch.Validate(empty, batch.ValidateOptions{}); !errors.Is(err, batch.ErrRecordCount) {
		t.Fatalf("empty produced batch: %v, want ErrRecordCount", err)
	}
}

// The broker patches base offset and leader epoch outside the CRC, and
// LogAppendTime with a new CRC: the batch stays valid.
func TestPatchedBatchStaysValid(t *testing.T) {
	for _, c := range codecs {
		t.Run(c.name, func(t *testing.T) {
			b := build(t, c.codec, c.xer, keyed(), func(rb *kmsg.RecordBatch) {
				rb.ProducerID, rb.ProducerEpoch, rb.FirstSequence = 42, 3, 100
			})
			batch.SetBaseOffset(b, 1_000_000)
			batch.SetPartitionLeaderEpoch(b, 17)
			stored := batch.ValidateOptions{RequireKeys: true, Stored: true}
			h, err := batch.Validate(b, stored)
			if err != nil {
				t.Fatal(err)
			}
			if h.BaseOffset != 1_000_000 || h.PartitionLeaderEpoch != 17 || h.LastOffset() != 1_000_005 || h.IsLogAppendTime() {
				t.Fatalf("header %+v", h)
			}
			if h.LastSequence() != 105 {
				t.Fatalf("last sequence %d", h.LastSequence())
			}

			batch.SetLogAppendTime(b, 1_800_000_000_000)
			h, err = batch.Validate(b, stored)
			if err != nil {
				t.Fatalf("after SetLogAppendTime: %v", err)
			}
			if !h.IsLogAppendTime() || h.MaxTimestamp != 1_800_000_000_000 || h.Codec() != c.codec {
				t.Fatalf("header %+v", h)
			}
		})
	}
}

// A batch at the edge of every field still validates.
func TestValidateEdges(t *testing.T) {
	// A sequence that wraps: Kafka allows BaseSequence near MaxInt32.
	b := build(t, batch.CodecNone, false, keyed(), func(rb *kmsg.RecordBatch) {
		rb.ProducerID, rb.ProducerEpoch, rb.FirstSequence = 1, 0, 1<<31-2
	})
	h, err := batch.Validate(b, batch.ValidateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if h.LastSequence() != 3 {
		t.Fatalf("wrapped last sequence %d, want 3", h.LastSequence())
	}

	// Producer id below -1 means none, as in Kafka.
	b = build(t, batch.CodecNone, false, keyed(), func(rb *kmsg.RecordBatch) { rb.ProducerID = -5 })
	if _, err := batch.Validate(b, batch.ValidateOptions{}); err != nil {
		t.Fatal(err)
	}

	// Extreme timestamp deltas, 10-byte varints.
	b2 := buildRaw(t, batch.CodecNone, false, appendRecords(nil, []kmsg.Record{
		{Key: []byte("k"), TimestampDelta64: -1 << 63, OffsetDelta: 0},
		{Key: []byte("k"), TimestampDelta64: 1<<63 - 1, OffsetDelta: 1},
	}), 2, nil)
	if _, err := batch.Validate(b2, batch.ValidateOptions{RequireKeys: true}); err != nil {
		t.Fatal(err)
	}
	var ts []int64
	batch.ForEachRecord(b2, 0, func(r *batch.Record) error { ts = append(ts, r.TimestampDelta); return nil })
	if len(ts) != 2 || ts[0] != -1<<63 || ts[1] != 1<<63-1 {
		t.Fatalf("timestamp deltas %v", ts)
	}
}
