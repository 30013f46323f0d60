package state

import (
	"math"
	"testing"
	"time"
)

func TestSessionFind(t *testing.T) {
	db := openMem(t)
	s := db.Session("s", 0, 2*time.Hour) // segment interval 60 min
	put := func(k string, start, end int64) { must(t, s.Put([]byte(k), start, end, []byte(k))) }
	put("a", 0, 10)
	put("a", 20, 30)
	put("a", 40, 100*minute) // a later segment
	put("a", 40, 50)
	put("ab", 0, 10)
	put("b", 15, 25)

	eq(t, collect(t, s.Fetch([]byte("a"))), []string{"a=a@0-10", "a=a@20-30", "a=a@40-50", "a=a@40-6000000"})
	// end >= 30 and start <= 40: both bounds inclusive.
	eq(t, collect(t, s.FindSessions([]byte("a"), 30, 40)), []string{"a=a@20-30", "a=a@40-50", "a=a@40-6000000"})
	eq(t, collect(t, s.FindSessions([]byte("a"), 31, 39)), nil)
	eq(t, collect(t, s.FindSessions([]byte("a"), 0, 0)), []string{"a=a@0-10"})
	eq(t, collect(t, s.FindSessions([]byte("b"), math.MinInt64, math.MaxInt64)), []string{"b=b@15-25"})
	eq(t, collect(t, s.Fetch([]byte("c"))), nil)

	must(t, s.Remove([]byte("a"), 20, 30))
	must(t, s.Put([]byte("a"), 0, 10, nil))
	eq(t, collect(t, s.Fetch([]byte("a"))), []string{"a=a@40-50", "a=a@40-6000000"})
}

func TestSessionExpiry(t *testing.T) {
	db := openMem(t)
	s := db.Session("s", 0, 10*time.Minute)
	for i := int64(0); i < 30; i++ {
		must(t, s.Put([]byte("k"), i*minute-5, i*minute, []byte("v")))
	}
	must(t, s.Expire(29*minute)) // live: end >= 19 min
	got := collect(t, s.Fetch([]byte("k")))
	if len(got) != 11 || got[0] != "k=v@1139995-1140000" {
		t.Fatalf("after expiry: %q", got)
	}
	must(t, s.Put([]byte("k"), 0, 18*minute, []byte("late")))
	if n := len(collect(t, s.Fetch([]byte("k")))); n != 11 {
		t.Fatalf("expired Put was stored: %d sessions", n)
	}
}

func TestSessionRestore(t *testing.T) {
	db := openMem(t)
	s := db.Session("s", 0, time.Hour)
	ck := append([]byte("key"), 0, 0, 0, 0, 0, 0, 0, 20, 0, 0, 0, 0, 0, 0, 0, 10) // end 20, start 10
	must(t, s.Restore(ck, []byte("v")))
	eq(t, collect(t, s.Fetch([]byte("key"))), []string{"key=v@10-20"})
	must(t, s.Restore(ck, nil))
	eq(t, collect(t, s.Fetch([]byte("key"))), nil)
}
