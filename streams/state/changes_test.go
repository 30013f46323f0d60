package state

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"maps"
	"slices"
	"testing"
	"time"
)

func be64(v int64) []byte { return binary.BigEndian.AppendUint64(nil, uint64(v)) }

func windowCK(k string, start int64) string {
	return string(append(append([]byte(k), be64(start)...), 0, 0, 0, 0))
}

func sessionCK(k string, start, end int64) string {
	return string(append(append([]byte(k), be64(end)...), be64(start)...))
}

func TestChangesDedupeAndTombstones(t *testing.T) {
	db := openMem(t)
	kv := db.KeyValue("kv", 2)
	for i := range 100 {
		must(t, kv.Put([]byte("hot"), fmt.Appendf(nil, "%d", i)))
	}
	must(t, kv.Put([]byte("gone"), []byte("x")))
	must(t, kv.Delete([]byte("gone")))
	must(t, kv.Delete([]byte("back")))
	must(t, kv.Put([]byte("back"), []byte("again")))
	must(t, kv.Delete([]byte("never"))) // a delete of nothing is still logged
	must(t, kv.Delete([]byte("twice")))
	must(t, kv.Delete([]byte("twice")))
	db.SetCheckpoint("kv", 2, 42) // not a change

	got := allChanges(t, db)
	want := map[string]change{
		"kv/2/" + fmt.Sprintf("%x", "hot"):   {"kv", 2, "hot", []byte("99")},
		"kv/2/" + fmt.Sprintf("%x", "gone"):  {"kv", 2, "gone", nil},
		"kv/2/" + fmt.Sprintf("%x", "back"):  {"kv", 2, "back", []byte("again")},
		"kv/2/" + fmt.Sprintf("%x", "never"): {"kv", 2, "never", nil},
		"kv/2/" + fmt.Sprintf("%x", "twice"): {"kv", 2, "twice", nil},
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("changes:\n got %v\nwant %v", got, want)
	}
	for _, c := range got {
		if (c.value == nil) != (c.key == "gone" || c.key == "never" || c.key == "twice") {
			t.Fatalf("tombstone mismatch for %q: %v", c.key, c.value)
		}
	}

	must(t, db.Commit())
	if n := len(allChanges(t, db)); n != 0 {
		t.Fatalf("%d changes after Commit, want 0", n)
	}
	must(t, kv.Put([]byte("a"), []byte("1")))
	db.Discard()
	if n := len(allChanges(t, db)); n != 0 {
		t.Fatalf("%d changes after Discard, want 0", n)
	}
}

func TestChangesWindowSessionKeys(t *testing.T) {
	db := openMem(t)
	w := db.Window("w", 1, time.Hour)
	s := db.Session("s", 0, time.Hour)
	must(t, w.Put([]byte("k"), 1000, []byte("a")))
	must(t, w.Put([]byte("k"), 1000, []byte("b")))
	must(t, w.Put([]byte("k"), 2000, []byte("c")))
	must(t, w.Put([]byte("k"), 2000, nil))
	must(t, s.Put([]byte("k"), 10, 20, []byte("s")))
	must(t, s.Remove([]byte("k"), 30, 40))

	got := map[string]string{}
	must(t, db.Changes(func(store string, p int32, k, v []byte) error {
		val := "<nil>"
		if v != nil {
			val = string(v)
		}
		got[fmt.Sprintf("%s/%d/%q", store, p, k)] = val
		return nil
	}))
	want := map[string]string{
		fmt.Sprintf("w/1/%q", windowCK("k", 1000)):    "b",
		fmt.Sprintf("w/1/%q", windowCK("k", 2000)):    "<nil>",
		fmt.Sprintf("s/0/%q", sessionCK("k", 10, 20)): "s",
		fmt.Sprintf("s/0/%q", sessionCK("k", 30, 40)): "<nil>",
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("changes:\n got %v\nwant %v", got, want)
	}
}

func TestChangesSkipDropAndExpire(t *testing.T) {
	db := openMem(t)
	a, b := db.KeyValue("kv", 0), db.KeyValue("kv", 1)
	must(t, a.Put([]byte("x"), []byte("1")))
	must(t, a.Delete([]byte("y")))
	must(t, b.Put([]byte("x"), []byte("1")))
	must(t, db.Drop("kv", 0))
	must(t, a.Put([]byte("z"), []byte("after drop")))

	w := db.Window("w", 0, 10*time.Minute)
	must(t, w.Put([]byte("old"), 0, []byte("v")))
	must(t, w.Put([]byte("new"), 30*minute, []byte("v")))
	must(t, w.Expire(30*minute))

	got := slices.Sorted(maps.Keys(allChanges(t, db)))
	want := []string{
		fmt.Sprintf("kv/0/%x", "z"),
		fmt.Sprintf("kv/1/%x", "x"),
		fmt.Sprintf("w/0/%x", windowCK("new", 30*minute)),
	}
	eq(t, got, want)
}

func TestChangesStopsOnError(t *testing.T) {
	db := openMem(t)
	kv := db.KeyValue("kv", 0)
	must(t, kv.Put([]byte("a"), []byte("1")))
	must(t, kv.Put([]byte("b"), []byte("1")))
	boom := fmt.Errorf("boom")
	calls := 0
	err := db.Changes(func(string, int32, []byte, []byte) error { calls++; return boom })
	if err != boom || calls != 1 {
		t.Fatalf("err=%v calls=%d", err, calls)
	}
}

// dump renders every entry of every store partition the test wrote.
func dump(t *testing.T, db *DB) string {
	var buf bytes.Buffer
	for _, p := range []int32{0, 1} {
		fmt.Fprintln(&buf, "kv", p, keys(t, db.KeyValue("kv", p).Range(nil, nil)))
		fmt.Fprintln(&buf, "w", p, collect(t, db.Window("w", p, time.Hour).FetchAll(-1<<62, 1<<62)))
		fmt.Fprintln(&buf, "s", p, collect(t, db.Session("s", p, time.Hour).Fetch([]byte("k"))))
	}
	return buf.String()
}

func TestRestoreRoundTrip(t *testing.T) {
	a, b := openMem(t), openMem(t)
	for i := range 200 {
		p := int32(i % 2)
		k := fmt.Appendf(nil, "k%03d", i%37)
		v := fmt.Appendf(nil, "v%d", i)
		must(t, a.KeyValue("kv", p).Put(k, v))
		must(t, a.Window("w", p, time.Hour).Put(k, int64(i%5)*1000, v))
		must(t, a.Session("s", p, time.Hour).Put([]byte("k"), int64(i%7), int64(i%7)+100, v))
		if i%11 == 0 {
			must(t, a.KeyValue("kv", p).Delete(k))
			must(t, a.Window("w", p, time.Hour).Put(k, int64(i%5)*1000, nil))
			must(t, a.Session("s", p, time.Hour).Remove([]byte("k"), int64(i%7), int64(i%7)+100))
		}
	}
	must(t, a.Changes(func(store string, p int32, k, v []byte) error {
		switch store {
		case "kv":
			return b.KeyValue(store, p).Restore(k, v)
		case "w":
			return b.Window(store, p, time.Hour).Restore(k, v)
		default:
			return b.Session(store, p, time.Hour).Restore(k, v)
		}
	}))
	must(t, a.Commit())
	must(t, b.Commit())
	da, dbb := dump(t, a), dump(t, b)
	if da != dbb {
		t.Fatalf("restored store differs:\nA:\n%s\nB:\n%s", da, dbb)
	}
	if len(da) < 500 {
		t.Fatalf("suspiciously small dump:\n%s", da)
	}
}
