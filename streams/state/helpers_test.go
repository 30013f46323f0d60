package state

import (
	"fmt"
	"testing"
)

func openMem(t testing.TB) *DB {
	t.Helper()
	db, err := OpenInMemory()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	return db
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// entry renders an iterator position: key=value@start-end.
func entry(it *Iterator) string {
	return fmt.Sprintf("%s=%s@%d-%d", it.Key(), it.Value(), it.Start(), it.End())
}

func collect(t testing.TB, it *Iterator) []string {
	t.Helper()
	var out []string
	for it.Next() {
		out = append(out, entry(it))
	}
	must(t, it.Close())
	return out
}

func keys(t testing.TB, it *Iterator) []string {
	t.Helper()
	var out []string
	for it.Next() {
		out = append(out, string(it.Key())+"="+string(it.Value()))
	}
	must(t, it.Close())
	return out
}

func eq(t testing.TB, got, want []string) {
	t.Helper()
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("got  %q\nwant %q", got, want)
	}
}

// change is one record reported by Changes.
type change struct {
	store     string
	partition int32
	key       string
	value     []byte // nil: tombstone
}

func allChanges(t testing.TB, db *DB) map[string]change {
	t.Helper()
	out := map[string]change{}
	must(t, db.Changes(func(store string, p int32, k, v []byte) error {
		id := fmt.Sprintf("%s/%d/%x", store, p, k)
		if _, dup := out[id]; dup {
			t.Fatalf("change %s reported twice", id)
		}
		var val []byte
		if v != nil {
			val = append([]byte{}, v...)
		}
		out[id] = change{store, p, string(k), val}
		return nil
	}))
	return out
}
