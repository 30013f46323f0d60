package streams_test

import (
	"bytes"
	"errors"
	"math"
	"testing"
	"time"

	"github.com/runnel-io/runnel/streams"
	"github.com/runnel-io/runnel/streams/serde"
)

func TestWindowedSerdeWritesKafkasTimeWindowedFormat(t *testing.T) {
	w := streams.Windowed[string]{Key: "k1", Start: 0x0102030405060708, End: 0x0102030405060708 + 60_000}
	b, err := streams.WindowedSerde(serde.String).Encode(nil, w)
	if err != nil {
		t.Fatal(err)
	}
	want := []byte{'k', '1', 1, 2, 3, 4, 5, 6, 7, 8}
	if !bytes.Equal(b, want) {
		t.Fatalf("encoded %x, want %x", b, want)
	}
	got, err := streams.WindowedSerde(serde.String).Decode(b)
	if err != nil || got.Key != "k1" || got.Start != w.Start || got.End != math.MaxInt64 {
		t.Fatalf("decoded without a size: %v, %v; want end MaxInt64", got, err)
	}
	got, err = streams.WindowedSerdeOfSize(serde.String, time.Minute).Decode(b)
	if err != nil || got != w {
		t.Fatalf("decoded with the size: %v, %v; want %v", got, err, w)
	}
}

func TestSessionWindowedSerdeWritesKeyEndStart(t *testing.T) {
	w := streams.Windowed[int32]{Key: 7, Start: 1, End: 2}
	s := streams.SessionWindowedSerde(serde.Int32)
	b, err := s.Encode(nil, w)
	if err != nil {
		t.Fatal(err)
	}
	want := []byte{0, 0, 0, 7, 0, 0, 0, 0, 0, 0, 0, 2, 0, 0, 0, 0, 0, 0, 0, 1}
	if !bytes.Equal(b, want) {
		t.Fatalf("encoded %x, want %x", b, want)
	}
	if got, err := s.Decode(b); err != nil || got != w {
		t.Fatalf("decoded %v, %v; want %v", got, err, w)
	}
}

func TestWindowedSerdesRoundTripAndRejectShortInput(t *testing.T) {
	sizeSerde := streams.WindowedSerdeOfSize(serde.String, 5*time.Second)
	session := streams.SessionWindowedSerde(serde.String)
	for _, w := range []streams.Windowed[string]{
		{Key: "", Start: 0, End: 5000},
		{Key: "a key", Start: 1_700_000_000_000, End: 1_700_000_005_000},
	} {
		b, err := sizeSerde.Encode([]byte("prefix"), w)
		if err != nil {
			t.Fatal(err)
		}
		if got, err := sizeSerde.Decode(b[len("prefix"):]); err != nil || got != w {
			t.Errorf("time windowed round trip of %v: %v, %v", w, got, err)
		}
		b, err = session.Encode(nil, w)
		if err != nil {
			t.Fatal(err)
		}
		if got, err := session.Decode(b); err != nil || got != w {
			t.Errorf("session round trip of %v: %v, %v", w, got, err)
		}
	}
	if _, err := sizeSerde.Decode([]byte{1, 2, 3}); !errors.Is(err, serde.ErrDecode) {
		t.Errorf("3 bytes as a time windowed key: %v, want ErrDecode", err)
	}
	if _, err := session.Decode(make([]byte, 15)); !errors.Is(err, serde.ErrDecode) {
		t.Errorf("15 bytes as a session key: %v, want ErrDecode", err)
	}
	if _, err := streams.WindowedSerde(serde.Int64).Decode(make([]byte, 9)); !errors.Is(err, serde.ErrDecode) {
		t.Errorf("an inner key of 1 byte for Int64: %v, want ErrDecode", err)
	}
	if got, err := session.Decode(nil); err != nil || got != (streams.Windowed[string]{}) {
		t.Errorf("nil: %v, %v; want the zero value", got, err)
	}
}

func FuzzWindowedSerdeDecode(f *testing.F) {
	f.Add([]byte("k\x00\x00\x00\x00\x00\x00\x00\x01"))
	f.Add([]byte("k\x00\x00\x00\x00\x00\x00\x00\x02\x00\x00\x00\x00\x00\x00\x00\x01"))
	f.Add([]byte{})
	timed := streams.WindowedSerdeOfSize(serde.String, time.Hour)
	session := streams.SessionWindowedSerde(serde.String)
	f.Fuzz(func(t *testing.T, b []byte) {
		for _, s := range []serde.Serde[streams.Windowed[string]]{timed, session} {
			w, err := s.Decode(b)
			if err != nil {
				if !errors.Is(err, serde.ErrDecode) {
					t.Fatalf("error %v does not wrap ErrDecode", err)
				}
				continue
			}
			again, err := s.Encode(nil, w)
			if err != nil || !bytes.Equal(again, b) {
				t.Fatalf("re-encoding %v gave %x, %v; want %x", w, again, err, b)
			}
		}
	})
}
