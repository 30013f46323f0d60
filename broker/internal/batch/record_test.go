package batch_test

import (
	"bytes"
	"errors"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/runnel-io/runnel/broker/internal/batch"
)

// records collects copies of a batch's records as kmsg.Records, so they
// can be compared with what was written.
func records(tb testing.TB, b []byte) []kmsg.Record {
	tb.Helper()
	var out []kmsg.Record
	err := batch.ForEachRecord(b, 0, func(r *batch.Record) error {
		k := kmsg.Record{
			Attributes:       r.Attributes,
			TimestampDelta64: r.TimestampDelta,
			OffsetDelta:      r.OffsetDelta,
			Key:              clone(r.Key),
			Value:            clone(r.Value),
		}
		for _, h := range r.Headers {
			k.Headers = append(k.Headers, kmsg.Header{Key: string(h.Key), Value: clone(h.Value)})
		}
		out = append(out, k)
		return nil
	})
	if err != nil {
		tb.Fatal(err)
	}
	return out
}

// clone copies b keeping nil and empty apart.
func clone(b []byte) []byte {
	if b == nil {
		return nil
	}
	return append([]byte{}, b...)
}

func equalRecords(a, b []kmsg.Record) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		x, y := a[i], b[i]
		if x.Attributes != y.Attributes || x.TimestampDelta64 != y.TimestampDelta64 || x.OffsetDelta != y.OffsetDelta ||
			!sameBytes(x.Key, y.Key) || !sameBytes(x.Value, y.Value) || len(x.Headers) != len(y.Headers) {
			return false
		}
		for j := range x.Headers {
			if x.Headers[j].Key != y.Headers[j].Key || !sameBytes(x.Headers[j].Value, y.Headers[j].Value) {
				return false
			}
		}
	}
	return true
}

// sameBytes is bytes.Equal that tells null from empty.
func sameBytes(a, b []byte) bool { return (a == nil) == (b == nil) && bytes.Equal(a, b) }

func TestForEachRecordRoundTrip(t *testing.T) {
	want := numbered(sampleRecords())
	for _, c := range codecs {
		t.Run(c.name, func(t *testing.T) {
			b := build(t, c.codec, c.xer, sampleRecords(), nil)
			got := records(t, b)
			if !equalRecords(got, want) {
				t.Fatalf("records differ:\n got %+v\nwant %+v", got, want)
			}
		})
	}
}

// Records alias the batch (uncompressed) and the Record is reused.
func TestForEachRecordAliasesAndReuses(t *testing.T) {
	b := build(t, batch.CodecNone, false, sampleRecords(), nil)
	var first *batch.Record
	err := batch.ForEachRecord(b, 0, func(r *batch.Record) error {
		if first == nil {
			first = r
		} else if r != first {
			t.Fatal("Record not reused")
		}
		if len(r.Value) > 0 && (&r.Value[0] == nil || !within(b, r.Value)) {
			t.Fatal("value does not alias the batch")
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func within(outer, inner []byte) bool {
	if len(inner) == 0 {
		return true
	}
	for i := range outer {
		if &outer[i] == &inner[0] {
			return i+len(inner) <= len(outer)
		}
	}
	return false
}

func TestForEachRecordStopsOnCallbackError(t *testing.T) {
	stop := errors.New("stop")
	for _, c := range codecs {
		b := build(t, c.codec, c.xer, sampleRecords(), nil)
		n := 0
		err := batch.ForEachRecord(b, 0, func(r *batch.Record) error {
			if n++; n == 2 {
				return stop
			}
			return nil
		})
		if err != stop || n != 2 {
			t.Fatalf("%s: err %v after %d records, want stop after 2", c.name, err, n)
		}
	}
}

func TestForEachRecordErrors(t *testing.T) {
	good := build(t, batch.CodecNone, false, sampleRecords(), nil)
	tests := []struct {
		name string
		b    []byte
		want error
	}{
		{"short", good[:len(good)-1], batch.ErrShort},
		{"trailing", append(append([]byte{}, good...), 0), batch.ErrLength},
		{"magic 1", func() []byte { b := append([]byte{}, good...); b[16] = 1; return b }(), batch.ErrLegacyMagic},
		{"codec 6", build(t, batch.CodecNone, false, sampleRecords(), func(rb *kmsg.RecordBatch) { rb.Attributes = 6 }), batch.ErrCodec},
		{"count", build(t, batch.CodecNone, false, sampleRecords(), func(rb *kmsg.RecordBatch) { rb.NumRecords = 7 }), batch.ErrRecordCount},
		{"negative count", build(t, batch.CodecNone, false, sampleRecords(), func(rb *kmsg.RecordBatch) { rb.NumRecords = -1 }), batch.ErrRecordCount},
		{"fewer", build(t, batch.CodecNone, false, sampleRecords(), func(rb *kmsg.RecordBatch) { rb.NumRecords = 5 }), batch.ErrRecordCount},
		{"deltas", build(t, batch.CodecNone, false, sampleRecords(), func(rb *kmsg.RecordBatch) { rb.LastOffsetDelta = 3 }), batch.ErrOffsetDeltas},
		{"zstd over limit", build(t, batch.CodecZstd, false, many(100, 1000), nil), batch.ErrTooLarge},
		{"lz4 over limit", build(t, batch.CodecLZ4, false, many(100, 1000), nil), batch.ErrTooLarge},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := batch.ForEachRecord(tt.b, 50_000, func(*batch.Record) error { return nil })
			if !errors.Is(err, tt.want) {
				t.Fatalf("got %v, want %v", err, tt.want)
			}
		})
	}
}
