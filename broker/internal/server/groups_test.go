package server

import (
	"bytes"
	"errors"
	"testing"

	"github.com/runnel-io/runnel/broker/internal/batch"
	"github.com/runnel-io/runnel/broker/internal/group"
)

func TestGroupPartitionMatchesKafka(t *testing.T) {
	for _, tc := range []struct {
		id   string
		hash int32
		part int
	}{
		{"", 0, 0},
		{"a", 97, 97 % 50},
		{"group", 98629247, 98629247 % 50},
		// Java's String.hashCode of this is Integer.MIN_VALUE, which
		// Kafka's Utils.abs maps to 0.
		{"polygenelubricants", -1 << 31, 0},
		// Negative hashes are made positive first.
		{"runnel-demo", -447010138, 38},
		{"inventory-service", -1479039164, 14},
	} {
		if h := javaStringHash(tc.id); h != tc.hash {
			t.Errorf("hash(%q) = %d, want %d", tc.id, h, tc.hash)
		}
		if p := groupPartition(tc.id, 50); p != tc.part {
			t.Errorf("partition(%q) = %d, want %d", tc.id, p, tc.part)
		}
	}
	// Non-ASCII ids hash over UTF-16 code units, as Java strings do: a
	// character outside the BMP is two units.
	if got, want := javaStringHash("😀"), int32(0xD83D)*31+int32(0xDE00); got != want {
		t.Errorf("hash of a surrogate pair = %d, want %d", got, want)
	}
}

func TestEncodeBatchValidates(t *testing.T) {
	recs := []group.Record{
		{Key: []byte("k1"), Value: []byte("v1")},
		{Key: []byte("k2")}, // tombstone
		{Key: []byte("k3"), Value: []byte{}},
	}
	b := encodeBatch(recs, nil, 1234)
	if _, err := batch.Validate(b, batch.ValidateOptions{RequireKeys: true}); err != nil {
		t.Fatalf("Validate: %v", err)
	}
	var got []group.Record
	err := batch.ForEachRecord(b, 1<<20, func(r *batch.Record) error {
		rec := group.Record{Key: bytes.Clone(r.Key)}
		if r.Value != nil {
			rec.Value = bytes.Clone(r.Value)
		}
		got = append(got, rec)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 3 || string(got[0].Value) != "v1" || got[1].Value != nil || got[2].Value == nil || len(got[2].Value) != 0 {
		t.Fatalf("records: %+v", got)
	}
}

func TestParseMarker(t *testing.T) {
	for _, tc := range []struct {
		key        []byte
		commit, ok bool
		err        bool
	}{
		{key: []byte{0, 0, 0, 1}, commit: true, ok: true},
		{key: []byte{0, 0, 0, 0}, ok: true},
		{key: []byte{0, 1, 0, 1, 9, 9}, commit: true, ok: true}, // a later version's extra fields
		{key: []byte{0, 0, 0, 2}},                               // another control type
		{key: []byte{0, 0, 0}, err: true},
		{key: nil, err: true},
		{key: []byte{0xff, 0xff, 0, 1}, err: true}, // negative version
	} {
		commit, ok, err := parseMarker(tc.key)
		if commit != tc.commit || ok != tc.ok || (err != nil) != tc.err {
			t.Errorf("parseMarker(%x) = %v, %v, %v", tc.key, commit, ok, err)
		}
		if err != nil && !errors.Is(err, errBadMarker) {
			t.Errorf("parseMarker(%x): %v is not errBadMarker", tc.key, err)
		}
	}
}

// FuzzParseMarker: any key gives a marker, no marker, or errBadMarker.
func FuzzParseMarker(f *testing.F) {
	f.Add([]byte{0, 0, 0, 1})
	f.Add([]byte{0xff})
	f.Fuzz(func(t *testing.T, key []byte) {
		if _, _, err := parseMarker(key); err != nil && !errors.Is(err, errBadMarker) {
			t.Fatal(err)
		}
	})
}

func TestEncodeTransactionalBatch(t *testing.T) {
	b := encodeBatch([]group.Record{{Key: []byte("k"), Value: []byte("v")}}, &group.Producer{ID: 7, Epoch: 3}, 1234)
	h, err := batch.Validate(b, batch.ValidateOptions{RequireKeys: true, Coordinator: true})
	if err != nil {
		t.Fatalf("Validate: %v", err)
	}
	if !h.IsTransactional() || h.IsControl() || h.ProducerID != 7 || h.ProducerEpoch != 3 || h.BaseSequence != -1 {
		t.Fatalf("header %+v", h)
	}
}
