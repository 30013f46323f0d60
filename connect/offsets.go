package connect

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"sync"
)

// SourceOffset is the stored offset of one source partition of a
// connector, as GET /connectors/{name}/offsets shows it.
type SourceOffset struct {
	Partition map[string]any `json:"partition"`
	Offset    map[string]any `json:"offset"`
}

// offsetStore keeps the offsets of source connectors. Keys and values are
// encoded as Kafka Connect encodes them in its offsets topic: the key is
// the JSON array [connector, partition], the value the JSON offset (null
// deletes), so a topic written by either can be read by the other.
type offsetStore interface {
	// Refresh catches up with writes made elsewhere (other workers).
	Refresh(ctx context.Context) error
	// Get returns the offset of one partition of a connector, or nil.
	Get(connector string, partition map[string]any) (map[string]any, error)
	// Put stores offsets durably before it returns; a nil Offset deletes.
	Put(ctx context.Context, connector string, offsets []SourceOffset) error
	// List returns every stored offset of a connector.
	List(connector string) ([]SourceOffset, error)
	Close() error
}

// offsetKey encodes the store key of a connector's partition.
func offsetKey(connector string, partition map[string]any) ([]byte, error) {
	k, err := json.Marshal([]any{connector, partition})
	if err != nil {
		return nil, fmt.Errorf("connect: encoding source partition %v: %w", partition, err)
	}
	return k, nil
}

// decodeOffsetKey reverses offsetKey.
func decodeOffsetKey(k []byte) (string, map[string]any, error) {
	var parts []json.RawMessage
	if err := json.Unmarshal(k, &parts); err != nil || len(parts) != 2 {
		return "", nil, fmt.Errorf("connect: offset key %q is not [connector, partition]", k)
	}
	var name string
	if err := json.Unmarshal(parts[0], &name); err != nil {
		return "", nil, fmt.Errorf("connect: offset key %q: the connector is not a string", k)
	}
	p, err := decodeJSONMap(parts[1])
	if err != nil {
		return "", nil, fmt.Errorf("connect: offset key %q: %v", k, err)
	}
	return name, p, nil
}

// decodeJSONMap decodes a JSON object with integers as int64, as the
// json converter does; null decodes to nil.
func decodeJSONMap(b []byte) (map[string]any, error) {
	v, err := ParseJSON(b)
	if err != nil || v == nil {
		return nil, err
	}
	m, ok := v.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("%s is not a JSON object", b)
	}
	return m, nil
}

// offsetMap is the in-memory image of stored offsets, shared by the file
// and topic stores.
type offsetMap struct {
	mu sync.Mutex
	m  map[string]storedOffset // by encoded key
}

type storedOffset struct {
	connector string
	partition map[string]any
	offset    map[string]any
	value     []byte // the encoded offset
}

