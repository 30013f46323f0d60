package connect

import (
	"bufio"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"testing"
)

// item is one line of the input file and, for its id, the row it should
// leave when it is the id's last line. Its JSON is about 200 bytes.
type item struct {
	ID     int64   `json:"id"`
	Seq    int64   `json:"seq"` // the line's number in the file, from 0
	Name   string  `json:"name"`
	Qty    int64   `json:"qty"`
	Price  float64 `json:"price"`
	Active bool    `json:"active"`
	Note   string  `json:"note"`
}

// input writes the file and keeps, per id, its last line.
type input struct {
	path string
	rng  *rand.Rand
	seq  int64
	last map[int64]item
}

func newInput(path string, seed uint64) *input {
	return &input{path: path, rng: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)), last: map[int64]item{}}
}

const letters = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789 "

// appendLines appends n lines whose ids pick returns.
func (in *input) appendLines(t *testing.T, n int, pick func(r *rand.Rand) int64) {
	t.Helper()
	f, err := os.OpenFile(in.path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	w := bufio.NewWriterSize(f, 1<<20)
	note := make([]byte, 90)
	for range n {
		for i := range note {
			note[i] = letters[in.rng.IntN(len(letters))]
		}
		it := item{
			ID: pick(in.rng), Seq: in.seq, Qty: in.rng.Int64N(1000), Price: float64(2*in.rng.IntN(1_000_000)+1) / 200, // never integral: the column is double precision from the first batch
			Active: in.rng.IntN(2) == 0, Note: string(note),
		}
		it.Name = "item-" + strconv.FormatInt(it.ID, 10) + "-v" + strconv.FormatInt(it.Seq, 10)
		b, err := json.Marshal(it)
		if err != nil {
			t.Fatal(err)
		}
		w.Write(b)
		w.WriteByte('\n')
		in.last[it.ID] = it
		in.seq++
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}

// want returns the expected row count and the sum of the rows' seq: the
// table holds every id's last line when both match (and checkItems says so).
func (in *input) want() (rows int, seqSum int64) {
	for _, it := range in.last {
		seqSum += it.Seq
	}
	return len(in.last), seqSum
}

// envCount reads a positive count from the environment.
func envCount(t *testing.T, name string, def int) int {
	s := os.Getenv(name)
	if s == "" {
		return def
	}
	n, err := strconv.Atoi(s)
	if err != nil || n <= 0 {
		t.Fatalf("%s=%q: want a positive count", name, s)
	}
	return n
}

func (it item) String() string {
	return fmt.Sprintf("{id %d seq %d name %s qty %d price %v active %v note %q}", it.ID, it.Seq, it.Name, it.Qty, it.Price, it.Active, it.Note)
}
