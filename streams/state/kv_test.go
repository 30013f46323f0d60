package state

import (
	"errors"
	"testing"
	"time"
)

func TestKeyValueGetPutDelete(t *testing.T) {
	db := openMem(t)
	s := db.KeyValue("kv", 0)
	if _, ok, err := s.Get([]byte("a")); ok || err != nil {
		t.Fatalf("empty store: ok=%v err=%v", ok, err)
	}
	must(t, s.Put([]byte("a"), []byte("1")))
	must(t, s.Put([]byte("a"), []byte("2")))
	v, ok, err := s.Get([]byte("a"))
	if !ok || err != nil || string(v) != "2" {
		t.Fatalf("Get = %q %v %v, want 2", v, ok, err)
	}
	must(t, s.Put([]byte("e"), []byte{})) // empty value is a value, not a delete
	if v, ok, _ := s.Get([]byte("e")); !ok || len(v) != 0 {
		t.Fatalf("empty value: %q %v", v, ok)
	}
	must(t, s.Put([]byte("a"), nil))
	if _, ok, _ := s.Get([]byte("a")); ok {
		t.Fatal("Put(nil) did not delete")
	}
	must(t, s.Put([]byte("b"), []byte("1")))
	must(t, s.Delete([]byte("b")))
	if _, ok, _ := s.Get([]byte("b")); ok {
		t.Fatal("Delete did not delete")
	}
}

func TestKeyValueIsolation(t *testing.T) {
	db := openMem(t)
	a0, a1, b0 := db.KeyValue("a", 0), db.KeyValue("a", 1), db.KeyValue("b", 0)
	if db.KeyValue("a", 0) != a0 {
		t.Fatal("same store partition gave another handle")
	}
	must(t, a0.Put([]byte("k"), []byte("a0")))
	must(t, a1.Put([]byte("k"), []byte("a1")))
	must(t, b0.Put([]byte("k"), []byte("b0")))
	for s, want := range map[*KeyValue]string{a0: "a0", a1: "a1", b0: "b0"} {
		eq(t, keys(t, s.Range(nil, nil)), []string{"k=" + want})
	}
}

func TestKeyValueRange(t *testing.T) {
	db := openMem(t)
	s := db.KeyValue("kv", 7)
	for _, k := range []string{"b", "a", "c", "ab", "d"} {
		must(t, s.Put([]byte(k), []byte(k)))
	}
	must(t, db.Commit())
	must(t, s.Put([]byte("bb"), []byte("bb"))) // pending, must be visible
	must(t, s.Delete([]byte("c")))             // pending delete of a committed key
	eq(t, keys(t, s.Range(nil, nil)), []string{"a=a", "ab=ab", "b=b", "bb=bb", "d=d"})
	eq(t, keys(t, s.Range([]byte("ab"), []byte("d"))), []string{"ab=ab", "b=b", "bb=bb"})
	eq(t, keys(t, s.Range([]byte("b"), nil)), []string{"b=b", "bb=bb", "d=d"})
	eq(t, keys(t, s.Range(nil, []byte("b"))), []string{"a=a", "ab=ab"})
	eq(t, keys(t, s.Range([]byte("c"), []byte("c"))), nil)
	eq(t, keys(t, s.Range([]byte("d"), []byte("a"))), nil)
	eq(t, keys(t, s.ReverseRange(nil, nil)), []string{"d=d", "bb=bb", "b=b", "ab=ab", "a=a"})
	eq(t, keys(t, s.ReverseRange([]byte("ab"), []byte("d"))), []string{"bb=bb", "b=b", "ab=ab"})
}

func TestKeyValueIteratorSnapshot(t *testing.T) {
	db := openMem(t)
	s := db.KeyValue("kv", 0)
	must(t, s.Put([]byte("a"), []byte("1")))
	it := s.Range(nil, nil)
	must(t, s.Put([]byte("b"), []byte("2"))) // after the iterator: not seen
	eq(t, keys(t, it), []string{"a=1"})
}

func TestKindMismatch(t *testing.T) {
	db := openMem(t)
	must(t, db.KeyValue("s", 0).Put([]byte("k"), []byte("v")))
	w := db.Window("s", 0, time.Hour)
	if err := w.Put([]byte("k"), 0, []byte("v")); !errors.Is(err, ErrKindMismatch) {
		t.Fatalf("Put on mismatched kind: %v", err)
	}
	it := db.Session("s", 1, time.Hour).Fetch([]byte("k"))
	if it.Next() || !errors.Is(it.Close(), ErrKindMismatch) {
		t.Fatal("Fetch on mismatched kind did not fail")
	}
}

func TestClosed(t *testing.T) {
	db := openMem(t)
	s := db.KeyValue("kv", 0)
	must(t, db.Close())
	must(t, db.Close()) // idempotent
	if err := s.Put([]byte("k"), []byte("v")); !errors.Is(err, ErrClosed) {
		t.Fatalf("Put after Close: %v", err)
	}
	if _, _, err := s.Get([]byte("k")); !errors.Is(err, ErrClosed) {
		t.Fatalf("Get after Close: %v", err)
	}
	if err := db.Commit(); !errors.Is(err, ErrClosed) {
		t.Fatalf("Commit after Close: %v", err)
	}
	if err := db.Changes(func(string, int32, []byte, []byte) error { return nil }); !errors.Is(err, ErrClosed) {
		t.Fatalf("Changes after Close: %v", err)
	}
	if it := s.Range(nil, nil); it.Next() || !errors.Is(it.Close(), ErrClosed) {
		t.Fatal("Range after Close did not fail")
	}
}

// TestRestoreAfterDropInOneBatch: a partition dropped (lost) and then
// restored again before the next commit keeps what was restored, with the
// checkpoint set after it; restored records are not in Changes.
func TestRestoreAfterDropInOneBatch(t *testing.T) {
	for _, sync := range []bool{true, false} {
		db := openMem(t)
		s := db.KeyValue("kv", 0)
		must(t, s.Put([]byte("old"), []byte("1")))
		db.SetCheckpoint("kv", 0, 5)
		must(t, db.Commit())

		must(t, db.Drop("kv", 0))
		must(t, s.Restore([]byte("a"), []byte("2")))
		must(t, s.Restore([]byte("b"), []byte("3")))
		db.SetCheckpoint("kv", 0, 2)
		var changed int
		must(t, db.Changes(func(string, int32, []byte, []byte) error { changed++; return nil }))
		if changed != 0 {
			t.Errorf("Changes reported %d restored records", changed)
		}
		if sync {
			must(t, db.Commit())
		} else {
			must(t, db.CommitNoSync())
		}
		for k, want := range map[string]string{"a": "2", "b": "3"} {
			if v, ok, err := s.Get([]byte(k)); !ok || err != nil || string(v) != want {
				t.Errorf("after commit %s = %q %v %v, want %s", k, v, ok, err, want)
			}
		}
		if _, ok, _ := s.Get([]byte("old")); ok {
			t.Error("the dropped key is back")
		}
		if off, ok, err := db.Checkpoint("kv", 0); !ok || err != nil || off != 2 {
			t.Errorf("checkpoint = %d %v %v, want 2", off, ok, err)
		}
	}
}
