package http_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/runnel-io/runnel/broker/brokertest"
	"github.com/runnel-io/runnel/connect"
	"github.com/runnel-io/runnel/connect/connecttest"
)

// endpoint is an HTTP server that answers with status(n) the n-th POST
// (from 0) and keeps the JSON arrays it took.
type endpoint struct {
	mu      sync.Mutex
	posts   int
	batches [][]map[string]any
	status  func(n int) (int, string)
	*httptest.Server
}

func newEndpoint(t *testing.T, status func(n int) (int, string)) *endpoint {
	e := &endpoint{status: status}
	e.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		e.mu.Lock()
		defer e.mu.Unlock()
		code, msg := e.status(e.posts)
		e.posts++
		if code == http.StatusOK {
			var batch []map[string]any
			if err := json.Unmarshal(body, &batch); err != nil {
				code, msg = http.StatusBadRequest, err.Error()
			} else {
				e.batches = append(e.batches, batch)
			}
		}
		w.WriteHeader(code)
		io.WriteString(w, msg)
	}))
	t.Cleanup(e.Close)
	return e
}

func (e *endpoint) taken() [][]map[string]any {
	e.mu.Lock()
	defer e.mu.Unlock()
	return slices.Clone(e.batches)
}

func sinkConfig(name, url string) connect.Config {
	return connect.Config{
		"name": name, "connector.class": "HttpSink", "topics": "orders",
		"http.url": url, "batch.max.size": "8", "errors.retry.delay.max.ms": "300",
	}
}

// Batches arrive; a 500 is retried and nothing is lost or sent twice.
func TestHTTPSinkRetriesWithoutLoss(t *testing.T) {
	b := brokertest.Start(t)
	seeds := []string{b.Addr()}
	connecttest.CreateTopic(t, seeds, "orders", 1, nil)
	var values []string
	for i := range 30 {
		values = append(values, fmt.Sprintf(`{"order":%d}`, i))
	}
	produce(t, seeds, "orders", values...)

	ep := newEndpoint(t, func(n int) (int, string) {
		if n == 1 || n == 2 {
			return http.StatusInternalServerError, "database is restarting"
		}
		return http.StatusOK, ""
	})
	connecttest.StartWorker(t, seeds, t.TempDir(), nil, nil, sinkConfig("orders-out", ep.URL))
	count := func() int {
		n := 0
		for _, b := range ep.taken() {
			n += len(b)
		}
		return n
	}
	connecttest.WaitFor(t, 30*time.Second, "30 orders at the endpoint", func() bool { return count() >= 30 })

	var got []int
	for _, batch := range ep.taken() {
		if len(batch) == 0 || len(batch) > 8 {
			t.Fatalf("a batch of %d records, want 1 to batch.max.size (8)", len(batch))
		}
		for _, v := range batch {
			got = append(got, int(v["order"].(float64)))
		}
	}
	if len(got) != 30 {
		t.Fatalf("the endpoint took %d orders, want 30 once each: %v", len(got), got)
	}
	slices.Sort(got)
	for i, o := range got {
		if o != i {
			t.Fatalf("orders %v, want 0..29 once each", got)
		}
	}
	ep.mu.Lock()
	posts, batches := ep.posts, len(ep.batches)
	ep.mu.Unlock()
	if posts != batches+2 {
		t.Fatalf("%d posts for %d batches, want 2 more: the two 500s retried", posts, batches)
	}
}

// A 400 fails the task, and the status says why.
func TestHTTPSinkFailsOnBadRequest(t *testing.T) {
	b := brokertest.Start(t)
	seeds := []string{b.Addr()}
	connecttest.CreateTopic(t, seeds, "orders", 1, nil)
	produce(t, seeds, "orders", `{"order":1}`)
	ep := newEndpoint(t, func(int) (int, string) {
		return http.StatusBadRequest, `{"error":"order 1 has no customer"}`
	})
	w := connecttest.StartWorker(t, seeds, t.TempDir(), nil, nil, sinkConfig("orders-out", ep.URL))
	connecttest.WaitFor(t, 30*time.Second, "the task to fail", func() bool { return connecttest.TaskStatus(t, w, "orders-out").State == connect.StateFailed })
	trace := connecttest.TaskStatus(t, w, "orders-out").Trace
	if !strings.Contains(trace, "400 Bad Request") || !strings.Contains(trace, `{"error":"order 1 has no customer"}`) {
		t.Fatalf("the trace does not show the answer:\n%s", trace)
	}
}
