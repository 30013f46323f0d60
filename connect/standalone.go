package connect

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"sync"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// localHerder keeps connectors in memory and runs all their tasks on its
// one worker: standalone mode. Configs come from files at start and from
// the REST API; they are not stored (as in Kafka Connect's standalone
// mode); source offsets are (offset.storage.file.filename, or the offsets
// topic).
type localHerder struct {
	w *worker

	mu struct {
		sync.Mutex
		conns map[string]*localConnector
	}
}

type localConnector struct {
	cfg    Config // as given: secret references unresolved
	plugin *Plugin
	target TargetState
	tasks  []Config
	state  ConnectorState
}

func newLocalHerder(w *worker) *localHerder {
	h := &localHerder{w: w}
	h.mu.conns = map[string]*localConnector{}
	return h
}

func (h *localHerder) WorkerID() string   { return h.w.id }
func (h *localHerder) Plugins() []*Plugin { return h.w.reg.Plugins() }

func (h *localHerder) Connectors(context.Context) ([]string, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	names := make([]string, 0, len(h.mu.conns))
	for n := range h.mu.conns {
		names = append(names, n)
	}
	sort.Strings(names)
	return names, nil
}

func (h *localHerder) get(name string) (*localConnector, error) {
	c, ok := h.mu.conns[name]
	if !ok {
		return nil, notFound(name)
	}
	return c, nil
}

func (h *localHerder) ConnectorInfo(_ context.Context, name string) (ConnectorInfo, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	c, err := h.get(name)
	if err != nil {
		return ConnectorInfo{}, err
	}
	return h.infoLocked(name, c), nil
}

func (h *localHerder) infoLocked(name string, c *localConnector) ConnectorInfo {
	ids := make([]TaskID, len(c.tasks))
	for i := range c.tasks {
		ids[i] = TaskID{name, i}
	}
	return ConnectorInfo{Name: name, Config: masked(c.cfg, c.plugin.Config), Tasks: ids, Type: c.plugin.Type}
}

func (h *localHerder) ConnectorStatus(_ context.Context, name string) (ConnectorStatus, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	c, err := h.get(name)
	if err != nil {
		return ConnectorStatus{}, err
	}
	st := ConnectorStatus{Name: name, Connector: c.state, Tasks: []TaskStatus{}, Type: c.plugin.Type}
	for i := range c.tasks {
		ts, ok := h.w.taskStatus(TaskID{name, i})
		if !ok {
			ts = TaskStatus{ID: i, State: StateUnassigned, WorkerID: h.w.id}
		}
		st.Tasks = append(st.Tasks, ts)
	}
	return st, nil
}

func (h *localHerder) Validate(_ context.Context, cfg Config) (ConfigInfos, error) {
	infos, _ := validateConfig(h.w.reg, cfg)
	return infos, nil
}

func (h *localHerder) PutConnectorConfig(_ context.Context, name string, cfg Config, allowReplace bool) (ConnectorInfo, bool, error) {
	cfg = cfg.Clone()
	if cfg[KeyName] == "" {
		cfg[KeyName] = name
	}
	if cfg[KeyName] != name {
		return ConnectorInfo{}, false, newHerderError(ErrBadRequest, "Connector name configuration (%s) doesn't match connector name in the URL (%s)", cfg[KeyName], name)
	}
	infos, plugin := validateConfig(h.w.reg, cfg)
	if infos.ErrorCount > 0 {
		return ConnectorInfo{}, false, invalidConfigError(infos)
	}
	tasks, err := taskConfigsFor(plugin, cfg)
	if err != nil {
		return ConnectorInfo{}, false, newHerderError(ErrBadRequest, "%v", err)
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	old, exists := h.mu.conns[name]
	if exists && !allowReplace {
		return ConnectorInfo{}, false, newHerderError(ErrConflict, "Connector %s already exists", name)
	}
	target := TargetStarted
	if exists {
		target = old.target
		h.stopTasksLocked(name, old)
	}
	c := &localConnector{cfg: cfg, plugin: plugin, target: target, tasks: tasks}
	if target == TargetStopped {
		c.tasks = nil
	}
	h.mu.conns[name] = c
	h.startLocked(name, c)
	return h.infoLocked(name, c), !exists, nil
}

// startLocked starts a connector's tasks as its target says.
func (h *localHerder) startLocked(name string, c *localConnector) {
	c.state = ConnectorState{State: connectorState(c.target), WorkerID: h.w.id}
	if c.target == TargetStopped {
		return
	}
	for i, t := range c.tasks {
		h.w.startTask(TaskID{name, i}, c.plugin, c.cfg, t, c.target)
	}
}

func connectorState(t TargetState) string {
	switch t {
	case TargetPaused:
		return StatePaused
	case TargetStopped:
		return StateStopped
	}
	return StateRunning
}

func (h *localHerder) stopTasksLocked(name string, c *localConnector) {
	var wg sync.WaitGroup
	for i := range c.tasks {
		wg.Add(1)
		go func() { defer wg.Done(); h.w.stopTask(TaskID{name, i}) }()
	}
	wg.Wait()
}

func (h *localHerder) DeleteConnector(_ context.Context, name string) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	c, err := h.get(name)
	if err != nil {
		return err
	}
	h.stopTasksLocked(name, c)
	delete(h.mu.conns, name)
	return nil
}