func (o *offsetMap) apply(key, value []byte) error {
	name, p, err := decodeOffsetKey(key)
	if err != nil {
		return err
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.m == nil {
		o.m = map[string]storedOffset{}
	}
	if value == nil {
		delete(o.m, string(key))
		return nil
	}
	off, err := decodeJSONMap(value)
	if err != nil {
		return fmt.Errorf("connect: offset of %s: %v", key, err)
	}
	if off == nil {
		delete(o.m, string(key))
		return nil
	}
	o.m[string(key)] = storedOffset{connector: name, partition: p, offset: off, value: append([]byte(nil), value...)}
	return nil
}

func (o *offsetMap) get(connector string, partition map[string]any) (map[string]any, error) {
	k, err := offsetKey(connector, partition)
	if err != nil {
		return nil, err
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	s, ok := o.m[string(k)]
	if !ok {
		return nil, nil
	}
	// A copy: the task may change what it gets.
	return decodeJSONMap(s.value)
}

func (o *offsetMap) list(connector string) []SourceOffset {
	o.mu.Lock()
	defer o.mu.Unlock()
	var out []SourceOffset
	for _, s := range o.m {
		if s.connector == connector {
			off, _ := decodeJSONMap(s.value)
			out = append(out, SourceOffset{Partition: s.partition, Offset: off})
		}
	}
	sortOffsets(out)
	return out
}

// encodeOffsets encodes the key and value of each offset.
func encodeOffsets(connector string, offsets []SourceOffset) (keys, values [][]byte, err error) {
	for _, so := range offsets {
		k, err := offsetKey(connector, so.Partition)
		if err != nil {
			return nil, nil, err
		}
		var v []byte
		if so.Offset != nil {
			if v, err = json.Marshal(so.Offset); err != nil {
				return nil, nil, fmt.Errorf("connect: encoding source offset %v: %w", so.Offset, err)
			}
		}
		keys, values = append(keys, k), append(values, v)
	}
	return keys, values, nil
}

// fileOffsetStore keeps offsets in a local JSON file (standalone mode),
// rewritten whole and fsynced on every Put: a list of [key, value] pairs.
type fileOffsetStore struct {
	path string
	offsetMap
	writeMu sync.Mutex
}

func openFileOffsetStore(path string) (*fileOffsetStore, error) {
	s := &fileOffsetStore{path: path}
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return s, nil
	}
	if err != nil {
		return nil, fmt.Errorf("connect: reading offsets: %w", err)
	}
	var pairs [][2]json.RawMessage
	if err := json.Unmarshal(data, &pairs); err != nil {
		return nil, fmt.Errorf("connect: offsets file %s is damaged (%v); move it away to start from no offsets", path, err)
	}
	for _, p := range pairs {
		var v []byte
		if !bytes.Equal(p[1], []byte("null")) {
			v = p[1]
		}
		if err := s.apply(p[0], v); err != nil {
			return nil, fmt.Errorf("connect: offsets file %s: %v", path, err)
		}
	}
	return s, nil
}

func (s *fileOffsetStore) Refresh(context.Context) error { return nil }

func (s *fileOffsetStore) Get(connector string, partition map[string]any) (map[string]any, error) {
	return s.get(connector, partition)
}

func (s *fileOffsetStore) List(connector string) ([]SourceOffset, error) {
	return s.list(connector), nil
}

func (s *fileOffsetStore) Put(_ context.Context, connector string, offsets []SourceOffset) error {
	keys, values, err := encodeOffsets(connector, offsets)
	if err != nil {
		return err
	}
	s.writeMu.Lock()
	defer s.writeMu.Unlock()
	for i := range keys {
		if err := s.apply(keys[i], values[i]); err != nil {
			return err
		}
	}
	s.mu.Lock()
	pairs := make([][2]json.RawMessage, 0, len(s.m))
	for k, v := range s.m {
		pairs = append(pairs, [2]json.RawMessage{json.RawMessage(k), v.value})
	}
	s.mu.Unlock()
	data, err := json.Marshal(pairs)
	if err != nil {
		return err
	}
	return writeFileAtomic(s.path, data)
}

func (s *fileOffsetStore) Close() error { return nil }

// writeFileAtomic replaces path with data: a temp file, fsynced, renamed
// over it, and the directory fsynced, so a crash leaves the old file or
// the new one.
func writeFileAtomic(path string, data []byte) error {
	dir := filepath.Dir(path)
	f, err := os.CreateTemp(dir, filepath.Base(path)+".tmp*")
	if err != nil {
		return fmt.Errorf("connect: writing %s: %w", path, err)
	}
	tmp := f.Name()
	_, err = f.Write(data)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		_ = os.Remove(tmp)
		return fmt.Errorf("connect: writing %s: %w", path, err)
	}
	if d, err := os.Open(dir); err == nil {
		_ = d.Sync()
		_ = d.Close()
	}
	return nil
}

// sortOffsets orders offsets by their partition's JSON, so listings are
// stable.
func sortOffsets(offs []SourceOffset) {
	key := func(o SourceOffset) string {
		b, _ := json.Marshal(o.Partition)
		return string(b)
	}
	sort.Slice(offs, func(i, j int) bool { return key(offs[i]) < key(offs[j]) })
}
