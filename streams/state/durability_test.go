package state

import (
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
)

func checkpoint(t *testing.T, db *DB, store string, p int32) string {
	t.Helper()
	off, ok, err := db.Checkpoint(store, p)
	must(t, err)
	if !ok {
		return "none"
	}
	return fmt.Sprint(off)
}

func TestCheckpointCommitDiscard(t *testing.T) {
	db := openMem(t)
	kv := db.KeyValue("kv", 0)
	if got := checkpoint(t, db, "kv", 0); got != "none" {
		t.Fatalf("fresh checkpoint: %s", got)
	}
	must(t, kv.Put([]byte("a"), []byte("1")))
	db.SetCheckpoint("kv", 0, 10)
	if got := checkpoint(t, db, "kv", 0); got != "10" {
		t.Fatalf("pending checkpoint: %s", got)
	}
	must(t, db.Commit())
	must(t, kv.Put([]byte("a"), []byte("2")))
	db.SetCheckpoint("kv", 0, 20)
	db.SetCheckpoint("unopened", 3, 7) // needs no store handle
	db.Discard()
	if got := checkpoint(t, db, "kv", 0); got != "10" {
		t.Fatalf("checkpoint after Discard: %s", got)
	}
	if v, _, _ := kv.Get([]byte("a")); string(v) != "1" {
		t.Fatalf("data after Discard: %q", v)
	}
	if got := checkpoint(t, db, "unopened", 3); got != "none" {
		t.Fatalf("discarded checkpoint: %s", got)
	}
}

// TestCrashNeverAheadOfCheckpoint commits batches that each set k=i with
// checkpoint i, leaves one uncommitted, and crashes, keeping a random share of
// unsynced bytes: the reopened DB must hold some committed batch whole, data
// and checkpoint together, and at least the last one synced.
func TestCrashNeverAheadOfCheckpoint(t *testing.T) {
	for seed := range uint64(8) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			fs := vfs.NewCrashableMem()
			db, err := Open("", Options{FS: fs})
			must(t, err)
			kv, w := db.KeyValue("kv", 0), db.Window("w", 0, time.Hour)
			const commits = 5
			for i := 1; i <= commits+1; i++ {
				v := binary.BigEndian.AppendUint64(nil, uint64(i))
				for k := range 50 {
					must(t, kv.Put(fmt.Appendf(nil, "k%d", k), v))
				}
				must(t, w.Put([]byte("k"), 0, v))
				db.SetCheckpoint("kv", 0, int64(i))
				if i <= commits {
					must(t, db.Commit())
				}
			}
			rng := rand.New(rand.NewPCG(seed, seed))
			crashed := fs.CrashClone(vfs.CrashCloneCfg{UnsyncedDataPercent: int(seed * 12), RNG: rng})
			must(t, db.Close())

			db2, err := Open("", Options{FS: crashed})
			must(t, err)
			defer db2.Close()
			off, ok, err := db2.Checkpoint("kv", 0)
			if err != nil || !ok || off != commits {
				t.Fatalf("checkpoint after crash: %d %v %v, want %d", off, ok, err, commits)
			}
			kv2 := db2.KeyValue("kv", 0)
			for k := range 50 {
				v, ok, err := kv2.Get(fmt.Appendf(nil, "k%d", k))
				if err != nil || !ok || binary.BigEndian.Uint64(v) != uint64(off) {
					t.Fatalf("k%d after crash = %x %v %v, checkpoint %d", k, v, ok, err, off)
				}
			}
			v, ok, err := db2.Window("w", 0, time.Hour).Get([]byte("k"), 0)
			if err != nil || !ok || binary.BigEndian.Uint64(v) != uint64(off) {
				t.Fatalf("window after crash = %x %v %v", v, ok, err)
			}
		})
	}
}

func TestDrop(t *testing.T) {
	db := openMem(t)
	a, b := db.KeyValue("kv", 0), db.KeyValue("kv", 1)
	w := db.Window("w", 0, time.Hour)
	must(t, a.Put([]byte("x"), []byte("1")))
	must(t, b.Put([]byte("x"), []byte("1")))
	must(t, w.Put([]byte("x"), 5, []byte("1")))
	db.SetCheckpoint("kv", 0, 5)
	db.SetCheckpoint("kv", 1, 6)
	must(t, db.Commit())

	must(t, db.Drop("kv", 0))
	must(t, db.Drop("w", 0))
	must(t, db.Drop("never-opened", 0))
	if _, ok, _ := a.Get([]byte("x")); ok {
		t.Fatal("dropped data still readable before Commit")
	}
	must(t, db.Commit())
	eq(t, keys(t, a.Range(nil, nil)), nil)
	eq(t, collect(t, w.FetchAll(0, 100)), nil)
	eq(t, keys(t, b.Range(nil, nil)), []string{"x=1"})
	if got := checkpoint(t, db, "kv", 0); got != "none" {
		t.Fatalf("dropped checkpoint: %s", got)
	}
	if got := checkpoint(t, db, "kv", 1); got != "6" {
		t.Fatalf("other partition's checkpoint: %s", got)
	}
	// A dropped store partition is usable again.
	must(t, a.Put([]byte("y"), []byte("2")))
	eq(t, keys(t, a.Range(nil, nil)), []string{"y=2"})
}

func TestReopenFromDisk(t *testing.T) {
	dir := t.TempDir()
	db, err := Open(dir, Options{})
	must(t, err)
	must(t, db.KeyValue("first", 0).Put([]byte("k"), []byte("v1")))
	must(t, db.Window("win", 3, 10*time.Minute).Put([]byte("k"), 7*minute, []byte("w")))
	must(t, db.Session("ses", 0, time.Hour).Put([]byte("k"), 1, 2, []byte("s")))
	db.SetCheckpoint("first", 0, 99)
	must(t, db.Commit())
	must(t, db.KeyValue("first", 0).Put([]byte("uncommitted"), []byte("x")))
	must(t, db.Close())

	db, err = Open(dir, Options{})
	must(t, err)
	defer db.Close()
	// A store created after reopening gets a fresh id: no collision.
	must(t, db.KeyValue("second", 0).Put([]byte("k"), []byte("v2")))
	eq(t, keys(t, db.KeyValue("first", 0).Range(nil, nil)), []string{"k=v1"})
	eq(t, keys(t, db.KeyValue("second", 0).Range(nil, nil)), []string{"k=v2"})
	if got := checkpoint(t, db, "first", 0); got != "99" {
		t.Fatalf("checkpoint after reopen: %s", got)
	}
	// Reopened with another retention, the window store keeps its segments.
	w := db.Window("win", 3, 24*time.Hour)
	if w.interval != 5*minute {
		t.Fatalf("segment interval %d after reopen, want %d", w.interval, 5*minute)
	}
	eq(t, collect(t, w.Fetch([]byte("k"), 0, 100*minute)), []string{"k=w@420000-420000"})
	eq(t, collect(t, db.Session("ses", 0, time.Hour).Fetch([]byte("k"))), []string{"k=s@1-2"})
}
