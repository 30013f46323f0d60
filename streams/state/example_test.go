package state_test

import (
	"fmt"
	"time"

	"github.com/runnel-io/runnel/streams/state"
)

// A task counts words in a key-value store, logs the changes and commits
// them with its changelog checkpoint.
func Example() {
	db, err := state.OpenInMemory()
	if err != nil {
		panic(err)
	}
	defer db.Close()

	counts := db.KeyValue("word-counts", 0)
	for _, w := range []string{"to", "be", "or", "not", "to", "be"} {
		v, _, _ := counts.Get([]byte(w))
		n := byte(0)
		if len(v) == 1 {
			n = v[0]
		}
		_ = counts.Put([]byte(w), []byte{n + 1})
	}
	// Each key once, with its latest value: what goes to the changelog topic.
	_ = db.Changes(func(store string, partition int32, key, value []byte) error {
		fmt.Printf("%s/%d %s=%d\n", store, partition, key, value[0])
		return nil
	})
	db.SetCheckpoint("word-counts", 0, 4) // the changelog offset after those 4 records
	if err := db.Commit(); err != nil {
		panic(err)
	}
	off, _, _ := db.Checkpoint("word-counts", 0)
	fmt.Println("checkpoint", off)
	// Output:
	// word-counts/0 be=2
	// word-counts/0 not=1
	// word-counts/0 or=1
	// word-counts/0 to=2
	// checkpoint 4
}

func ExampleWindow_Fetch() {
	db, _ := state.OpenInMemory()
	defer db.Close()
	clicks := db.Window("clicks-per-minute", 0, time.Hour)
	for _, start := range []int64{0, 60_000, 120_000} {
		_ = clicks.Put([]byte("alice"), start, []byte{byte(start / 60_000)})
	}
	it := clicks.Fetch([]byte("alice"), 60_000, 120_000)
	defer it.Close()
	for it.Next() {
		fmt.Println(string(it.Key()), it.Start(), it.Value()[0])
	}
	// Output:
	// alice 60000 1
	// alice 120000 2
}
