package state

import (
	"math"
	"testing"
	"time"
)

const minute = int64(60_000)

func TestWindowPutGetFetch(t *testing.T) {
	db := openMem(t)
	w := db.Window("w", 0, 2*time.Hour) // segment interval 60 min
	for _, start := range []int64{0, 1, 10 * minute, 59 * minute, 60 * minute, 95 * minute} {
		must(t, w.Put([]byte("k"), start, []byte("v")))
	}
	must(t, w.Put([]byte("k2"), 10*minute, []byte("x"))) // another key, same times
	must(t, w.Put([]byte("k\x00"), 10*minute, []byte("y")))
	must(t, w.Put([]byte("j"), 10*minute, []byte("z")))

	if v, ok, err := w.Get([]byte("k"), 60*minute); !ok || err != nil || string(v) != "v" {
		t.Fatalf("Get = %q %v %v", v, ok, err)
	}
	if _, ok, _ := w.Get([]byte("k"), 2); ok {
		t.Fatal("Get of an absent window found one")
	}
	// Inclusive bounds on both ends, across segments.
	eq(t, collect(t, w.Fetch([]byte("k"), 1, 60*minute)), []string{
		"k=v@1-1", "k=v@600000-600000", "k=v@3540000-3540000", "k=v@3600000-3600000",
	})
	eq(t, collect(t, w.Fetch([]byte("k"), 60*minute+1, 95*minute-1)), nil)
	eq(t, collect(t, w.Fetch([]byte("k"), math.MinInt64, math.MaxInt64)), []string{
		"k=v@0-0", "k=v@1-1", "k=v@600000-600000", "k=v@3540000-3540000", "k=v@3600000-3600000", "k=v@5700000-5700000",
	})
	eq(t, collect(t, w.Fetch([]byte("k"), 5, 4)), nil)
	eq(t, collect(t, w.Fetch([]byte("absent"), 0, math.MaxInt64)), nil)

	// FetchAll: ordered by start, then key.
	eq(t, collect(t, w.FetchAll(1, 59*minute)), []string{
		"k=v@1-1", "j=z@600000-600000", "k=v@600000-600000", "k\x00=y@600000-600000", "k2=x@600000-600000", "k=v@3540000-3540000",
	})

	// Delete by nil value.
	must(t, w.Put([]byte("k"), 1, nil))
	eq(t, collect(t, w.Fetch([]byte("k"), 0, 10*minute)), []string{"k=v@0-0", "k=v@600000-600000"})
	eq(t, collect(t, w.FetchAll(0, 0)), []string{"k=v@0-0"})
}

func TestWindowNegativeTimes(t *testing.T) {
	db := openMem(t)
	w := db.Window("w", 0, time.Hour)
	for _, start := range []int64{-31 * minute, -1, 0} {
		must(t, w.Put([]byte("k"), start, []byte("v")))
	}
	eq(t, collect(t, w.Fetch([]byte("k"), math.MinInt64, 0)), []string{"k=v@-1860000--1860000", "k=v@-1--1", "k=v@0-0"})
}

func TestWindowExpiry(t *testing.T) {
	db := openMem(t)
	w := db.Window("w", 0, 10*time.Minute) // segment interval 5 min
	for i := int64(0); i < 30; i++ {
		must(t, w.Put([]byte("k"), i*minute, []byte("v")))
	}
	must(t, db.Commit())
	// Stream time 29 min: live starts are >= 19 min.
	must(t, w.Expire(29*minute))
	if _, ok, _ := w.Get([]byte("k"), 18*minute); ok {
		t.Fatal("expired window is still readable")
	}
	if _, ok, _ := w.Get([]byte("k"), 19*minute); !ok {
		t.Fatal("window at the retention boundary is gone")
	}
	got := collect(t, w.Fetch([]byte("k"), 0, 21*minute))
	eq(t, got, []string{"k=v@1140000-1140000", "k=v@1200000-1200000", "k=v@1260000-1260000"})
	if n := len(collect(t, w.FetchAll(0, math.MaxInt64))); n != 11 {
		t.Fatalf("FetchAll after expiry: %d windows, want 11", n)
	}
	// A put of an expired window is dropped.
	must(t, w.Put([]byte("late"), 18*minute, []byte("v")))
	if _, ok, _ := w.Get([]byte("late"), 18*minute); ok {
		t.Fatal("expired Put was stored")
	}
	must(t, db.Commit())

	// Whole segments below 15 min are physically gone: a fresh handle (stream
	// time unknown) after reopening the same data still sees 15..18.
	raw := 0
	it, err := db.batch.NewIter(nil)
	must(t, err)
	for it.First(); it.Valid(); it.Next() {
		if id, _, suffix, ok := decodeDataKey(it.Key()); ok && id == w.reg.id && suffix[8] == winPrimary {
			raw++
		}
	}
	must(t, it.Close())
	if raw != 15 { // 15..29 min: segments [15,20) [20,25) [25,30)
		t.Fatalf("%d windows on disk after Expire, want 15", raw)
	}
}

func TestWindowPutAdvancesStreamTime(t *testing.T) {
	db := openMem(t)
	w := db.Window("w", 0, 10*time.Minute)
	must(t, w.Put([]byte("k"), 100*minute, []byte("v")))
	must(t, w.Put([]byte("k"), 89*minute, []byte("v"))) // < 100-10: dropped
	must(t, w.Put([]byte("k"), 90*minute, []byte("v"))) // boundary: kept
	eq(t, collect(t, w.Fetch([]byte("k"), 0, math.MaxInt64)), []string{"k=v@5400000-5400000", "k=v@6000000-6000000"})
}

func TestWindowRestore(t *testing.T) {
	db := openMem(t)
	w := db.Window("w", 0, time.Hour)
	ck := append([]byte("key"), 0, 0, 0, 0, 0, 0, 0x03, 0xe8, 0, 0, 0, 0) // start 1000
	must(t, w.Restore(ck, []byte("v")))
	if v, ok, _ := w.Get([]byte("key"), 1000); !ok || string(v) != "v" {
		t.Fatalf("restored window: %q %v", v, ok)
	}
	must(t, w.Restore(ck, nil))
	if _, ok, _ := w.Get([]byte("key"), 1000); ok {
		t.Fatal("restored tombstone did not delete")
	}
}
