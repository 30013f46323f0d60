package connect

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"runtime/debug"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kgo"
)

// WorkerOptions are what a worker needs beyond its config.
type WorkerOptions struct {
	// Registry holds the plugins; nil is NewRegistry() (converters only).
	Registry *Registry
	Logger   *slog.Logger
	// Metrics is where the worker's collectors go; nil: a registry of its
	// own (served at /metrics either way).
	Metrics *prometheus.Registry
	// ClientOpts are added to every franz-go client the worker makes
	// (tests add logging or SASL here).
	ClientOpts []kgo.Opt
}

// worker runs tasks: it builds them from their plugin, runs each in a
// goroutine of its own, restarts failed ones when asked, and reports
// their states. Herders decide which tasks run where.
type worker struct {
	id       string // the advertised REST URL's host:port, as Kafka's worker_id
	cfg      Config
	reg      *Registry
	log      *slog.Logger
	metrics  *metrics
	promReg  *prometheus.Registry
	client   []kgo.Opt // seed brokers and the caller's options
	offsets  offsetStore
	dlq      *kgo.Client
	onStatus func(TaskID, TaskStatus)

	mu struct {
		sync.Mutex
		tasks  map[TaskID]*taskRunner
		closed bool
	}
}

func newWorker(cfg Config, opts WorkerOptions, id string) (*worker, error) {
	if opts.Registry == nil {
		opts.Registry = NewRegistry()
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.Metrics == nil {
		opts.Metrics = prometheus.NewRegistry()
	}
	m, err := newMetrics(opts.Metrics)
	if err != nil {
		return nil, err
	}
	w := &worker{
		id: id, cfg: cfg, reg: opts.Registry, log: opts.Logger.With("worker", id), metrics: m, promReg: opts.Metrics,
		client: append([]kgo.Opt{kgo.SeedBrokers(cfg.List(WorkerBootstrapServers)...)}, opts.ClientOpts...),
	}
	w.mu.tasks = map[TaskID]*taskRunner{}
	w.dlq, err = kgo.NewClient(append(append([]kgo.Opt(nil), w.client...), kgo.AllowAutoTopicCreation())...)
	if err != nil {
		return nil, err
	}
	return w, nil
}

// kafkaOpts returns the options for a new client, with the prefixed
// (producer. or consumer.) client.id of Kafka's clients.
func (w *worker) kafkaOpts(extra ...kgo.Opt) []kgo.Opt {
	return append(append([]kgo.Opt(nil), w.client...), extra...)
}

// startTask starts a task; a task of that id already running is stopped
// first.
func (w *worker) startTask(id TaskID, plugin *Plugin, connCfg, taskCfg Config, target TargetState) {
	w.stopTask(id)
	r := &taskRunner{w: w, id: id, plugin: plugin, connCfg: connCfg, taskCfg: taskCfg, done: make(chan struct{}), wake: make(chan struct{}, 1),
		log: w.log.With("connector", id.Connector, "task", id.Task)}
	r.target.Store(string(target))
	ctx, cancel := context.WithCancel(context.Background())
	r.cancel = cancel
	w.mu.Lock()
	if w.mu.closed {
		w.mu.Unlock()
		cancel()
		return
	}
	w.mu.tasks[id] = r
	w.mu.Unlock()
	r.setStatus(StateUnassigned, "")
	go r.run(ctx)
}

// stopTask stops a task and waits for it (at most the shutdown timeout).
func (w *worker) stopTask(id TaskID) {
	w.mu.Lock()
	r := w.mu.tasks[id]
	delete(w.mu.tasks, id)
	w.mu.Unlock()
	if r == nil {
		return
	}
	r.stop(w.cfg.Millis(WorkerShutdownTimeout))
	w.metrics.forgetTask(id)
}

// setTarget pauses or resumes a connector's tasks on this worker.
func (w *worker) setTarget(connector string, target TargetState) {
	for _, r := range w.tasksOf(connector) {
		r.target.Store(string(target))
		r.poke()
	}
}

func (w *worker) tasksOf(connector string) []*taskRunner {
	w.mu.Lock()
	defer w.mu.Unlock()
	var out []*taskRunner
	for id, r := range w.mu.tasks {
		if id.Connector == connector {
			out = append(out, r)
		}
	}
	return out
}

func (w *worker) runningTasks() []TaskID {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := make([]TaskID, 0, len(w.mu.tasks))
	for id := range w.mu.tasks {
		out = append(out, id)
	}
	return out
}

func (w *worker) taskStatus(id TaskID) (TaskStatus, bool) {
	w.mu.Lock()
	r := w.mu.tasks[id]
	w.mu.Unlock()
	if r == nil {
		return TaskStatus{}, false
	}
	return r.status(), true
}

// close stops every task.
func (w *worker) close() {
	w.stopAll()
	w.dlq.Close()
}

// stopAll stops every task, each committing its offsets, and refuses
// new ones. The stores, the status topic and the group must outlive it.
func (w *worker) stopAll() {
	w.mu.Lock()
	w.mu.closed = true
	ids := make([]TaskID, 0, len(w.mu.tasks))
	for id := range w.mu.tasks {
		ids = append(ids, id)
	}
	w.mu.Unlock()
	var wg sync.WaitGroup
	for _, id := range ids {
		wg.Add(1)
		go func() { defer wg.Done(); w.stopTask(id) }()
	}
	wg.Wait()
}

// taskRunner runs one task in its goroutine: start, loop, stop; again
// after a backoff when it fails and auto restart is on.
type taskRunner struct {
	w       *worker
	id      TaskID
	plugin  *Plugin
	connCfg Config // the connector's config: converters, transforms, errors
	taskCfg Config // the task's own, from the connector's TaskConfigs
	log     *slog.Logger

	target atomicString  // TargetState
	wake   chan struct{} // poked when target changes
	cancel context.CancelFunc
	done   chan struct{}

	mu struct {
		sync.Mutex
		status TaskStatus
	}
}

func (r *taskRunner) poke() {
	select {
	case r.wake <- struct{}{}:
	default:
	}
}

func (r *taskRunner) paused() bool { return TargetState(r.target.Load()) != TargetStarted }

func (r *taskRunner) status() TaskStatus {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.mu.status
}

func (r *taskRunner) setStatus(state, trace string) {
	st := TaskStatus{ID: r.id.Task, State: state, WorkerID: r.w.id, Trace: trace}
	r.mu.Lock()
	changed := r.mu.status != st
	r.mu.status = st
	r.mu.Unlock()
	if !changed {
		return
	}
	r.w.metrics.setTaskState(r.id, state)
	if r.w.onStatus != nil {
		r.w.onStatus(r.id, st)
	}
}

// stop cancels the task and waits up to timeout for it.
func (r *taskRunner) stop(timeout time.Duration) {
	r.cancel()
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case <-r.done:
	case <-t.C:
		r.log.Warn("task did not stop within task.shutdown.graceful.timeout.ms; abandoning it", "timeout", timeout)
	}
}

