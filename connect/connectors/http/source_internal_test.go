package http

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	nethttp "net/http"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/runnel-io/runnel/connect"
)

// taskContext is the runtime as a source task sees it, with no stored
// offsets.
type taskContext struct{}

func (taskContext) Offset(map[string]any) (map[string]any, error) { return nil, nil }
func (taskContext) Logger() *slog.Logger                          { return slog.New(slog.DiscardHandler) }

// client makes no keep-alive connections, so that no goroutine outlives
// a test.
var client = &nethttp.Client{Transport: &nethttp.Transport{DisableKeepAlives: true}}

type reply struct {
	status int
	body   map[string]any
}

func post(t *testing.T, url, contentType, body string) reply {
	t.Helper()
	resp, err := client.Post(url, contentType, strings.NewReader(body))
	if err != nil {
		t.Error(err)
		return reply{}
	}
	defer resp.Body.Close()
	var out map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil && !errors.Is(err, io.EOF) {
		t.Error(err)
	}
	return reply{resp.StatusCode, out}
}

// postAsync posts in a goroutine and returns the reply's channel.
func postAsync(t *testing.T, url, body string) chan reply {
	ch := make(chan reply, 1)
	go func() { ch <- post(t, url, "application/json", body) }()
	return ch
}

func startSource(t *testing.T, extra map[string]string) (*sourceTask, string) {
	t.Helper()
	file := filepath.Join(t.TempDir(), "addr")
	raw := map[string]string{keyTopic: "events", keyListener: "127.0.0.1:0", keyListenerFile: file, keyPath: "/in", keyKeyField: "id"}
	for k, v := range extra {
		raw[k] = v
	}
	p := sourcePlugin()
	cfg, errs := p.Config.Parse(raw)
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	task := &sourceTask{}
	if err := task.Start(context.Background(), cfg, taskContext{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { task.Stop() })
	addr, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	return task, "http://" + strings.TrimSpace(string(addr)) + "/in"
}

// pollAsync runs Poll in a goroutine and waits until it runs (or ran).
func pollAsync(t *testing.T, task *sourceTask, ctx context.Context) chan []connect.Record {
	ch := make(chan []connect.Record, 1)
	var returned atomic.Bool
	go func() {
		recs, err := task.Poll(ctx)
		if err != nil {
			t.Error(err)
		}
		returned.Store(true)
		ch <- recs
	}()
	deadline := time.Now().Add(10 * time.Second)
	for {
		task.mu.Lock()
		polling := task.mu.polling
		task.mu.Unlock()
		if polling || returned.Load() {
			return ch
		}
		if time.Now().After(deadline) {
			t.Fatal("Poll did not start")
		}
		time.Sleep(time.Millisecond)
	}
}

func notYet(t *testing.T, ch chan reply) {
	t.Helper()
	select {
	case r := <-ch:
		t.Fatalf("answered %v before the records were acknowledged", r)
	default:
	}
}

// The source answers a request once each of its records is acknowledged,
// and how it fared.
func TestSourceAnswersWhenRecordsAreAcknowledged(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	task, url := startSource(t, map[string]string{keyMaxInflight: "3"})
	ctx := context.Background()

	polled := pollAsync(t, task, ctx)
	answer := postAsync(t, url, `[{"id":"a","n":1},{"id":"b","n":2},{"n":3}]`)
	recs := <-polled
	if len(recs) != 3 || recs[0].Key != "a" || recs[1].Key != "b" || recs[2].Key != nil || recs[0].Topic != "events" {
		t.Fatalf("polled %v", recs)
	}
	if v := recs[1].Value.(map[string]any); v["n"] != int64(2) {
		t.Fatalf("value %v", v)
	}
	// While the records wait, the queue is bounded.
	polled = pollAsync(t, task, ctx)
	if r := post(t, url, "application/json", `[{"n":4}]`); r.status != nethttp.StatusTooManyRequests {
		t.Fatalf("a request over %s: %v, want 429", keyMaxInflight, r)
	}
	if r := post(t, url, "application/json", `[{"n":1},{"n":2},{"n":3},{"n":4}]`); r.status != nethttp.StatusRequestEntityTooLarge {
		t.Fatalf("a request larger than %s: %v, want 413", keyMaxInflight, r)
	}
	task.Ack(&recs[0], nil)
	task.Ack(&recs[1], connect.ErrFiltered)
	notYet(t, answer)
	task.Ack(&recs[2], nil)
	if r := <-answer; r.status != nethttp.StatusOK || r.body["records"] != 3.0 || r.body["filtered"] != 1.0 {
		t.Fatalf("answer %v, want 200 with 3 records, 1 filtered", r)
	}

	// A record the brokers refused fails its request.
	answer = postAsync(t, url, `{"id":"c"}`)
	recs = <-polled
	task.Ack(&recs[0], errors.New("broker says no"))
	if r := <-answer; r.status != nethttp.StatusInternalServerError || !strings.Contains(r.body["message"].(string), "broker says no") {
		t.Fatalf("answer %v, want 500 with the broker's error", r)
	}

	// A bad body is refused before anything is queued.
	for _, tc := range []struct {
		contentType, body string
		status            int
	}{
		{"application/json", `{"n":`, nethttp.StatusBadRequest},
		{"application/x-ndjson", "{\"n\":1}\nnope", nethttp.StatusBadRequest},
		{"text/plain", "n=1", nethttp.StatusUnsupportedMediaType},
	} {
		if r := post(t, url, tc.contentType, tc.body); r.status != tc.status || r.body["message"] == "" {
			t.Fatalf("%s %q: %v, want %d with a message", tc.contentType, tc.body, r, tc.status)
		}
	}
	if r := post(t, url, "application/json", `[]`); r.status != nethttp.StatusOK || r.body["records"] != 0.0 {
		t.Fatalf("an empty array: %v, want 200 with no records", r)
	}
	dctx, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancel()
	if recs, _ := task.Poll(dctx); len(recs) != 0 {
		t.Fatalf("refused requests queued records: %v", recs)
	}

	if err := task.Stop(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(task.listenerFile); !os.IsNotExist(err) {
		t.Fatalf("the listener file is still there: %v", err)
	}
}

// A request waits for a Poll; when none runs (the task is paused) it
// answers 503, as do the requests queued when a Poll is cancelled and
// those waiting when the task stops.
func TestSourceRefusesWhenNotPolled(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	task, url := startSource(t, nil)

	// A request that comes before Poll waits for it.
	answer := postAsync(t, url, `{"id":"early"}`)
	waitQueued := func() {
		for {
			select {
			case r := <-answer:
				t.Fatalf("answered %v", r)
			default:
			}
			task.mu.Lock()
			n := len(task.mu.queue)
			task.mu.Unlock()
			if n > 0 {
				return
			}
			time.Sleep(time.Millisecond)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	polled := pollAsync(t, task, ctx)
	recs := <-polled
	if len(recs) != 1 || recs[0].Key != "early" {
		t.Fatalf("polled %v", recs)
	}
	task.Ack(&recs[0], nil)
	if r := <-answer; r.status != nethttp.StatusOK {
		t.Fatalf("answer %v", r)
	}

	// No Poll: 503 after pollWait.
	began := time.Now()
	if r := post(t, url, "application/json", `{"n":1}`); r.status != nethttp.StatusServiceUnavailable {
		t.Fatalf("with no Poll: %v, want 503", r)
	}
	if waited := time.Since(began); waited < pollWait {
		t.Fatalf("answered 503 after %v, before pollWait", waited)
	}

	// A Poll cancelled (pausing) refuses what is queued and not taken.
	task.mu.Lock()
	task.mu.polling = true // a Poll about to start: the request queues
	task.mu.Unlock()
	answer = postAsync(t, url, `{"n":2}`)
	waitQueued()
	cancel()
	if recs, _ := task.Poll(ctx); len(recs) != 0 {
		t.Fatalf("a cancelled Poll returned %v", recs)
	}
	if r := <-answer; r.status != nethttp.StatusServiceUnavailable {
		t.Fatalf("queued when the Poll was cancelled: %v, want 503", r)
	}

	// Stop answers the records polled and not yet acknowledged.
	polled = pollAsync(t, task, context.Background())
	answer = postAsync(t, url, `{"n":3}`)
	<-polled
	notYet(t, answer)
	if err := task.Stop(); err != nil {
		t.Fatal(err)
	}
	if r := <-answer; r.status != nethttp.StatusServiceUnavailable {
		t.Fatalf("pending when the task stopped: %v, want 503", r)
	}
}

func TestSourceRoutes(t *testing.T) {
	task, url := startSource(t, map[string]string{keyMaxBody: "64"})
	defer task.Stop()
	base := strings.TrimSuffix(url, "/in")
	if r := post(t, base+"/other", "application/json", `{}`); r.status != nethttp.StatusNotFound {
		t.Errorf("another path: %v", r)
	}
	resp, err := client.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != nethttp.StatusMethodNotAllowed || resp.Header.Get("Allow") != "POST" {
		t.Errorf("GET: %d, Allow %q", resp.StatusCode, resp.Header.Get("Allow"))
	}
	if r := post(t, url, "application/json", `{"s":"`+strings.Repeat("x", 100)+`"}`); r.status != nethttp.StatusRequestEntityTooLarge {
		t.Errorf("a body over %s: %v", keyMaxBody, r)
	}
}

// key.field names one field (its value, any type, is the key) or several
// (a string key of their values joined by ':'); a missing one: null key.
func TestKeyOf(t *testing.T) {
	o := map[string]any{"store_id": "s1", "product_id": "p2", "n": int64(7)}
	for _, c := range []struct {
		fields []string
		want   any
	}{
		{nil, nil},
		{[]string{"n"}, int64(7)},
		{[]string{"missing"}, nil},
		{[]string{"store_id", "product_id"}, "s1:p2"},
		{[]string{"store_id", "n"}, "s1:7"},
		{[]string{"store_id", "missing"}, nil},
	} {
		if got := keyOf(o, c.fields); got != c.want {
			t.Errorf("keyOf(%v) = %#v, want %#v", c.fields, got, c.want)
		}
	}
}