func (h *localHerder) TaskConfigs(_ context.Context, name string) ([]TaskInfo, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	c, err := h.get(name)
	if err != nil {
		return nil, err
	}
	out := make([]TaskInfo, len(c.tasks))
	for i, t := range c.tasks {
		out[i] = TaskInfo{ID: TaskID{name, i}, Config: masked(t, c.plugin.Config)}
	}
	return out, nil
}

func (h *localHerder) TaskStatus(_ context.Context, id TaskID) (TaskStatus, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	c, err := h.get(id.Connector)
	if err != nil {
		return TaskStatus{}, err
	}
	if id.Task < 0 || id.Task >= len(c.tasks) {
		return TaskStatus{}, newHerderError(ErrNotFound, "Task %s not found", id)
	}
	ts, ok := h.w.taskStatus(id)
	if !ok {
		ts = TaskStatus{ID: id.Task, State: StateUnassigned, WorkerID: h.w.id}
	}
	return ts, nil
}

func (h *localHerder) RestartTask(_ context.Context, id TaskID) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	c, err := h.get(id.Connector)
	if err != nil {
		return err
	}
	if id.Task < 0 || id.Task >= len(c.tasks) {
		return newHerderError(ErrNotFound, "Task %s not found", id)
	}
	h.w.metrics.restarts.WithLabelValues(id.Connector, strconv.Itoa(id.Task)).Inc()
	h.w.startTask(id, c.plugin, c.cfg, c.tasks[id.Task], c.target)
	return nil
}

func (h *localHerder) RestartConnector(_ context.Context, name string, includeTasks, onlyFailed bool) (ConnectorStatus, error) {
	h.mu.Lock()
	c, err := h.get(name)
	if err != nil {
		h.mu.Unlock()
		return ConnectorStatus{}, err
	}
	st := ConnectorStatus{Name: name, Connector: c.state, Tasks: []TaskStatus{}, Type: c.plugin.Type}
	if !onlyFailed || c.state.State == StateFailed {
		st.Connector.State = StateRestarting
	}
	var restart []int
	for i := range c.tasks {
		ts, ok := h.w.taskStatus(TaskID{name, i})
		if !ok {
			ts = TaskStatus{ID: i, State: StateUnassigned, WorkerID: h.w.id}
		}
		if includeTasks && (!onlyFailed || ts.State == StateFailed) {
			ts.State = StateRestarting
			ts.Trace = ""
			restart = append(restart, i)
		}
		st.Tasks = append(st.Tasks, ts)
	}
	// The connector itself has nothing running here but its task
	// configs: restarting it regenerates them.
	if st.Connector.State == StateRestarting && c.target != TargetStopped {
		if tasks, err := taskConfigsFor(c.plugin, c.cfg); err != nil {
			c.state = ConnectorState{State: StateFailed, WorkerID: h.w.id, Trace: trace(err)}
		} else if len(tasks) != len(c.tasks) {
			h.stopTasksLocked(name, c)
			c.tasks = tasks
			h.startLocked(name, c)
			restart = nil
		} else {
			c.tasks = tasks
			c.state = ConnectorState{State: connectorState(c.target), WorkerID: h.w.id}
		}
	}
	for _, i := range restart {
		h.w.metrics.restarts.WithLabelValues(name, strconv.Itoa(i)).Inc()
		h.w.startTask(TaskID{name, i}, c.plugin, c.cfg, c.tasks[i], c.target)
	}
	h.mu.Unlock()
	return st, nil
}

func (h *localHerder) SetTargetState(_ context.Context, name string, target TargetState) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	c, err := h.get(name)
	if err != nil {
		return err
	}
	if c.target == target {
		return nil
	}
	prev := c.target
	c.target = target
	switch {
	case target == TargetStopped:
		h.stopTasksLocked(name, c)
		c.tasks = nil
		c.state = ConnectorState{State: StateStopped, WorkerID: h.w.id}
	case prev == TargetStopped:
		tasks, err := taskConfigsFor(c.plugin, c.cfg)
		if err != nil {
			c.state = ConnectorState{State: StateFailed, WorkerID: h.w.id, Trace: trace(err)}
			return nil
		}
		c.tasks = tasks
		h.startLocked(name, c)
	default:
		c.state = ConnectorState{State: connectorState(target), WorkerID: h.w.id}
		h.w.setTarget(name, target)
	}
	return nil
}

func (h *localHerder) Offsets(ctx context.Context, name string) (ConnectorOffsets, error) {
	h.mu.Lock()
	c, err := h.get(name)
	h.mu.Unlock()
	if err != nil {
		return ConnectorOffsets{}, err
	}
	return connectorOffsets(ctx, h.w, name, c.plugin, c.cfg)
}

