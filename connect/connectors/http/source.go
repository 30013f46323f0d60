package http

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	nethttp "net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/runnel-io/runnel/connect"
)

const (
	keyListener     = "http.listener"
	keyListenerFile = "http.listener.file"
	keyPath         = "http.path"
	keyTopic        = "kafka.topic"
	keyKeyField     = "key.field"
	keyMaxInflight  = "http.max.inflight.records"
	keyMaxBody      = "http.max.body.bytes"
	keyAckTimeout   = "http.ack.timeout.ms"
)

func sourcePlugin() connect.Plugin {
	return connect.Plugin{
		Class:   "io.runnel.connect.http.HttpSourceConnector",
		Aliases: []string{"HttpSource", "HttpSourceConnector", "http-source"},
		Type:    connect.SourcePlugin,
		Version: connect.Version,
		Doc:     "Serves HTTP: each POSTed JSON object becomes a record; the answer comes once the brokers stored them.",
		Config: connect.NewConfigDef(
			connect.ConfigKey{Name: keyTopic, Type: connect.TypeString, Required: true, Importance: connect.High, Group: "HTTP",
				Doc: "The topic to write to.", Check: connect.NonEmpty},
			connect.ConfigKey{Name: keyListener, Type: connect.TypeString, Default: "127.0.0.1:8080", Importance: connect.High, Group: "HTTP",
				Doc: "host:port to listen on; port 0 picks a free one (see http.listener.file). Use 0.0.0.0:port to accept other hosts.",
				Check: func(v string) error {
					if _, _, err := net.SplitHostPort(v); err != nil {
						return fmt.Errorf("not host:port: %v", err)
					}
					return nil
				}},
			connect.ConfigKey{Name: keyListenerFile, Type: connect.TypeString, Importance: connect.Low, Group: "HTTP",
				Doc: "A file to write the bound host:port into once listening (removed when the task stops); empty: none."},
			connect.ConfigKey{Name: keyPath, Type: connect.TypeString, Default: "/", Importance: connect.Medium, Group: "HTTP",
				Doc: "The path that takes POSTs; others answer 404.",
				Check: func(v string) error {
					if !strings.HasPrefix(v, "/") {
						return errors.New("must start with /")
					}
					return nil
				}},
			connect.ConfigKey{Name: keyKeyField, Type: connect.TypeString, Importance: connect.Medium, Group: "HTTP",
				Doc: "A top-level field whose value becomes the record key (records without it have a null key); empty: null keys. " +
					"Several fields, comma-separated, make a string key of their values joined by ':' (\"store_id,product_id\" -> \"s1:p2\"); a record lacking one has a null key."},
			connect.ConfigKey{Name: keyMaxInflight, Type: connect.TypeInt, Default: "10000", Importance: connect.Low, Group: "HTTP",
				Doc: "The most records accepted and not yet stored; a request that would exceed it answers 429.", Check: connect.AtLeast(1)},
			connect.ConfigKey{Name: keyMaxBody, Type: connect.TypeLong, Default: "10485760", Importance: connect.Low, Group: "HTTP",
				Doc: "The largest request body, in bytes; a larger one answers 413.", Check: connect.AtLeast(1)},
			connect.ConfigKey{Name: keyAckTimeout, Type: connect.TypeLong, Default: "30000", Importance: connect.Low, Group: "HTTP",
				Doc: "How long a request waits for its records to be stored, in ms; then it answers 504 (the records may still be stored).", Check: connect.AtLeast(1)},
		),
		NewSourceTask: func() connect.SourceTask { return &sourceTask{} },
	}
}

// errUnavailable answers 503: no Poll took the request.
var errUnavailable = errors.New("the connector is not taking records now (paused, stopping or busy); retry later")

