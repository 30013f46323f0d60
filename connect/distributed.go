package connect

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// distHerder is a worker of a distributed Connect cluster. Connector
// configs, target states, task configs and restart requests live in the
// config topic, states in the status topic, source offsets in the offsets
// topic; every worker reads all three. Any worker takes REST requests and
// writes them to the config topic; the group leader turns connector
// configs into task configs; each worker runs the tasks the leader
// assigned it.
//
// One goroutine (loop) owns starting and stopping tasks; the topic
// readers and the group's callbacks update mu and wake it.
type distHerder struct {
	w           *worker
	url         string
	groupID     string
	configTopic string
	cfgLog      *kafkaLog
	statusLog   *kafkaLog
	group       *kgo.Client
	wake        chan struct{}
	startOffset int64 // restart requests before it happened before this worker started

	mu struct {
		sync.Mutex
		view     *configView
		statuses map[string]statusValue
		assign   assignment
		assigned bool
		// rejoin: the last assignment took tasks away; rejoin once
		// they stopped, so that the leader can hand them on.
		rejoin bool
		// held: the tasks started here and not yet fully stopped.
		held map[TaskID]bool
	}

	// Owned by loop.
	running       map[TaskID]int64 // task → the commit offset of its config
	targets       map[TaskID]TargetState
	connStates    map[string]string
	restartsDone  int64
	lastRebalance time.Time
}

type statusValue struct {
	State      string  `json:"state"`
	Trace      *string `json:"trace"`
	WorkerID   string  `json:"worker_id"`
	Generation int32   `json:"generation"`
}

// StartDistributed starts a worker of the Connect cluster named by
// group.id: it creates the config, offsets and status topics if needed
// (compacted), reads them, joins the group and serves the REST API.
func StartDistributed(ctx context.Context, cfg Config, opts WorkerOptions) (*Worker, error) {
	cfg, errs := ParseWorkerConfig(cfg)
	if len(errs) > 0 {
		return nil, fmt.Errorf("%w: %v", ErrInvalidConfig, errors.Join(keyErrs(errs)...))
	}
	if strings.TrimSpace(cfg[WorkerGroupID]) == "" {
		return nil, fmt.Errorf("%w: %s: distributed mode needs a group id (the name of the Connect cluster)", ErrInvalidConfig, WorkerGroupID)
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
	w := W.w
	h := &distHerder{w: w, url: W.url, groupID: cfg[WorkerGroupID], configTopic: cfg[WorkerConfigTopic], wake: make(chan struct{}, 1),
		running: map[TaskID]int64{}, targets: map[TaskID]TargetState{}, connStates: map[string]string{}}
	h.mu.view = newConfigView()
	h.mu.statuses = map[string]statusValue{}
	h.mu.held = map[TaskID]bool{}

	if w.offsets, err = openTopicOffsetStore(ctx, w.kafkaOpts(), topicSpec{cfg[WorkerOffsetsTopic], 25, int16(cfg.Int(WorkerOffsetsRF))}); err != nil {
		return nil, err
	}
	W.closer = append(W.closer, func() { _ = w.offsets.Close() })
	if h.statusLog, err = openKafkaLog(ctx, w.kafkaOpts(), topicSpec{cfg[WorkerStatusTopic], 5, int16(cfg.Int(WorkerStatusRF))}, h.applyStatus); err != nil {
		return nil, err
	}
	W.closer = append(W.closer, h.statusLog.Close)
	if h.cfgLog, err = openKafkaLog(ctx, w.kafkaOpts(), topicSpec{h.configTopic, 1, int16(cfg.Int(WorkerConfigRF))}, h.applyConfig); err != nil {
		return nil, err
	}
	W.closer = append(W.closer, h.cfgLog.Close)
	h.mu.Lock()
	h.startOffset = h.mu.view.offset
	h.restartsDone = h.startOffset - 1
	h.mu.Unlock()
	w.onStatus = h.reportTask

	h.group, err = kgo.NewClient(w.kafkaOpts(
		kgo.ConsumerGroup(h.groupID),
		kgo.ConsumeTopics(h.configTopic),
		kgo.Balancers(&connectBalancer{h: h}),
		kgo.DisableAutoCommit(),
		kgo.SessionTimeout(cfg.Millis(WorkerSessionTimeout)),
		kgo.HeartbeatInterval(cfg.Millis(WorkerHeartbeat)),
		kgo.RebalanceTimeout(cfg.Millis(WorkerRebalanceTimeout)),
	)...)
	if err != nil {
		return nil, err
	}
	loopCtx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); h.loop(loopCtx) }()
	// Closing (the closers run last first): stop the loop, so that no
	// task starts again; stop the tasks, which commit their offsets and
	// report their state; only then leave the group, so that the others
	// never run a task while it still runs here.
	W.closer = append(W.closer, h.group.Close, w.stopAll, func() { cancel(); <-done })
	// The group client polls nothing, but polling drives its fetch of
	// the (empty) assignment and surfaces fatal group errors.
	go h.pollGroup(loopCtx)

	clusterID, err := kafkaClusterID(ctx, w)
	if err != nil {
		return nil, err
	}
	W.herder = h
	W.serve(newRESTHandler(h, w.promReg, clusterID, W.ready.Load))
	W.ready.Store(true)
	ok = true
	return W, nil
}

