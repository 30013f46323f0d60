package http

import (
	"context"
	"errors"
	"io"
	nethttp "net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"sync"
	"testing"

	"github.com/runnel-io/runnel/connect"
)

func TestParseHeaders(t *testing.T) {
	for _, tc := range []struct {
		in      string
		want    nethttp.Header
		wantErr bool
	}{
		{"", nethttp.Header{}, false},
		{"Authorization: Bearer abc", nethttp.Header{"Authorization": {"Bearer abc"}}, false},
		{"x-team:retail, X-Team:demo,Accept:application/json", nethttp.Header{"X-Team": {"retail", "demo"}, "Accept": {"application/json"}}, false},
		{"X-Empty:", nethttp.Header{"X-Empty": {""}}, false},
		{"NoColon", nil, true},
		{":value", nil, true},
		{"Bad Name:v", nil, true},
	} {
		got, err := parseHeaders(tc.in)
		if (err != nil) != tc.wantErr || (!tc.wantErr && !reflect.DeepEqual(got, tc.want)) {
			t.Errorf("parseHeaders(%q) = %v, %v; want %v (error: %v)", tc.in, got, err, tc.want, tc.wantErr)
		}
	}
}

func TestEncodeBatch(t *testing.T) {
	recs := []connect.Record{
		{Value: map[string]any{"n": int64(1), "s": "<a&b>"}},
		{Value: "text"},
		{Value: nil},
		{Value: []byte(`{"raw": [1, 2]}`)},
		{Value: []byte{0xff, 0x00}},
	}
	for _, tc := range []struct {
		lines bool
		want  string
	}{
		{false, `[{"n":1,"s":"<a&b>"},"text",null,{"raw":[1,2]},"/wA="]`},
		{true, "{\"n\":1,\"s\":\"<a&b>\"}\n\"text\"\nnull\n{\"raw\":[1,2]}\n\"/wA=\"\n"},
	} {
		got, err := encodeBatch(recs, tc.lines)
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != tc.want {
			t.Errorf("lines=%v: got %s, want %s", tc.lines, got, tc.want)
		}
	}
	if _, err := encodeBatch([]connect.Record{{Topic: "t", Value: map[string]any{"f": func() {}}}}, false); err == nil {
		t.Error("a value that is not JSON was encoded")
	}
}

// server answers POSTs with the statuses given, in turn (then 200), and
// keeps the bodies it took (answered 2xx) and every request.
type server struct {
	mu       sync.Mutex
	statuses []int
	body     string // of refusals
	taken    []string
	requests []*nethttp.Request
	*httptest.Server
}

func newServer(t *testing.T, body string, statuses ...int) *server {
	s := &server{statuses: statuses, body: body}
	s.Server = httptest.NewServer(nethttp.HandlerFunc(func(w nethttp.ResponseWriter, r *nethttp.Request) {
		b, _ := io.ReadAll(r.Body)
		s.mu.Lock()
		defer s.mu.Unlock()
		s.requests = append(s.requests, r)
		status := nethttp.StatusOK
		if len(s.statuses) > 0 {
			status, s.statuses = s.statuses[0], s.statuses[1:]
		}
		if status < 300 {
			s.taken = append(s.taken, string(b))
		}
		if status == nethttp.StatusFound {
			w.Header().Set("Location", "/elsewhere")
		}
		w.WriteHeader(status)
		if status >= 300 {
			io.WriteString(w, s.body)
		}
	}))
	t.Cleanup(s.Close)
	return s
}

func startSink(t *testing.T, url string, extra map[string]string) *sinkTask {
	t.Helper()
	raw := map[string]string{keyURL: url, keyBatchSize: "2"}
	for k, v := range extra {
		raw[k] = v
	}
	p := sinkPlugin()
	cfg, errs := p.Config.Parse(raw)
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	task := &sinkTask{}
	if err := task.Start(context.Background(), cfg, nil); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { task.Stop() })
	return task
}

func values(n int) []connect.Record {
	out := make([]connect.Record, n)
	for i := range out {
		out[i] = connect.Record{Topic: "t", Offset: int64(i), Value: map[string]any{"i": int64(i)}}
	}
	return out
}

// A batch the server could not take is put again from where it failed:
// the batches taken before are not sent twice.
func TestSinkRetriesFromTheFailedBatch(t *testing.T) {
	srv := newServer(t, "busy", 200, 503, 429)
	task := startSink(t, srv.URL, map[string]string{keyHeaders: "X-Team:retail"})
	recs := values(5)
	var re *connect.RetriableError
	for i, want := range []string{"503 Service Unavailable: busy", "429 Too Many Requests: busy"} {
		err := task.Put(context.Background(), recs)
		if !errors.As(err, &re) || !strings.Contains(err.Error(), want) {
			t.Fatalf("put %d: %v, want a retriable error with %q", i, err, want)
		}
	}
	if err := task.Put(context.Background(), recs); err != nil {
		t.Fatal(err)
	}
	want := []string{`[{"i":0},{"i":1}]`, `[{"i":2},{"i":3}]`, `[{"i":4}]`}
	if !reflect.DeepEqual(srv.taken, want) {
		t.Fatalf("the server took %q, want %q", srv.taken, want)
	}
	if len(srv.requests) != 5 {
		t.Fatalf("%d requests, want 5", len(srv.requests))
	}
	for _, r := range srv.requests {
		if r.Header.Get("X-Team") != "retail" || r.Header.Get("Content-Type") != "application/json" {
			t.Fatalf("headers %v", r.Header)
		}
	}
	// Other records start from their first.
	if err := task.Put(context.Background(), values(1)); err != nil {
		t.Fatal(err)
	}
	if got := srv.taken[len(srv.taken)-1]; got != `[{"i":0}]` {
		t.Fatalf("took %s", got)
	}
}

func TestSinkFailsOnRefusal(t *testing.T) {
	for _, tc := range []struct {
		status int
		want   string
	}{
		{400, `the server refused a batch of 2 records: 400 Bad Request: {"error":"field i is not allowed"}`},
		{401, "401 Unauthorized"},
		{302, "302 Found to /elsewhere: set http.url to the final URL"},
	} {
		srv := newServer(t, `{"error":"field i is not allowed"}`, tc.status)
		task := startSink(t, srv.URL, nil)
		err := task.Put(context.Background(), values(3))
		var re *connect.RetriableError
		if err == nil || errors.As(err, &re) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%d: %v, want a failure with %q", tc.status, err, tc.want)
		}
	}
}

func TestSinkRetriesConnectionErrors(t *testing.T) {
	srv := httptest.NewServer(nethttp.NotFoundHandler())
	url := srv.URL
	srv.Close()
	task := startSink(t, url, map[string]string{keyFormat: formatLines})
	var re *connect.RetriableError
	if err := task.Put(context.Background(), values(1)); !errors.As(err, &re) {
		t.Fatalf("a refused connection: %v, want a retriable error", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := task.Put(ctx, values(1)); !errors.Is(err, context.Canceled) {
		t.Fatalf("a cancelled put: %v", err)
	}
}

func TestSinkSendsJSONLines(t *testing.T) {
	srv := newServer(t, "")
	task := startSink(t, srv.URL+"/in", map[string]string{keyFormat: formatLines, keyBatchSize: "10"})
	if err := task.Put(context.Background(), values(2)); err != nil {
		t.Fatal(err)
	}
	if got := srv.taken; len(got) != 1 || got[0] != "{\"i\":0}\n{\"i\":1}\n" || srv.requests[0].Header.Get("Content-Type") != "application/x-ndjson" {
		t.Fatalf("took %q with %v", got, srv.requests[0].Header)
	}
}