// sourceTask serves HTTP. A handler decodes a request into records and
// queues it; Poll hands queued records to the runtime; Ack counts each
// request's records as the brokers store them and answers the request
// when all are. The source partition is {"path": http.path}; each record's
// offset is {"request": n}, a counter of requests that continues after a
// restart (and how Ack finds a record's request).
//
// Whether the task runs is learnt from Poll, as the runtime says no more:
// a request is queued only while a Poll runs, waiting up to pollWait for
// one to start (between Polls the runtime produces what the last one
// returned, which is quick); Poll returns the queue when it ends, unless
// its context was cancelled (the task is pausing or stopping): then the
// queued requests are refused. So a paused task answers 503 after
// pollWait, and no request is left in the queue without a Poll to take
// it.
type sourceTask struct {
	topic, path  string
	keyFields    []string
	maxInflight  int
	maxBody      int64
	ackTimeout   time.Duration
	listenerFile string
	partition    map[string]any
	log          *slog.Logger

	srv      *nethttp.Server
	served   chan struct{} // closed when Serve returned
	queued   chan struct{} // poked when a request is queued
	stopping chan struct{}
	stopOnce sync.Once

	mu struct {
		sync.Mutex
		polling  bool               // a Poll runs
		started  chan struct{}      // closed when a Poll starts, then replaced
		next     int64              // the number of the next request
		queue    []*request         // accepted, not yet polled
		pending  map[int64]*request // accepted, not yet answered
		inflight int                // records of pending requests not yet acknowledged
	}
}

// request is one POST on its way to the brokers.
type request struct {
	id       int64
	records  []connect.Record // until polled
	left     int              // records not yet acknowledged
	filtered int
	err      error
	done     chan struct{} // closed once every record is acknowledged, or one failed
}

func (t *sourceTask) Start(_ context.Context, cfg connect.Config, tc connect.SourceTaskContext) error {
	t.topic, t.path, t.keyFields = cfg.String(keyTopic), cfg.String(keyPath), connect.SplitList(cfg.String(keyKeyField))
	t.maxInflight, t.maxBody, t.ackTimeout = cfg.Int(keyMaxInflight), cfg.Long(keyMaxBody), cfg.Millis(keyAckTimeout)
	t.listenerFile = cfg.String(keyListenerFile)
	t.log = tc.Logger()
	t.partition = map[string]any{"path": t.path}
	t.queued, t.stopping, t.served = make(chan struct{}, 1), make(chan struct{}), make(chan struct{})
	t.mu.pending = map[int64]*request{}
	t.mu.started = make(chan struct{})
	off, err := tc.Offset(t.partition)
	if err != nil {
		return err
	}
	if n, ok := off["request"].(int64); ok {
		t.mu.next = n + 1
	}

	ln, err := net.Listen("tcp", cfg.String(keyListener))
	if err != nil {
		return fmt.Errorf("listening on %s: %w", cfg.String(keyListener), err)
	}
	addr := ln.Addr().String()
	if t.listenerFile != "" {
		if err := writeFileAtomic(t.listenerFile, addr+"\n"); err != nil {
			ln.Close()
			return fmt.Errorf("writing %s: %w", keyListenerFile, err)
		}
	}
	t.srv = &nethttp.Server{Handler: t, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		defer close(t.served)
		if err := t.srv.Serve(ln); !errors.Is(err, nethttp.ErrServerClosed) {
			t.log.Error("serving HTTP", "err", err)
		}
	}()
	t.log.Info("HTTP source listening", "addr", addr, "path", t.path)
	return nil
}

func writeFileAtomic(path, content string) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), ".http-listener-*")
	if err != nil {
		return err
	}
	if _, err := tmp.WriteString(content); err != nil {
		tmp.Close()
		os.Remove(tmp.Name())
		return err
	}
	if err := tmp.Close(); err != nil {
		os.Remove(tmp.Name())
		return err
	}
	return os.Rename(tmp.Name(), path)
}

// pollWait is how long a request waits for a Poll to take it before it
// answers 503.
const pollWait = time.Second

// Poll returns the records of the requests queued while it waits for
// one.
func (t *sourceTask) Poll(ctx context.Context) ([]connect.Record, error) {
	t.mu.Lock()
	t.mu.polling = true
	close(t.mu.started)
	t.mu.started = make(chan struct{})
	t.mu.Unlock()
	for {
		select {
		case <-t.queued:
		case <-t.stopping:
		case <-ctx.Done():
		}
		select {
		case <-t.stopping:
			t.end(true, true)
			return nil, nil
		default:
		}
		if err := ctx.Err(); err != nil {
			// Cancelled: pausing or stopping. A deadline is only the
			// runtime's next offset flush.
			out, _ := t.end(errors.Is(err, context.Canceled), true)
			return out, nil
		}
		if out, ok := t.end(false, false); ok {
			return out, nil
		}
	}
}

