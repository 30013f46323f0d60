package batch_test

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/runnel-io/runnel/broker/internal/batch"
)

// Batches that kafka-python built (testdata/kafka-python/gen.py says how),
// among them snappy in the xerial framing of the Java client, validate and
// iterate to the records it was given.
func TestKafkaPythonBatches(t *testing.T) {
	files, err := filepath.Glob("testdata/kafka-python/*.bin")
	if err != nil || len(files) != 6 {
		t.Fatalf("testdata: %v %v", files, err)
	}
	for _, file := range files {
		name := strings.TrimSuffix(filepath.Base(file), ".bin")
		t.Run(name, func(t *testing.T) {
			b, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			n, size := 40, 200
			if name == "big-snappy" {
				n, size = 200, 1000
			}
			h, err := batch.Validate(b, batch.ValidateOptions{RequireKeys: true})
			if err != nil {
				t.Fatal(err)
			}
			if int(h.NumRecords) != n || h.ProducerID != 1000 || h.BaseSequence != 0 || h.FirstTimestamp != 1_700_000_000_000 {
				t.Fatalf("header %+v", h)
			}
			if h.Codec() == batch.CodecSnappy && !bytes.HasPrefix(b[batch.HeaderSize:], []byte("\x82SNAPPY\x00")) {
				t.Fatal("kafka-python's snappy is not xerial-framed")
			}
			i := 0
			err = batch.ForEachRecord(b, 0, func(r *batch.Record) error {
				want := bytes.Repeat([]byte("."), size)
				copy(want, fmt.Sprintf("value-%d", i))
				if string(r.Key) != fmt.Sprintf("key-%d", i) || !bytes.Equal(r.Value, want) ||
					r.OffsetDelta != int32(i) || r.TimestampDelta != int64(i) || (i == 7) != (len(r.Headers) == 1) {
					return fmt.Errorf("record %d: %+v", i, r)
				}
				i++
				return nil
			})
			if err != nil || i != n {
				t.Fatalf("%d records: %v", i, err)
			}
		})
	}
}