func (r *taskRunner) run(ctx context.Context) {
	defer close(r.done)
	backoff := r.connCfg.Millis(KeyAutoRestartBackoff)
	for {
		started := time.Now()
		err := r.runOnce(ctx)
		if ctx.Err() != nil {
			return
		}
		if err == nil {
			err = errors.New("the task ended by itself")
		}
		r.w.metrics.errs.WithLabelValues(r.id.Connector, itoa(r.id.Task), "task").Inc()
		r.log.Error("task failed", "err", err)
		r.setStatus(StateFailed, trace(err))
		if !r.connCfg.Bool(KeyAutoRestart) {
			<-ctx.Done()
			return
		}
		// A task that ran well for a while (a minute, or the longest
		// backoff if that is longer) starts over from the first backoff.
		longest := r.connCfg.Millis(KeyAutoRestartBackoffMax)
		if time.Since(started) > max(longest, time.Minute) {
			backoff = r.connCfg.Millis(KeyAutoRestartBackoff)
		}
		r.log.Info("restarting the failed task after a backoff", "backoff", backoff)
		t := time.NewTimer(backoff)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
		backoff = min(2*backoff, longest)
		r.w.metrics.restarts.WithLabelValues(r.id.Connector, itoa(r.id.Task)).Inc()
		r.setStatus(StateRestarting, "")
	}
}

// runOnce runs the task until ctx ends (nil) or it fails.
func (r *taskRunner) runOnce(ctx context.Context) (err error) {
	defer func() {
		// A panic in a plugin fails its task, not the worker.
		if p := recover(); p != nil {
			err = fmt.Errorf("panic in %s: %v\n%s", r.plugin.Class, p, debug.Stack())
		}
	}()
	connCfg, err := resolveSecrets(r.connCfg)
	if err != nil {
		return err
	}
	conf, err := resolveSecrets(r.taskCfg)
	if err != nil {
		return err
	}
	pipe, err := newPipeline(r, connCfg)
	if err != nil {
		return err
	}
	switch r.plugin.Type {
	case SourcePlugin:
		return runSource(ctx, r, pipe, conf)
	case SinkPlugin:
		return runSink(ctx, r, pipe, conf)
	}
	return fmt.Errorf("connect: %s is not a connector", r.plugin.Class)
}

// waitUntilRunnable blocks while the task is paused; it reports PAUSED
// and RUNNING as the target changes. It returns false when ctx ends.
func (r *taskRunner) waitUntilRunnable(ctx context.Context, onPause, onResume func()) bool {
	if !r.paused() {
		return ctx.Err() == nil
	}
	if onPause != nil {
		onPause()
	}
	r.setStatus(StatePaused, "")
	for r.paused() {
		select {
		case <-ctx.Done():
			return false
		case <-r.wake:
		}
	}
	if onResume != nil {
		onResume()
	}
	r.setStatus(StateRunning, "")
	return true
}

// trace is the text of a failure as status shows it (Kafka shows the
// Java stack trace).
func trace(err error) string {
	var b strings.Builder
	b.WriteString(err.Error())
	for e := errors.Unwrap(err); e != nil; e = errors.Unwrap(e) {
		fmt.Fprintf(&b, "\nCaused by: %T: %v", e, e)
	}
	return b.String()
}

// workerID is the host:port of a REST URL.
func workerID(url string) string {
	hp := strings.TrimPrefix(strings.TrimPrefix(url, "http://"), "https://")
	if h, p, err := net.SplitHostPort(strings.TrimSuffix(hp, "/")); err == nil {
		return net.JoinHostPort(h, p)
	}
	return hp
}
