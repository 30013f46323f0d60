package connect

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// Worker is a running Connect worker: its REST API, its herder and the
// tasks it runs. Close stops it.
type Worker struct {
	w      *worker
	herder Herder
	srv    *http.Server
	ln     net.Listener
	url    string
	ready  atomic.Bool
	closer []func()

	closeOnce sync.Once
	served    chan struct{}
}

// URL is the base URL of the worker's REST API.
func (w *Worker) URL() string { return w.url }

// Herder is the worker's herder, what the REST API calls.
func (w *Worker) Herder() Herder { return w.herder }

// StartStandalone starts a standalone worker: the REST API on the first
// of listeners, source offsets in offset.storage.file.filename (or the
// offsets topic when that is empty), and the connectors given, each
// created as POST /connectors would. A connector config that does not
// validate stops the start with an error naming the keys.
func StartStandalone(ctx context.Context, cfg Config, connectors []Config, opts WorkerOptions) (*Worker, error) {
	cfg, errs := ParseWorkerConfig(cfg)
	if len(errs) > 0 {
		return nil, fmt.Errorf("%w: %v", ErrInvalidConfig, errors.Join(keyErrs(errs)...))
	}
	W, err := listen(cfg)
	if err != nil {
		return nil, err
	}
	ok := false
	defer func() {
		if !ok {
			W.Close()
		}
	}()
	if W.w, err = newWorker(cfg, opts, workerID(W.url)); err != nil {
		return nil, err
	}
	W.closer = append(W.closer, W.w.close)
	if path := strings.TrimSpace(cfg[WorkerOffsetsFile]); path != "" {
		W.w.offsets, err = openFileOffsetStore(path)
	} else {
		W.w.offsets, err = openTopicOffsetStore(ctx, W.w.kafkaOpts(), topicSpec{cfg[WorkerOffsetsTopic], 25, int16(cfg.Int(WorkerOffsetsRF))})
	}
	if err != nil {
		return nil, err
	}
	// The closers run last first: the tasks stop, committing their
	// offsets, before the store closes.
	W.closer = append(W.closer, func() { _ = W.w.offsets.Close() }, W.w.stopAll)
	h := newLocalHerder(W.w)
	W.herder = h
	clusterID, err := kafkaClusterID(ctx, W.w)
	if err != nil {
		return nil, err
	}
	W.serve(newRESTHandler(h, W.w.promReg, clusterID, W.ready.Load))
	for _, c := range connectors {
		name := strings.TrimSpace(c[KeyName])
		if _, _, err := h.PutConnectorConfig(ctx, name, c, false); err != nil {
			return nil, fmt.Errorf("connector %s: %w", name, err)
		}
	}
	W.ready.Store(true)
	ok = true
	return W, nil
}

// listen opens the REST listener.
func listen(cfg Config) (*Worker, error) {
	ls := cfg.List(WorkerListeners)
	if len(ls) == 0 {
		return nil, fmt.Errorf("%w: %s is empty", ErrInvalidConfig, WorkerListeners)
	}
	addr, ok := strings.CutPrefix(ls[0], "http://")
	if !ok {
		return nil, fmt.Errorf("%w: %s: %s: only http:// listeners are supported", ErrInvalidConfig, WorkerListeners, ls[0])
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("connect: the REST API cannot listen on %s (%v); set %s to a free port", addr, err, WorkerListeners)
	}
	W := &Worker{ln: ln, served: make(chan struct{})}
	W.url = strings.TrimRight(strings.TrimSpace(cfg[WorkerAdvertisedURL]), "/")
	if W.url == "" {
		host, port, _ := net.SplitHostPort(ln.Addr().String())
		if ip := net.ParseIP(host); ip == nil || ip.IsUnspecified() {
			host = "localhost"
		}
		W.url = "http://" + net.JoinHostPort(host, port)
	}
	return W, nil
}

func (w *Worker) serve(h http.Handler) {
	w.srv = &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		defer close(w.served)
		_ = w.srv.Serve(w.ln)
	}()
}

// Close stops the REST API and every task (each gets
// task.shutdown.graceful.timeout.ms to finish), and waits for them.
func (w *Worker) Close() {
	w.closeOnce.Do(func() {
		if w.srv != nil {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			_ = w.srv.Shutdown(ctx)
			cancel()
			<-w.served
		} else {
			_ = w.ln.Close()
		}
		for i := len(w.closer) - 1; i >= 0; i-- {
			w.closer[i]()
		}
	})
}

// kafkaClusterID asks the brokers for the cluster id (GET / reports it);
// it is also the first sign that bootstrap.servers is right.
func kafkaClusterID(ctx context.Context, w *worker) (string, error) {
	cl, err := kgo.NewClient(w.kafkaOpts()...)
	if err != nil {
		return "", err
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	md, err := kadm.NewClient(cl).BrokerMetadata(ctx)
	if err != nil {
		return "", fmt.Errorf("connect: cannot reach the brokers at %s (%v); check %s", w.cfg[WorkerBootstrapServers], err, WorkerBootstrapServers)
	}
	return md.Cluster, nil
}
