package streams

import (
	"encoding/binary"
	"fmt"
	"math"
	"time"

	"github.com/runnel-io/runnel/streams/serde"
)

// WindowedSerde is Kafka's TimeWindowedSerde for keys of time windows: the
// inner key's bytes followed by the window start, 8 bytes big-endian. The
// end is not written, so Decode cannot know it and sets End to
// math.MaxInt64, as Kafka's TimeWindowedDeserializer does without a window
// size; use WindowedSerdeOfSize to get it back.
func WindowedSerde[K any](inner serde.Serde[K]) serde.Serde[Windowed[K]] {
	return timeWindowedSerde[K]{inner: inner, size: -1}
}

// WindowedSerdeOfSize is WindowedSerde for windows of a known size: Decode
// sets End to Start + size. Windowed tables of time windows use it as
// their key serde, so that ToStream().To(topic) writes Kafka's format.
func WindowedSerdeOfSize[K any](inner serde.Serde[K], size time.Duration) serde.Serde[Windowed[K]] {
	return timeWindowedSerde[K]{inner: inner, size: size.Milliseconds()}
}

type timeWindowedSerde[K any] struct {
	inner serde.Serde[K]
	size  int64 // ms; negative: unknown
}

func (s timeWindowedSerde[K]) Encode(dst []byte, w Windowed[K]) ([]byte, error) {
	out, err := s.inner.Encode(dst, w.Key)
	if err != nil {
		return dst, err
	}
	return binary.BigEndian.AppendUint64(out, uint64(w.Start)), nil
}

func (s timeWindowedSerde[K]) Decode(b []byte) (Windowed[K], error) {
	var w Windowed[K]
	if b == nil {
		return w, nil
	}
	n := len(b)
	if n < 8 {
		return w, fmt.Errorf("%w windowed key: %d bytes, want at least 8", serde.ErrDecode, n)
	}
	k, err := s.inner.Decode(b[: n-8 : n-8])
	if err != nil {
		return w, err
	}
	w.Key = k
	w.Start = int64(binary.BigEndian.Uint64(b[n-8:]))
	w.End = math.MaxInt64
	if s.size >= 0 && w.Start <= math.MaxInt64-s.size {
		w.End = w.Start + s.size
	}
	return w, nil
}

// SessionWindowedSerde is Kafka's SessionWindowedSerde: the inner key's
// bytes, then the session end and start, 8 bytes big-endian each.
func SessionWindowedSerde[K any](inner serde.Serde[K]) serde.Serde[Windowed[K]] {
	return sessionWindowedSerde[K]{inner}
}

type sessionWindowedSerde[K any] struct{ inner serde.Serde[K] }

func (s sessionWindowedSerde[K]) Encode(dst []byte, w Windowed[K]) ([]byte, error) {
	out, err := s.inner.Encode(dst, w.Key)
	if err != nil {
		return dst, err
	}
	out = binary.BigEndian.AppendUint64(out, uint64(w.End))
	return binary.BigEndian.AppendUint64(out, uint64(w.Start)), nil
}

func (s sessionWindowedSerde[K]) Decode(b []byte) (Windowed[K], error) {
	var w Windowed[K]
	if b == nil {
		return w, nil
	}
	n := len(b)
	if n < 16 {
		return w, fmt.Errorf("%w session key: %d bytes, want at least 16", serde.ErrDecode, n)
	}
	k, err := s.inner.Decode(b[: n-16 : n-16])
	if err != nil {
		return w, err
	}
	w.Key = k
	w.End = int64(binary.BigEndian.Uint64(b[n-16:]))
	w.Start = int64(binary.BigEndian.Uint64(b[n-8:]))
	return w, nil
}
