package batch_test

import (
	"errors"
	"os"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/runnel-io/runnel/broker/internal/batch"
)

// FuzzValidate feeds arbitrary bytes to Validate and ForEachRecord. Neither
// may panic, and when Validate accepts a batch whose records it walked
// (uncompressed, or RequireKeys), ForEachRecord yields exactly NumRecords
// records (with keys, when they were required).
//
// The CRC makes random mutations fail early; flags bit 3 reseals the CRC
// after mutation so the fuzzer reaches the record walk and the codecs.
func FuzzValidate(f *testing.F) {
	// Small seeds: the fuzzer minimizes every new input it keeps, and
	// minimizing kilobytes stalls fuzzing for many seconds.
	small, smallKeyed := sampleRecords()[:5], keyed()[:5]
	for _, c := range codecs {
		f.Add(build(f, c.codec, c.xer, smallKeyed, nil), uint8(0))
		f.Add(build(f, c.codec, c.xer, smallKeyed, nil), uint8(1|8))
		f.Add(build(f, c.codec, c.xer, small, nil), uint8(8))
		f.Add(build(f, c.codec, c.xer, many(3, 40), func(rb *kmsg.RecordBatch) {
			rb.ProducerID, rb.ProducerEpoch, rb.FirstSequence = 9, 1, 0
		}), uint8(1|2|8))
	}
	for _, name := range []string{"gzip", "snappy", "lz4", "zstd"} {
		b, err := os.ReadFile("testdata/kafka-python/" + name + ".bin")
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b, uint8(1))
	}
	f.Fuzz(func(t *testing.T, b []byte, flags uint8) {
		opts := batch.ValidateOptions{
			RequireKeys:     flags&1 != 0,
			AllowControl:    flags&2 != 0,
			Stored:          flags&4 != 0,
			MaxDecompressed: 1 << 20,
		}
		if flags&8 != 0 {
			b = append([]byte(nil), b...) // the fuzzer's input is not ours to change
			seal(b)
		}
		h, err := batch.Validate(b, opts)
		n := 0
		var nullKeys int
		ferr := batch.ForEachRecord(b, opts.MaxDecompressed, func(r *batch.Record) error {
			n++
			if r.Key == nil {
				nullKeys++
			}
			for _, h := range r.Headers {
				if h.Key == nil {
					t.Fatal("null header key yielded")
				}
			}
			return nil
		})
		if err != nil {
			if !isSentinel(err) {
				t.Fatalf("Validate error wraps no sentinel: %v", err)
			}
			return
		}
		if h.Size() != len(b) {
			t.Fatalf("accepted %d bytes as a batch of %d", len(b), h.Size())
		}
		if h.Codec() != batch.CodecNone && !opts.RequireKeys {
			return // records not looked at
		}
		if ferr != nil {
			t.Fatalf("Validate accepted, ForEachRecord: %v", ferr)
		}
		if n != int(h.NumRecords) {
			t.Fatalf("Validate accepted %d records, ForEachRecord yielded %d", h.NumRecords, n)
		}
		if opts.RequireKeys && nullKeys > 0 {
			t.Fatalf("RequireKeys accepted %d null keys", nullKeys)
		}
	})
}

func isSentinel(err error) bool {
	for _, s := range []error{
		batch.ErrShort, batch.ErrMagic, batch.ErrCRC, batch.ErrLength, batch.ErrRecordCount,
		batch.ErrCorrupt, batch.ErrControl, batch.ErrCodec, batch.ErrTooLarge, batch.ErrOffsetDeltas,
		batch.ErrSequence, batch.ErrNoKey, batch.ErrBaseOffset, batch.ErrDecompress, batch.ErrNoProducerID,
	} {
		if errors.Is(err, s) {
			return true
		}
	}
	return false
}