// end ends a Poll: it returns the queued records, or with refuse answers
// the queued requests 503. Unless force, it does not end the Poll if the
// queue is empty, and returns false. The queue is taken or refused under
// the lock that ends the Poll, so no request stays queued without a
// Poll to take it.
func (t *sourceTask) end(refuse, force bool) ([]connect.Record, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if !force && len(t.mu.queue) == 0 {
		return nil, false
	}
	t.mu.polling = false
	var out []connect.Record
	for _, req := range t.mu.queue {
		if refuse {
			t.finishLocked(req, errUnavailable)
		} else {
			out = append(out, req.records...)
		}
		req.records = nil
	}
	t.mu.queue = nil
	return out, true
}

// Ack counts one stored (or filtered, or failed) record of a request.
func (t *sourceTask) Ack(r *connect.Record, err error) {
	id, ok := r.SourceOffset["request"].(int64)
	if !ok {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	req := t.mu.pending[id]
	if req == nil {
		return // answered already: failed, or the task stopped
	}
	switch {
	case err == nil:
	case errors.Is(err, connect.ErrFiltered):
		req.filtered++
	case errors.Is(err, context.Canceled):
		t.finishLocked(req, errUnavailable) // the task stops with the record in flight
		return
	default:
		t.finishLocked(req, fmt.Errorf("storing a record: %w", err))
		return
	}
	req.left--
	t.mu.inflight--
	if req.left == 0 {
		t.finishLocked(req, nil)
	}
}

// finishLocked answers a request.
func (t *sourceTask) finishLocked(req *request, err error) {
	if _, ok := t.mu.pending[req.id]; !ok {
		return
	}
	delete(t.mu.pending, req.id)
	t.mu.inflight -= req.left
	req.left, req.err = 0, err
	close(req.done)
}

// Stop answers 503 to every request not answered yet, stops the server
// and waits for it.
func (t *sourceTask) Stop() error {
	t.stopOnce.Do(func() {
		close(t.stopping)
		t.mu.Lock()
		t.mu.polling = false
		for _, req := range t.mu.pending {
			t.finishLocked(req, errUnavailable)
		}
		t.mu.queue = nil
		t.mu.Unlock()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := t.srv.Shutdown(ctx); err != nil {
			t.srv.Close()
		}
		<-t.served
		if t.listenerFile != "" {
			os.Remove(t.listenerFile)
		}
	})
	return nil
}

// ServeHTTP takes a POST of JSON to http.path. See the package
// documentation for the answers.
func (t *sourceTask) ServeHTTP(w nethttp.ResponseWriter, r *nethttp.Request) {
	if r.URL.Path != t.path {
		answer(w, nethttp.StatusNotFound, "no such path: POST to "+t.path)
		return
	}
	if r.Method != nethttp.MethodPost {
		w.Header().Set("Allow", nethttp.MethodPost)
		answer(w, nethttp.StatusMethodNotAllowed, "only POST is allowed")
		return
	}
	body, err := io.ReadAll(nethttp.MaxBytesReader(w, r.Body, t.maxBody))
	if err != nil {
		var tooBig *nethttp.MaxBytesError
		if errors.As(err, &tooBig) {
			answer(w, nethttp.StatusRequestEntityTooLarge, fmt.Sprintf("the body is larger than %s (%d bytes)", keyMaxBody, t.maxBody))
			return
		}
		answer(w, nethttp.StatusBadRequest, "reading the body: "+err.Error())
		return
	}
	objs, err := decodeBody(r.Header.Get("Content-Type"), body)
	if errors.Is(err, errUnsupportedType) {
		answer(w, nethttp.StatusUnsupportedMediaType, err.Error())
		return
	}
	if err != nil {
		answer(w, nethttp.StatusBadRequest, err.Error())
		return
	}
	if len(objs) == 0 {
		writeJSON(w, nethttp.StatusOK, map[string]any{"records": 0, "filtered": 0})
		return
	}
	req, status, msg := t.enqueue(r.Context(), objs)
	if status != 0 {
		if status == nethttp.StatusTooManyRequests || status == nethttp.StatusServiceUnavailable {
			w.Header().Set("Retry-After", "1")
		}
		answer(w, status, msg)
		return
	}
	timer := time.NewTimer(t.ackTimeout)
	defer timer.Stop()
	select {
	case <-req.done:
	case <-timer.C:
		answer(w, nethttp.StatusGatewayTimeout, fmt.Sprintf("the records were not stored within %s (%v); they may still be", keyAckTimeout, t.ackTimeout))
		return
	case <-r.Context().Done():
		return // the client left; the records go on
	}
	switch {
	case errors.Is(req.err, errUnavailable):
		w.Header().Set("Retry-After", "1")
		answer(w, nethttp.StatusServiceUnavailable, req.err.Error()+" (some records of the request may have been stored)")
	case req.err != nil:
		answer(w, nethttp.StatusInternalServerError, req.err.Error()+" (some records of the request may have been stored)")
	default:
		writeJSON(w, nethttp.StatusOK, map[string]any{"records": len(objs), "filtered": req.filtered})
	}
}

// enqueue turns objects into records and queues them for Poll, waiting
// up to pollWait for a Poll to run; it returns a status and message
// instead when it cannot.
func (t *sourceTask) enqueue(ctx context.Context, objs []map[string]any) (*request, int, string) {
	var timeout <-chan time.Time
	t.mu.Lock()
	for !t.mu.polling {
		started := t.mu.started
		t.mu.Unlock()
		if timeout == nil {
			timer := time.NewTimer(pollWait)
			defer timer.Stop()
			timeout = timer.C
		}
		select {
		case <-started:
		case <-timeout:
			return nil, nethttp.StatusServiceUnavailable, errUnavailable.Error()
		case <-t.stopping:
			return nil, nethttp.StatusServiceUnavailable, errUnavailable.Error()
		case <-ctx.Done():
			return nil, nethttp.StatusServiceUnavailable, "the client went away"
		}
		t.mu.Lock()
	}
	defer t.mu.Unlock()
	switch {
	case len(objs) > t.maxInflight:
		return nil, nethttp.StatusRequestEntityTooLarge, fmt.Sprintf("the request has %d records; at most %d (%s) fit", len(objs), t.maxInflight, keyMaxInflight)
	case t.mu.inflight+len(objs) > t.maxInflight:
		return nil, nethttp.StatusTooManyRequests, fmt.Sprintf("%d records are waiting to be stored; retry later", t.mu.inflight)
	}
	req := &request{id: t.mu.next, left: len(objs), done: make(chan struct{})}
	t.mu.next++
	offset := map[string]any{"request": req.id}
	req.records = make([]connect.Record, len(objs))
	for i, o := range objs {
		rec := connect.Record{Topic: t.topic, Value: o, SourcePartition: t.partition, SourceOffset: offset}
		rec.Key = keyOf(o, t.keyFields)
		req.records[i] = rec
	}
	t.mu.pending[req.id] = req
	t.mu.inflight += len(objs)
	t.mu.queue = append(t.mu.queue, req)
	select {
	case t.queued <- struct{}{}:
	default:
	}
	return req, 0, ""
}

// keyOf is the record key of o: its field when one is named, the values
// of several joined by ':', or nil.
func keyOf(o map[string]any, fields []string) any {
	if len(fields) == 1 {
		return o[fields[0]]
	}
	var b strings.Builder
	for i, f := range fields {
		v, ok := o[f]
		if !ok || v == nil {
			return nil
		}
		if i > 0 {
			b.WriteByte(':')
		}
		fmt.Fprint(&b, v)
	}
	if len(fields) == 0 {
		return nil
	}
	return b.String()
}

// answer writes an error in the shape of Kafka Connect's REST errors.
func answer(w nethttp.ResponseWriter, status int, msg string) {
	writeJSON(w, status, map[string]any{"error_code": status, "message": msg})
}

func writeJSON(w nethttp.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}