func (h *distHerder) pollGroup(ctx context.Context) {
	for ctx.Err() == nil {
		fs := h.group.PollFetches(ctx)
		if fs.IsClientClosed() {
			return
		}
		fs.EachError(func(t string, p int32, err error) {
			if ctx.Err() == nil && !errors.Is(err, context.Canceled) {
				h.w.log.Warn("connect group", "err", err)
			}
		})
	}
}

func (h *distHerder) poke() {
	select {
	case h.wake <- struct{}{}:
	default:
	}
}

func (h *distHerder) applyConfig(r *kgo.Record) {
	h.mu.Lock()
	err := h.mu.view.apply(r)
	h.mu.Unlock()
	if err != nil {
		h.w.log.Warn("skipping a config record", "err", err)
	}
	h.poke()
}

func (h *distHerder) applyStatus(r *kgo.Record) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if r.Value == nil {
		delete(h.mu.statuses, string(r.Key))
		return
	}
	var s statusValue
	if json.Unmarshal(r.Value, &s) == nil {
		h.mu.statuses[string(r.Key)] = s
	}
}

// reportTask writes a task's state to the status topic.
func (h *distHerder) reportTask(id TaskID, st TaskStatus) {
	h.writeStatus(fmt.Sprintf("status-task-%s-%d", id.Connector, id.Task), st.State, st.Trace)
}

func (h *distHerder) writeStatus(key, state, trace string) {
	h.mu.Lock()
	gen := h.mu.assign.Generation
	h.mu.Unlock()
	v := statusValue{State: state, WorkerID: h.w.id, Generation: gen}
	if trace != "" {
		v.Trace = &trace
	}
	b, _ := json.Marshal(v)
	h.statusLog.cl.Produce(context.Background(), &kgo.Record{Topic: h.statusLog.topic, Key: []byte(key), Value: b}, func(_ *kgo.Record, err error) {
		if err != nil {
			h.w.log.Warn("writing a status", "key", key, "err", err)
		}
	})
}

// memberMeta is this worker's join metadata.
func (h *distHerder) memberMeta() memberMeta {
	h.mu.Lock()
	defer h.mu.Unlock()
	// A task counts as this worker's until it has stopped: the leader
	// must not give it to another worker before then.
	tasks := slices.Clone(h.mu.assign.Tasks)
	for id := range h.mu.held {
		if !slices.Contains(tasks, id) {
			tasks = append(tasks, id)
		}
	}
	return memberMeta{URL: h.url, ConfigOffset: h.mu.view.offset, Connectors: h.mu.assign.Connectors, Tasks: tasks}
}

// assigned receives this worker's assignment (from the group's goroutine).
func (h *distHerder) assigned(a assignment) {
	h.mu.Lock()
	h.mu.assign, h.mu.assigned, h.mu.rejoin = a, true, a.Rejoin
	h.mu.Unlock()
	h.w.log.Info("assignment", "leader", a.Leader, "connectors", a.Connectors, "tasks", len(a.Tasks))
	h.poke()
}

// leaderView is what the leader assigns: every connector and every task
// that should run, as of the config topic's end.
func (h *distHerder) leaderView() ([]string, []TaskID, int64) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := h.cfgLog.readToEnd(ctx); err != nil {
		h.w.log.Warn("assigning from a config view that may be behind", "err", err)
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.mu.view.names(), h.mu.view.allTasks(), h.mu.view.offset
}

// loop runs the worker's share: as leader, it writes task configs for
// changed connectors; as member, it starts and stops tasks to match the
// assignment and the config topic, and acts on restart requests.
func (h *distHerder) loop(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-h.wake:
		}
		if err := h.leaderDuties(ctx); err != nil && ctx.Err() == nil {
			h.w.log.Warn("writing task configs", "err", err)
			// Try again soon: the config topic may be unavailable.
			time.AfterFunc(time.Second, h.poke)
		}
		h.reconcile(ctx)
	}
}

func (h *distHerder) leaderDuties(ctx context.Context) error {
	h.mu.Lock()
	leader := h.mu.assigned && h.mu.assign.Leader == h.w.id
	var todo []string
	if leader {
		todo = h.mu.view.needsTasks()
	}
	type job struct {
		name     string
		cfg      Config
		stopped  bool
		tasksFor int64
	}
	var jobs []job
	for _, n := range todo {
		c := h.mu.view.connectors[n]
		jobs = append(jobs, job{n, c.cfg, c.target == TargetStopped, c.cfgOffset})
	}
	h.mu.Unlock()
	if len(jobs) == 0 {
		return nil
	}
	for _, j := range jobs {
		var tasks []Config
		if !j.stopped {
			plugin, err := h.w.reg.Lookup(j.cfg[KeyConnectorClass])
			if err == nil {
				tasks, err = taskConfigsFor(plugin, j.cfg)
			}
			if err != nil {
				h.writeStatus("status-connector-"+j.name, StateFailed, trace(err))
				tasks = nil
			}
		}
		rs, err := taskRecords(j.name, tasks, j.tasksFor)
		if err != nil {
			return err
		}
		if err := h.cfgLog.send(ctx, rs...); err != nil {
			return err
		}
	}
	if err := h.cfgLog.readToEnd(ctx); err != nil {
		return err
	}
	h.group.ForceRebalance()
	return nil
}