func (h *localHerder) AlterOffsets(ctx context.Context, name string, offs ConnectorOffsets) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	c, err := h.get(name)
	if err != nil {
		return err
	}
	if c.target != TargetStopped {
		return newHerderError(ErrBadRequest, "Connectors must be in the STOPPED state before their offsets can be modified. This can be done for the specified connector by issuing a 'PUT' request to the '/connectors/%s/stop' endpoint", name)
	}
	return alterOffsets(ctx, h.w, name, c.plugin, offs, false)
}

func (h *localHerder) ResetOffsets(ctx context.Context, name string) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	c, err := h.get(name)
	if err != nil {
		return err
	}
	if c.target != TargetStopped {
		return newHerderError(ErrBadRequest, "Connectors must be in the STOPPED state before their offsets can be modified. This can be done for the specified connector by issuing a 'PUT' request to the '/connectors/%s/stop' endpoint", name)
	}
	cur, err := connectorOffsets(ctx, h.w, name, c.plugin, c.cfg)
	if err != nil {
		return err
	}
	return alterOffsets(ctx, h.w, name, c.plugin, cur, true)
}

// connectorOffsets reads a connector's offsets: a source's from the
// offset store, a sink's from its consumer group.
func connectorOffsets(ctx context.Context, w *worker, name string, plugin *Plugin, cfg Config) (ConnectorOffsets, error) {
	if plugin.Type == SourcePlugin {
		if err := w.offsets.Refresh(ctx); err != nil {
			return ConnectorOffsets{}, err
		}
		offs, err := w.offsets.List(name)
		if err != nil {
			return ConnectorOffsets{}, err
		}
		return ConnectorOffsets{Offsets: append([]SourceOffset{}, offs...)}, nil
	}
	cl, err := kgo.NewClient(w.kafkaOpts()...)
	if err != nil {
		return ConnectorOffsets{}, err
	}
	defer cl.Close()
	resp, err := kadm.NewClient(cl).FetchOffsets(ctx, "connect-"+name)
	if err == nil {
		err = resp.Error()
	}
	if err != nil {
		return ConnectorOffsets{}, fmt.Errorf("reading the offsets of group connect-%s: %w", name, err)
	}
	out := ConnectorOffsets{Offsets: []SourceOffset{}}
	resp.Each(func(o kadm.OffsetResponse) {
		out.Offsets = append(out.Offsets, SourceOffset{
			Partition: map[string]any{"kafka_topic": o.Topic, "kafka_partition": int64(o.Partition)},
			Offset:    map[string]any{"kafka_offset": o.At},
		})
	})
	sortOffsets(out.Offsets)
	return out, nil
}

// alterOffsets writes (or with reset, deletes) a connector's offsets.
func alterOffsets(ctx context.Context, w *worker, name string, plugin *Plugin, offs ConnectorOffsets, reset bool) error {
	if plugin.Type == SourcePlugin {
		put := make([]SourceOffset, 0, len(offs.Offsets))
		for _, o := range offs.Offsets {
			if o.Partition == nil {
				return newHerderError(ErrBadRequest, "Source partitions may not be null")
			}
			if reset {
				o.Offset = nil
			}
			put = append(put, o)
		}
		return w.offsets.Put(ctx, name, put)
	}
	commit := kadm.Offsets{}
	var del []kadm.TopicsSet
	for _, o := range offs.Offsets {
		topic, _ := o.Partition["kafka_topic"].(string)
		part, ok := asInt64(o.Partition["kafka_partition"])
		if topic == "" || !ok {
			return newHerderError(ErrBadRequest, "Sink partitions need kafka_topic (a string) and kafka_partition (an integer), got %v", o.Partition)
		}
		if reset || o.Offset == nil {
			del = append(del, kadm.TopicsSet{topic: {int32(part): {}}})
			continue
		}
		at, ok := asInt64(o.Offset["kafka_offset"])
		if !ok || at < 0 {
			return newHerderError(ErrBadRequest, "Sink offsets need kafka_offset (an integer, 0 or more), got %v", o.Offset)
		}
		commit.Add(kadm.Offset{Topic: topic, Partition: int32(part), At: at, LeaderEpoch: -1})
	}
	cl, err := kgo.NewClient(w.kafkaOpts()...)
	if err != nil {
		return err
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	group := "connect-" + name
	if len(commit) > 0 {
		resp, err := adm.CommitOffsets(ctx, group, commit)
		if err == nil {
			err = resp.Error()
		}
		if err != nil {
			return fmt.Errorf("committing offsets of group %s: %w", group, err)
		}
	}
	for _, ts := range del {
		resp, err := adm.DeleteOffsets(ctx, group, ts)
		if err == nil {
			err = resp.Error()
		}
		if err != nil {
			return fmt.Errorf("deleting offsets of group %s: %w", group, err)
		}
	}
	return nil
}

func asInt64(v any) (int64, bool) {
	switch n := v.(type) {
	case int64:
		return n, true
	case int:
		return int64(n), true
	case float64:
		if n == float64(int64(n)) {
			return int64(n), true
		}
	}
	return 0, false
}

// rawConfig returns a connector's config as given, for PATCH to merge
// into.
func (h *localHerder) rawConfig(_ context.Context, name string) (Config, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	c, err := h.get(name)
	if err != nil {
		return nil, err
	}
	return c.cfg.Clone(), nil
}
