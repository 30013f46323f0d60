package connecttest_test

import (
	"net"
	"net/http"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/runnel-io/runnel/broker/brokertest"
	"github.com/runnel-io/runnel/connect"
	"github.com/runnel-io/runnel/connect/connecttest"
)

// The helpers together: a worker copies a file's lines into a topic.
func TestWorkerCopiesAFileIntoATopic(t *testing.T) {
	b := brokertest.Start(t)
	seeds := []string{b.Addr()}
	dir := t.TempDir()
	in := filepath.Join(dir, "in.txt")
	connecttest.AppendLines(t, in, "one", "two")
	connecttest.CreateTopic(t, seeds, "lines", 2, nil)
	w := connecttest.StartWorker(t, seeds, dir, nil, connect.Config{"value.converter": "string"},
		connect.Config{"name": "src", "connector.class": "FileStreamSource", "file": in, "topic": "lines", "poll.interval.ms": "10"})

	connecttest.WaitFor(t, 20*time.Second, "the task running", func() bool {
		return connecttest.TaskStatus(t, w, "src").State == connect.StateRunning
	})
	var names []string
	if code := connecttest.Call(t, "GET", w.URL()+"/connectors", nil, &names); code != http.StatusOK || !slices.Equal(names, []string{"src"}) {
		t.Fatalf("GET /connectors: %d %q", code, names)
	}
	var got []string
	for _, r := range connecttest.Consume(t, seeds, "lines", 2) {
		got = append(got, string(r.Value))
	}
	if slices.Sort(got); !slices.Equal(got, []string{"one", "two"}) {
		t.Fatalf("records: %q", got)
	}
	if n := connecttest.EndOffset(t, seeds, "lines"); n != 2 {
		t.Fatalf("end offset %d, want 2", n)
	}
	if st := connecttest.TaskStatus(t, w, "src"); st.State != connect.StateRunning {
		t.Fatalf("task: %+v", st)
	}
}

// TryCall answers 0 where nothing listens.
func TestTryCallWithoutAWorker(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	url := "http://" + ln.Addr().String()
	ln.Close()
	var out map[string]any
	if code := connecttest.TryCall(t, "GET", url+"/connectors", nil, &out); code != 0 || out != nil {
		t.Fatalf("TryCall: %d %v", code, out)
	}
}

func TestFiles(t *testing.T) {
	path := filepath.Join(t.TempDir(), "f.txt")
	if got := connecttest.ReadLines(t, path); got != nil {
		t.Fatalf("a missing file: %q", got)
	}
	connecttest.AppendLines(t, path)
	if got := connecttest.ReadLines(t, path); got != nil {
		t.Fatalf("after appending no line: %q", got)
	}
	connecttest.AppendLines(t, path, "a", "b")
	connecttest.AppendLines(t, path, "c")
	if got := connecttest.ReadLines(t, path); !slices.Equal(got, []string{"a", "b", "c"}) {
		t.Fatalf("after appending: %q", got)
	}
	connecttest.WriteFile(t, path, "x\n")
	if got := connecttest.ReadLines(t, path); !slices.Equal(got, []string{"x"}) {
		t.Fatalf("after writing: %q", got)
	}
}