// reconcile makes the tasks running here match the assignment.
func (h *distHerder) reconcile(ctx context.Context) {
	h.mu.Lock()
	if !h.mu.assigned {
		h.mu.Unlock()
		return
	}
	a := h.mu.assign
	behind := h.mu.view.offset < a.ConfigOffset
	h.mu.Unlock()
	if behind {
		if err := h.cfgLog.readToEnd(ctx); err != nil {
			return
		}
	}

	type start struct {
		id      TaskID
		plugin  *Plugin
		cfg     Config
		taskCfg Config
		target  TargetState
		commit  int64
	}
	var starts []start
	var stops []TaskID
	retarget := map[string]TargetState{}
	connStates := map[string]string{}

	h.mu.Lock()
	v := h.mu.view
	want := map[TaskID]bool{}
	for _, id := range a.Tasks {
		c, ok := v.connectors[id.Connector]
		if !ok || c.target == TargetStopped || id.Task >= len(c.tasks) {
			continue
		}
		want[id] = true
		commit, running := h.running[id]
		if running && commit == c.commitOffset {
			if h.targets[id] != c.target {
				retarget[id.Connector] = c.target
				h.targets[id] = c.target
			}
			continue
		}
		plugin, err := h.w.reg.Lookup(c.cfg[KeyConnectorClass])
		if err != nil {
			continue
		}
		starts = append(starts, start{id, plugin, c.cfg, c.tasks[id.Task], c.target, c.commitOffset})
	}
	for id := range h.running {
		if !want[id] {
			stops = append(stops, id)
		}
	}
	for _, n := range a.Connectors {
		if c, ok := v.connectors[n]; ok {
			connStates[n] = connectorState(c.target)
		}
	}
	var restarts []restartRequest
	for _, r := range v.restarts {
		if r.offset > h.restartsDone && r.offset >= h.startOffset {
			restarts = append(restarts, r)
			h.restartsDone = r.offset
		}
	}
	v.restarts = nil
	h.mu.Unlock()

	for _, id := range stops {
		h.w.stopTask(id)
		delete(h.running, id)
		delete(h.targets, id)
		h.mu.Lock()
		delete(h.mu.held, id)
		h.mu.Unlock()
	}
	h.mu.Lock()
	rejoin := h.mu.rejoin
	h.mu.rejoin = false
	for _, s := range starts {
		h.mu.held[s.id] = true
	}
	h.mu.Unlock()
	if rejoin {
		// The tasks taken away have stopped: the next round gives
		// them to their new workers.
		h.group.ForceRebalance()
	}
	for _, s := range starts {
		h.w.startTask(s.id, s.plugin, s.cfg, s.taskCfg, s.target)
		h.running[s.id] = s.commit
		h.targets[s.id] = s.target
	}
	for conn, t := range retarget {
		h.w.setTarget(conn, t)
	}
	for n, st := range connStates {
		if h.connStates[n] != st {
			h.connStates[n] = st
			h.writeStatus("status-connector-"+n, st, "")
		}
	}
	for n := range h.connStates {
		if _, ok := connStates[n]; !ok {
			delete(h.connStates, n)
		}
	}
	for _, r := range restarts {
		h.restart(r)
	}
}

// restart acts on a restart request for the tasks that run here.
func (h *distHerder) restart(r restartRequest) {
	for id := range h.running {
		if id.Connector != r.connector {
			continue
		}
		if r.task >= 0 && id.Task != r.task {
			continue
		}
		if r.task < 0 && !r.includeTasks {
			continue
		}
		if r.onlyFailed {
			if st, ok := h.w.taskStatus(id); !ok || st.State != StateFailed {
				continue
			}
		}
		h.w.metrics.restarts.WithLabelValues(id.Connector, itoa(id.Task)).Inc()
		h.mu.Lock()
		c, ok := h.mu.view.connectors[id.Connector]
		var plugin *Plugin
		var cfg, taskCfg Config
		target := TargetStarted
		if ok && id.Task < len(c.tasks) {
			plugin, _ = h.w.reg.Lookup(c.cfg[KeyConnectorClass])
			cfg, taskCfg, target = c.cfg, c.tasks[id.Task], c.target
		}
		h.mu.Unlock()
		if plugin != nil {
			h.w.startTask(id, plugin, cfg, taskCfg, target)
		}
	}
}
