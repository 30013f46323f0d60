package file

import (
	"context"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// offsets is a SourceTaskContext holding stored offsets.
type offsets map[string]map[string]any

func (o offsets) Offset(p map[string]any) (map[string]any, error) {
	return o[p["filename"].(string)], nil
}
func (o offsets) Logger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// startSource starts a source task on path with extra settings.
func startSource(t *testing.T, path string, stored offsets, extra map[string]string) *sourceTask {
	t.Helper()
	raw := map[string]string{"file": path, "topic": "t", "poll.interval.ms": "5"}
	for k, v := range extra {
		raw[k] = v
	}
	cfg, errs := sourcePlugin().Config.Parse(raw)
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	task := &sourceTask{}
	if err := task.Start(context.Background(), cfg, stored); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = task.Stop() })
	return task
}

// pollN polls until n records came, and returns their values and the last
// offset.
func pollN(t *testing.T, task *sourceTask, n int) ([]any, map[string]any) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var vals []any
	var last map[string]any
	for len(vals) < n {
		recs, err := task.Poll(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if ctx.Err() != nil {
			t.Fatalf("got %d of %d records: %v", len(vals), n, vals)
		}
		for _, r := range recs {
			vals = append(vals, r.Value)
			last = r.SourceOffset
		}
	}
	if len(vals) != n {
		t.Fatalf("got %d records, want %d: %v", len(vals), n, vals)
	}
	return vals, last
}

func appendTo(t *testing.T, path, s string) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteString(s); err != nil {
		t.Fatal(err)
	}
}

func TestSourceFollowsAppendsAndWaitsForWholeLines(t *testing.T) {
	path := filepath.Join(t.TempDir(), "in.txt")
	task := startSource(t, path, offsets{}, nil) // the file does not exist yet
	appendTo(t, path, "a\nb\r\npart")
	vals, off := pollN(t, task, 2)
	if vals[0] != "a" || vals[1] != "b" || off["position"] != int64(5) {
		t.Fatalf("values %q, offset %v", vals, off)
	}
	appendTo(t, path, "ial\n")
	vals, off = pollN(t, task, 1)
	if vals[0] != "partial" || off["position"] != int64(13) {
		t.Fatalf("values %q, offset %v", vals, off)
	}
}

func TestSourceResumesAtTheStoredPosition(t *testing.T) {
	path := filepath.Join(t.TempDir(), "in.txt")
	appendTo(t, path, "one\ntwo\nthree\n")
	task := startSource(t, path, offsets{}, nil)
	_, off := pollN(t, task, 3)
	_ = task.Stop()
	appendTo(t, path, "four\n")
	task = startSource(t, path, offsets{path: off}, nil)
	if vals, _ := pollN(t, task, 1); vals[0] != "four" {
		t.Fatalf("after a restart: %q", vals)
	}
	// A file replaced while the task was down (another inode) is read
	// from its start.
	_ = task.Stop()
	if err := os.Rename(path, path+".1"); err != nil {
		t.Fatal(err)
	}
	appendTo(t, path, "new\n")
	task = startSource(t, path, offsets{path: off}, nil)
	if vals, _ := pollN(t, task, 1); vals[0] != "new" {
		t.Fatalf("after a replacement: %q", vals)
	}
}

func TestSourceFollowsRotationAndTruncation(t *testing.T) {
	path := filepath.Join(t.TempDir(), "in.txt")
	appendTo(t, path, "1\n2\n")
	task := startSource(t, path, offsets{}, nil)
	pollN(t, task, 2)
	// Rotation: the old file moves away, a new one takes its name.
	if err := os.Rename(path, path+".1"); err != nil {
		t.Fatal(err)
	}
	appendTo(t, path, "3333\n")
	if vals, off := pollN(t, task, 1); vals[0] != "3333" || off["position"] != int64(5) {
		t.Fatalf("after rotation: %q %v", vals, off)
	}
	// Truncation: the file is emptied and written again (shorter than the
	// position read: a truncation to the same size or longer cannot be
	// told from appends, as with tail -F).
	if err := os.Truncate(path, 0); err != nil {
		t.Fatal(err)
	}
	appendTo(t, path, "4\n")
	if vals, _ := pollN(t, task, 1); vals[0] != "4" {
		t.Fatalf("after truncation: %q", vals)
	}
}

func TestSourceJSONLines(t *testing.T) {
	path := filepath.Join(t.TempDir(), "in.jsonl")
	appendTo(t, path, `{"id":1,"price":2.5,"tags":["a"]}`+"\n\n"+`"just a string"`+"\n")
	task := startSource(t, path, offsets{}, map[string]string{"format": "json"})
	vals, _ := pollN(t, task, 2)
	m, ok := vals[0].(map[string]any)
	if !ok || m["id"] != int64(1) || m["price"] != 2.5 || vals[1] != "just a string" {
		t.Fatalf("values %#v", vals)
	}
}

func TestSourceBadLines(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "in.jsonl")
	appendTo(t, path, `{"id":1}`+"\n"+`{"id":`+"\n"+`{"id":3}`+"\n")
	task := startSource(t, path, offsets{}, map[string]string{"format": "json"})
	_, err := task.Poll(context.Background())
	if err == nil || !strings.Contains(err.Error(), "line 2 (at byte 9): not valid JSON") {
		t.Fatalf("bad JSON without tolerance: %v", err)
	}

	task = startSource(t, path, offsets{}, map[string]string{"format": "json", "errors.tolerance": "all"})
	vals, _ := pollN(t, task, 2)
	if vals[0].(map[string]any)["id"] != int64(1) || vals[1].(map[string]any)["id"] != int64(3) {
		t.Fatalf("with tolerance: %v", vals)
	}

	long := filepath.Join(dir, "long.txt")
	appendTo(t, long, strings.Repeat("x", 100)+"\nok\n")
	task = startSource(t, long, offsets{}, map[string]string{"max.line.bytes": "16"})
	if _, err := task.Poll(context.Background()); err == nil || !strings.Contains(err.Error(), "longer than max.line.bytes") {
		t.Fatalf("long line without tolerance: %v", err)
	}
	task = startSource(t, long, offsets{}, map[string]string{"max.line.bytes": "16", "errors.tolerance": "all"})
	if vals, off := pollN(t, task, 1); vals[0] != "ok" || off["position"] != int64(104) {
		t.Fatalf("long line with tolerance: %q %v", vals, off)
	}
}
