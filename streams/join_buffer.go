package streams

import (
	"encoding/binary"
	"fmt"
	"math"
	"time"

	"github.com/runnel-io/runnel/streams/serde"
	"github.com/runnel-io/runnel/streams/state"
)

// joinBuffer is one side of a stream-stream join in one task: the side's
// records of the last retention, by key and timestamp, in a window store.
// The records of one key and timestamp are kept together as one list value
// (Kafka Streams keeps such duplicates apart with sequence numbers; here the
// changelog carries the list).
type joinBuffer[V any] struct {
	ws   *state.Window
	vs   serde.Serde[V]
	list []byte
}

// joinBufferDef defines the window store of one side of a stream-stream join.
func joinBufferDef[V any](name string, retention time.Duration, logged bool, vs serde.Serde[V]) *storeDef {
	return &storeDef{name: name, kind: windowStore, retention: retention, logged: logged, open: func(t *task) (any, error) {
		return &joinBuffer[V]{ws: t.env.db.Window(name, t.id.Partition, retention), vs: vs}, nil
	}}
}

// add appends the encoded value vb to the records of key kb at ts.
func (b *joinBuffer[V]) add(kb []byte, ts int64, vb []byte) error {
	cur, _, err := b.ws.Get(kb, ts)
	if err != nil {
		return err
	}
	b.list = appendListValue(append(b.list[:0], cur...), vb)
	return b.ws.Put(kb, ts, b.list)
}

// fetch calls fn with each record of key kb whose timestamp is in [from,
// to], in timestamp order.
func (b *joinBuffer[V]) fetch(kb []byte, from, to int64, fn func(ts int64, v V) error) error {
	it := b.ws.Fetch(kb, from, to)
	for it.Next() {
		ts := it.Start()
		err := eachListValue(it.Value(), func(vb []byte) error {
			v, err := b.vs.Decode(vb)
			if err != nil {
				return fmt.Errorf("streams: join store value: %w", err)
			}
			return fn(ts, v)
		})
		if err != nil {
			_ = it.Close()
			return err
		}
	}
	return it.Close()
}

// appendListValue appends one value to a list value: uvarint(len) bytes.
func appendListValue(list, v []byte) []byte {
	return append(binary.AppendUvarint(list, uint64(len(v))), v...)
}

// eachListValue calls fn with each value of a list value.
func eachListValue(list []byte, fn func(v []byte) error) error {
	for len(list) > 0 {
		n, w := binary.Uvarint(list)
		if w <= 0 || n > uint64(len(list)-w) {
			return fmt.Errorf("streams: join store: corrupt value list")
		}
		if err := fn(list[w : w+int(n)]); err != nil {
			return err
		}
		list = list[w+int(n):]
	}
	return nil
}

// Join sides, as stored in the pending store.
const (
	sideLeft  byte = 0
	sideRight byte = 1
)

// joinPending holds the records of a left or outer stream-stream join that
// have met nothing yet, until their window closes: Kafka Streams' shared
// outer join store. A key-value store keyed by timestamp (sign-flipped big
// endian, so byte order is time order), side and key; each value is the
// list of that key's values at that time.
type joinPending struct {
	kv        *state.KeyValue
	key, list []byte
}

func joinPendingDef(name string, logged bool) *storeDef {
	return &storeDef{name: name, kind: kvStore, logged: logged, open: func(t *task) (any, error) {
		return &joinPending{kv: t.env.db.KeyValue(name, t.id.Partition)}, nil
	}}
}

func (p *joinPending) keyOf(side byte, kb []byte, ts int64) []byte {
	p.key = binary.BigEndian.AppendUint64(p.key[:0], uint64(ts)^(1<<63))
	p.key = append(append(p.key, side), kb...)
	return p.key
}

// add appends the encoded value vb to the pending records of (side, key, ts).
func (p *joinPending) add(side byte, kb []byte, ts int64, vb []byte) error {
	k := p.keyOf(side, kb, ts)
	cur, _, err := p.kv.Get(k)
	if err != nil {
		return err
	}
	p.list = appendListValue(append(p.list[:0], cur...), vb)
	return p.kv.Put(k, p.list)
}

// remove forgets the pending records of (side, key, ts): they met a record.
// It writes nothing when there are none, so the changelog gets no
// tombstone for every inner match.
func (p *joinPending) remove(side byte, kb []byte, ts int64) error {
	k := p.keyOf(side, kb, ts)
	_, ok, err := p.kv.Get(k)
	if err != nil || !ok {
		return err
	}
	return p.kv.Delete(k)
}

// drain emits and deletes, in time order, the pending records whose window
// closed, and returns the earliest time still pending (math.MaxInt64: none).
func (p *joinPending) drain(closed func(ts int64) bool, emit func(side byte, key []byte, ts int64, list []byte) error) (int64, error) {
	it := p.kv.Range(nil, nil)
	for it.Next() {
		k := it.Key()
		if len(k) < 9 || k[8] > sideRight {
			_ = it.Close()
			return 0, fmt.Errorf("streams: join pending store: corrupt key %x", k)
		}
		ts := int64(binary.BigEndian.Uint64(k) ^ (1 << 63))
		if !closed(ts) {
			return ts, it.Close() // keys sort by time: the rest are open too
		}
		if err := emit(k[8], k[9:], ts, it.Value()); err != nil {
			_ = it.Close()
			return 0, err
		}
		if err := p.kv.Delete(k); err != nil {
			_ = it.Close()
			return 0, err
		}
	}
	return math.MaxInt64, it.Close()
}
