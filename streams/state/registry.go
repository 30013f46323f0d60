package state

import (
	"encoding/binary"
	"fmt"

	"github.com/cockroachdb/pebble/v2"
)

// Store kinds, persisted in the registry.
const (
	kindKeyValue byte = 1
	kindWindow   byte = 2
	kindSession  byte = 3
)

func kindName(k byte) string {
	switch k {
	case kindKeyValue:
		return "key-value"
	case kindWindow:
		return "window"
	case kindSession:
		return "session"
	}
	return fmt.Sprintf("kind(%d)", k)
}

// regEntry is a store's registry entry: its name maps to a small numeric id
// (used in every data key) and the layout parameters fixed at creation. The
// segment interval is persisted because the key layout depends on it: a
// store reopened with another retention keeps its segments.
type regEntry struct {
	name     string
	id       uint64
	kind     byte
	interval int64 // segment interval in ms; 0 for key-value stores
}

func registryKey(name string) []byte {
	return append([]byte{tagMeta, metaRegistry}, name...)
}

func (e regEntry) encode() []byte {
	b := []byte{e.kind}
	b = binary.AppendUvarint(b, e.id)
	return binary.AppendVarint(b, e.interval)
}

func decodeRegEntry(name string, v []byte) (regEntry, error) {
	e := regEntry{name: name}
	if len(v) < 1 {
		return e, fmt.Errorf("%w: registry entry %q", ErrCorruptDB, name)
	}
	e.kind = v[0]
	id, n := binary.Uvarint(v[1:])
	if n <= 0 {
		return e, fmt.Errorf("%w: registry entry %q", ErrCorruptDB, name)
	}
	e.id = id
	iv, m := binary.Varint(v[1+n:])
	if m <= 0 {
		return e, fmt.Errorf("%w: registry entry %q", ErrCorruptDB, name)
	}
	e.interval = iv
	return e, nil
}

// loadRegistry reads every registry entry of the DB.
func (db *DB) loadRegistry() error {
	lo := []byte{tagMeta, metaRegistry}
	it, err := db.pdb.NewIter(&pebble.IterOptions{LowerBound: lo, UpperBound: prefixEnd(lo)})
	if err != nil {
		return err
	}
	for it.First(); it.Valid(); it.Next() {
		name := string(it.Key()[2:])
		e, err := decodeRegEntry(name, it.Value())
		if err != nil {
			_ = it.Close()
			return err
		}
		db.byName[name] = e
		db.byID[e.id] = e
		db.nextID = max(db.nextID, e.id+1)
	}
	return it.Close()
}

// register returns the registry entry of name, creating it (committed and
// synced at once, outside the pending batch, so a Discard cannot orphan data
// written under the id) if the name is new.
func (db *DB) register(name string, kind byte, interval int64) (regEntry, error) {
	if e, ok := db.byName[name]; ok {
		if e.kind != kind {
			return e, fmt.Errorf("%w: %q is a %s store, opened as %s", ErrKindMismatch, name, kindName(e.kind), kindName(kind))
		}
		return e, nil
	}
	e := regEntry{name: name, id: db.nextID, kind: kind, interval: interval}
	if err := db.pdb.Set(registryKey(name), e.encode(), pebble.Sync); err != nil {
		return e, fmt.Errorf("state: register store %q: %w", name, err)
	}
	db.nextID++
	db.byName[name] = e
	db.byID[e.id] = e
	return e, nil
}
