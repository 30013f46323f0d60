package http_test

import (
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/runnel-io/runnel/broker/brokertest"
	"github.com/runnel-io/runnel/connect"
	"github.com/runnel-io/runnel/connect/connecttest"
)

type answer struct {
	status int
	body   string
}

func post(t *testing.T, url, contentType, body string) answer {
	t.Helper()
	resp, err := http.Post(url, contentType, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return answer{resp.StatusCode, string(b)}
}

// postUntilTaken posts until the answer is not 503 (the task is not
// polling yet, or paused) and returns that answer.
func postUntilTaken(t *testing.T, url, contentType, body string) answer {
	t.Helper()
	var a answer
	connecttest.WaitFor(t, 20*time.Second, "the source to take a request", func() bool {
		a = post(t, url, contentType, body)
		return a.status != http.StatusServiceUnavailable
	})
	return a
}

// POST → 200 means the records are in the topic; a bad body is refused
// whole; a paused connector answers 503.
func TestHTTPSourceEndToEnd(t *testing.T) {
	b := brokertest.Start(t)
	seeds := []string{b.Addr()}
	connecttest.CreateTopic(t, seeds, "events", 1, nil)
	dir := t.TempDir()
	addrFile := filepath.Join(dir, "addr")
	w := connecttest.StartWorker(t, seeds, dir, nil, nil, connect.Config{
		"name": "web-in", "connector.class": "HttpSource", "kafka.topic": "events",
		"http.listener": "127.0.0.1:0", "http.listener.file": addrFile, "http.path": "/events",
		"key.field": "id", "key.converter": "string",
	})
	var addr []byte
	connecttest.WaitFor(t, 20*time.Second, "the listener file", func() bool {
		var err error
		addr, err = os.ReadFile(addrFile)
		return err == nil
	})
	url := "http://" + strings.TrimSpace(string(addr)) + "/events"

	a := postUntilTaken(t, url, "application/json", `[{"id":"a","n":1},{"id":"b","n":2},{"id":"c","n":3}]`)
	if a.status != http.StatusOK || !strings.Contains(a.body, `"records":3`) {
		t.Fatalf("POST: %+v, want 200", a)
	}
	// The answer came after the brokers stored the records: they are in
	// the topic now, no waiting.
	if n := connecttest.EndOffset(t, seeds, "events"); n != 3 {
		t.Fatalf("after 200 the topic holds %d records, want 3", n)
	}

	for _, bad := range []struct{ contentType, body, want string }{
		{"application/json", `[{"id":"x"}, {"id":`, "not valid JSON"},
		{"application/x-ndjson", "{\"id\":\"x\"}\n{\"id\" \"y\"}\n", "line 2: not valid JSON"},
		{"application/json", `[{"id":"x"}, "y"]`, "element 1 of the array is a string"},
	} {
		a := post(t, url, bad.contentType, bad.body)
		if a.status != http.StatusBadRequest || !strings.Contains(a.body, bad.want) {
			t.Fatalf("POST %q: %+v, want 400 with %q", bad.body, a, bad.want)
		}
	}
	a = post(t, url, "application/x-ndjson", "{\"id\":\"d\",\"n\":4}\n{\"id\":\"e\",\"n\":5.5}\n")
	if a.status != http.StatusOK {
		t.Fatalf("POST JSON lines: %+v", a)
	}
	if n := connecttest.EndOffset(t, seeds, "events"); n != 5 {
		t.Fatalf("the topic holds %d records, want 5: the refused requests left some", n)
	}
	var keys []string
	var values []map[string]any
	for _, r := range connecttest.Consume(t, seeds, "events", 5) {
		keys = append(keys, string(r.Key))
		var v map[string]any
		if err := json.Unmarshal(r.Value, &v); err != nil {
			t.Fatal(err)
		}
		values = append(values, v)
	}
	if want := []string{"a", "b", "c", "d", "e"}; !reflect.DeepEqual(keys, want) {
		t.Fatalf("keys %v, want %v", keys, want)
	}
	if values[4]["n"] != 5.5 || values[0]["n"] != 1.0 {
		t.Fatalf("values %v", values)
	}

	// Paused, the source takes nothing.
	if code := connecttest.Call(t, "PUT", w.URL()+"/connectors/web-in/pause", nil, nil); code != http.StatusAccepted {
		t.Fatalf("pause: %d", code)
	}
	connecttest.WaitFor(t, 20*time.Second, "the task to pause", func() bool { return connecttest.TaskStatus(t, w, "web-in").State == connect.StatePaused })
	if a := post(t, url, "application/json", `{"id":"f"}`); a.status != http.StatusServiceUnavailable {
		t.Fatalf("POST to a paused connector: %+v, want 503", a)
	}
	if code := connecttest.Call(t, "PUT", w.URL()+"/connectors/web-in/resume", nil, nil); code != http.StatusAccepted {
		t.Fatalf("resume: %d", code)
	}
	if a := postUntilTaken(t, url, "application/json", `{"id":"g"}`); a.status != http.StatusOK {
		t.Fatalf("POST after resuming: %+v", a)
	}
	if n := connecttest.EndOffset(t, seeds, "events"); n != 6 {
		t.Fatalf("the topic holds %d records, want 6", n)
	}
}
