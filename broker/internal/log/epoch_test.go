package log

import (
	"errors"
	"fmt"
	"log/slog"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"
)

func newTestEpochCache(t *testing.T, fs vfs.FS, leo int64, entries ...epochEntry) *EpochCache {
	t.Helper()
	if err := fs.MkdirAll("/p", 0o755); err != nil {
		t.Fatal(err)
	}
	c := newEpochCache(fs, "/p", func() int64 { return leo }, func(error) {}, slog.New(slog.DiscardHandler))
	for _, e := range entries {
		if err := c.Assign(e.Epoch, e.StartOffset); err != nil {
			t.Fatal(err)
		}
	}
	return c
}

func TestEpochCacheEndOffsetFor(t *testing.T) {
	// Epochs 2@10, 4@20, 7@35; LEO 50.
	entries := []epochEntry{{2, 10}, {4, 20}, {7, 35}}
	tests := []struct {
		epoch     int32
		wantEpoch int32
		wantEnd   int64
	}{
		{-1, -1, -1}, // undefined epoch
		{0, 0, 10},   // below every epoch: the requested epoch and the first start offset
		{1, 1, 10},
		{2, 2, 20},
		{3, 2, 20}, // unknown epoch between: the largest epoch below and the next start
		{4, 4, 35},
		{5, 4, 35},
		{6, 4, 35},
		{7, 7, 50},   // the latest: the log end offset
		{8, -1, -1},  // above the latest
		{99, -1, -1}, // far above
	}
	c := newTestEpochCache(t, vfs.NewMem(), 50, entries...)
	for _, tc := range tests {
		e, end := c.EndOffsetFor(tc.epoch)
		if e != tc.wantEpoch || end != tc.wantEnd {
			t.Errorf("EndOffsetFor(%d) = (%d, %d), want (%d, %d)", tc.epoch, e, end, tc.wantEpoch, tc.wantEnd)
		}
	}
	empty := newTestEpochCache(t, vfs.NewMem(), 50)
	if e, end := empty.EndOffsetFor(3); e != -1 || end != -1 {
		t.Errorf("empty cache: (%d, %d)", e, end)
	}
	if e, off := empty.Latest(); e != -1 || off != -1 {
		t.Errorf("empty Latest: (%d, %d)", e, off)
	}
}

func TestEpochCacheOperations(t *testing.T) {
	type op struct {
		kind   string // assign, end, start
		epoch  int32
		offset int64
	}
	tests := []struct {
		name string
		ops  []op
		want string
	}{
		{"assign in order", []op{{"assign", 1, 0}, {"assign", 2, 5}, {"assign", 5, 9}}, "[{1 0} {2 5} {5 9}]"},
		{"older or equal epoch ignored", []op{{"assign", 3, 0}, {"assign", 3, 7}, {"assign", 2, 9}}, "[{3 0}]"},
		{"same offset replaces", []op{{"assign", 1, 0}, {"assign", 2, 5}, {"assign", 3, 5}}, "[{1 0} {3 5}]"},
		{"lower offset truncates conflicts", []op{{"assign", 1, 0}, {"assign", 2, 5}, {"assign", 3, 8}, {"assign", 4, 4}}, "[{1 0} {4 4}]"},
		{"truncate from end", []op{{"assign", 1, 0}, {"assign", 2, 5}, {"assign", 3, 8}, {"end", 0, 8}}, "[{1 0} {2 5}]"},
		{"truncate from end inside epoch", []op{{"assign", 1, 0}, {"assign", 2, 5}, {"end", 0, 7}}, "[{1 0} {2 5}]"},
		{"truncate from end to the first", []op{{"assign", 1, 3}, {"assign", 2, 5}, {"end", 0, 3}}, "[]"},
		{"truncate from start", []op{{"assign", 1, 0}, {"assign", 2, 5}, {"assign", 3, 8}, {"start", 0, 6}}, "[{2 6} {3 8}]"},
		{"truncate from start at an epoch start", []op{{"assign", 1, 0}, {"assign", 2, 5}, {"start", 0, 5}}, "[{2 5}]"},
		{"truncate from start before the first", []op{{"assign", 1, 4}, {"start", 0, 2}}, "[{1 4}]"},
		{"truncate from start past the last", []op{{"assign", 1, 0}, {"assign", 2, 5}, {"start", 0, 20}}, "[{2 20}]"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			fs := vfs.NewMem()
			c := newTestEpochCache(t, fs, 100)
			for _, o := range tc.ops {
				var err error
				switch o.kind {
				case "assign":
					err = c.Assign(o.epoch, o.offset)
				case "end":
					err = c.TruncateFromEnd(o.offset)
				case "start":
					err = c.TruncateFromStart(o.offset)
				}
				if err != nil {
					t.Fatal(err)
				}
			}
			if got := fmt.Sprint(c.entries()); got != tc.want {
				t.Fatalf("entries %s, want %s", got, tc.want)
			}
			// The checkpoint file holds the same entries (unless nothing was written).
			b, err := readWholeFile(fs, "/p/"+epochCheckpointFile)
			if err != nil {
				t.Fatal(err)
			}
			es, err := parseEpochCheckpoint(b)
			if err != nil {
				t.Fatal(err)
			}
			if got := fmt.Sprint(es); got != tc.want && !(got == "[]" && tc.want == "[]") {
				t.Fatalf("checkpoint %s (%q), want %s", got, b, tc.want)
			}
		})
	}
	c := newTestEpochCache(t, vfs.NewMem(), 0)
	if err := c.Assign(-1, 0); !errors.Is(err, ErrInvalidEpoch) {
		t.Fatalf("Assign(-1): %v", err)
	}
}

func TestEpochCheckpointFormat(t *testing.T) {
	fs := vfs.NewMem()
	newTestEpochCache(t, fs, 0, epochEntry{0, 0}, epochEntry{3, 120})
	b, _ := readWholeFile(fs, "/p/"+epochCheckpointFile)
	if string(b) != "0\n2\n0 0\n3 120\n" {
		t.Fatalf("checkpoint %q", b)
	}
	for _, bad := range []string{"", "1\n0\n", "0\n1\n", "0\n1\n1\n", "0\n1\nx 1\n", "0\n2\n3 5\n2 9\n", "0\n1\n-1 0\n", "0\n1\n1 2"} {
		if _, err := parseEpochCheckpoint([]byte(bad)); !errors.Is(err, ErrCorrupt) {
			t.Errorf("parse(%q) = %v", bad, err)
		}
	}
}
