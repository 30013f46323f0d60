package state

import (
	"errors"
	"testing"
	"time"
)

// FuzzRestore feeds arbitrary changelog records to every kind of store: a
// key too short for its kind must fail with ErrCorruptChangelog, anything
// else must be stored and read back, and nothing may panic.
func FuzzRestore(f *testing.F) {
	f.Add([]byte{}, []byte("v"), false)
	f.Add([]byte("k"), []byte("v"), false)
	f.Add([]byte("k\x00\x00\x00\x00\x00\x00\x03\xe8\x00\x00\x00\x00"), []byte("v"), false)
	f.Add([]byte("\x00\x00\x00\x00\x00\x00\x00\x14\x00\x00\x00\x00\x00\x00\x00\x0a"), []byte{}, false)
	f.Add([]byte("\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff"), []byte("x"), true)
	f.Add([]byte("\x80\x00\x00\x00\x00\x00\x00\x00\x80\x00\x00\x00\x00\x00\x00\x00"), []byte("x"), false)
	db, err := OpenInMemory()
	if err != nil {
		f.Fatal(err)
	}
	defer db.Close()
	kv := db.KeyValue("kv", 0)
	w := db.Window("w", 0, 24*time.Hour)
	s := db.Session("s", 0, 24*time.Hour)
	f.Fuzz(func(t *testing.T, key, value []byte, tombstone bool) {
		if tombstone {
			value = nil
		} else if value == nil {
			value = []byte{}
		}
		if err := kv.Restore(key, value); err != nil {
			t.Fatalf("kv: %v", err)
		}
		for _, c := range []struct {
			min     int
			restore func([]byte, []byte) error
		}{{12, w.Restore}, {16, s.Restore}} {
			err := c.restore(key, value)
			if len(key) < c.min {
				if !errors.Is(err, ErrCorruptChangelog) {
					t.Fatalf("%d-byte key: err %v, want ErrCorruptChangelog", len(key), err)
				}
			} else if err != nil {
				t.Fatalf("%d-byte key: %v", len(key), err)
			}
		}
		// Whatever went in comes out of Changes in the same format.
		if err := db.Changes(func(store string, _ int32, ck, v []byte) error {
			if store == "kv" && string(ck) == string(key) && (v == nil) != tombstone {
				t.Fatalf("kv change %x: value %x, tombstone %v", ck, v, tombstone)
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		db.Discard()
	})
}
