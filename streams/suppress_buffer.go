package streams

import (
	"encoding/binary"
	"fmt"
	"math"

	"github.com/runnel-io/runnel/streams/serde"
	"github.com/runnel-io/runnel/streams/state"
)

// suppressBuffer is Suppress's durable buffer, a logged key-value store:
//
//	0x00 's'                        -> the suppression's stream time, 8 bytes
//	0x01 ts(window end) key bytes   -> record timestamp (8 bytes) + value bytes
//
// ts() flips the sign bit of a big-endian int64, so entries sort by window
// end and eviction reads only the closed windows. The key bytes are the
// windowed key's serde encoding (key and start, for sessions end too), so
// one entry per window.
type suppressBuffer[K, V any] struct {
	s    *state.KeyValue
	ks   serde.Serde[K]
	vs   serde.Serde[V]
	kbuf []byte
	vbuf []byte
	del  []byte // evict's copy of the key it deletes
}

const (
	suppressMeta  byte = 0x00
	suppressEntry byte = 0x01
)

var suppressStreamTimeKey = []byte{suppressMeta, 's'}

func (b *suppressBuffer[K, V]) streamTime() (int64, bool, error) {
	v, ok, err := b.s.Get(suppressStreamTimeKey)
	if err != nil || !ok {
		return 0, false, err
	}
	if len(v) != 8 {
		return 0, false, fmt.Errorf("streams: suppress buffer: stream time of %d bytes", len(v))
	}
	return int64(binary.BigEndian.Uint64(v)), true, nil
}

func (b *suppressBuffer[K, V]) setStreamTime(ts int64) error {
	b.vbuf = binary.BigEndian.AppendUint64(b.vbuf[:0], uint64(ts))
	return b.s.Put(suppressStreamTimeKey, b.vbuf)
}

func appendEnd(b []byte, end int64) []byte {
	return binary.BigEndian.AppendUint64(append(b, suppressEntry), uint64(end)^(1<<63))
}

func (b *suppressBuffer[K, V]) key(k K, end int64) ([]byte, error) {
	kb, err := b.ks.Encode(appendEnd(b.kbuf[:0], end), k)
	if err != nil {
		return nil, fmt.Errorf("streams: suppress buffer key: %w", err)
	}
	b.kbuf = kb
	return kb, nil
}

func (b *suppressBuffer[K, V]) put(k K, end, ts int64, v V) error {
	kb, err := b.key(k, end)
	if err != nil {
		return err
	}
	vb, err := b.vs.Encode(binary.BigEndian.AppendUint64(b.vbuf[:0], uint64(ts)), v)
	if err != nil {
		return fmt.Errorf("streams: suppress buffer value: %w", err)
	}
	b.vbuf = vb
	return b.s.Put(kb, vb)
}

func (b *suppressBuffer[K, V]) remove(k K, end int64) error {
	kb, err := b.key(k, end)
	if err != nil {
		return err
	}
	if _, ok, err := b.s.Get(kb); err != nil || !ok {
		return err // not buffered: no tombstone for the changelog
	}
	return b.s.Delete(kb)
}

// evict calls emit for every entry whose window ended at or before upTo,
// in window end order, and deletes it.
func (b *suppressBuffer[K, V]) evict(upTo int64, emit func(k K, ts int64, v V) error) error {
	hi := []byte{suppressEntry + 1}
	if upTo < math.MaxInt64 {
		hi = appendEnd(nil, upTo+1)
	}
	it := b.s.Range([]byte{suppressEntry}, hi)
	defer it.Close()
	for it.Next() {
		key, val := it.Key(), it.Value()
		if len(key) < 9 || len(val) < 8 {
			return fmt.Errorf("streams: suppress buffer: corrupt entry %x", key)
		}
		k, err := b.ks.Decode(key[9:])
		if err != nil {
			return fmt.Errorf("streams: suppress buffer key: %w", err)
		}
		v, err := b.vs.Decode(val[8:])
		if err != nil {
			return fmt.Errorf("streams: suppress buffer value: %w", err)
		}
		ts := int64(binary.BigEndian.Uint64(val))
		b.del = append(b.del[:0], key...)
		if err := b.s.Delete(b.del); err != nil {
			return err
		}
		if err := emit(k, ts, v); err != nil {
			return err
		}
	}
	return it.Err()
}
