package connect

import (
	"context"
	"fmt"

	"github.com/twmb/franz-go/pkg/kgo"
)

// The Herder methods of a distributed worker: reads come from the
// worker's view of the config and status topics (read to their end
// first, so a worker sees what any other wrote before the request);
// changes are records written to the config topic, which every worker
// applies.

func (h *distHerder) WorkerID() string   { return h.w.id }
func (h *distHerder) Plugins() []*Plugin { return h.w.reg.Plugins() }

// sync reads the config (and with status, the status) topic to its end.
func (h *distHerder) sync(ctx context.Context, status bool) error {
	if err := h.cfgLog.readToEnd(ctx); err != nil {
		return err
	}
	if status {
		return h.statusLog.readToEnd(ctx)
	}
	return nil
}

// connector returns a copy of what the view holds of a connector.
func (h *distHerder) connector(name string) (distConnector, *Plugin, error) {
	h.mu.Lock()
	c, ok := h.mu.view.connectors[name]
	var cp distConnector
	if ok && c.cfg != nil {
		cp = *c
	}
	h.mu.Unlock()
	if !ok || cp.cfg == nil {
		return distConnector{}, nil, notFound(name)
	}
	p, err := h.w.reg.Lookup(cp.cfg[KeyConnectorClass])
	if err != nil {
		return distConnector{}, nil, fmt.Errorf("connector %s: %w", name, err)
	}
	return cp, p, nil
}

func (h *distHerder) Connectors(ctx context.Context) ([]string, error) {
	if err := h.sync(ctx, false); err != nil {
		return nil, err
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []string
	for _, n := range h.mu.view.names() {
		if h.mu.view.connectors[n].cfg != nil {
			out = append(out, n)
		}
	}
	return append([]string{}, out...), nil
}

func (h *distHerder) ConnectorInfo(ctx context.Context, name string) (ConnectorInfo, error) {
	if err := h.sync(ctx, false); err != nil {
		return ConnectorInfo{}, err
	}
	c, p, err := h.connector(name)
	if err != nil {
		return ConnectorInfo{}, err
	}
	ids := make([]TaskID, len(c.tasks))
	for i := range c.tasks {
		ids[i] = TaskID{name, i}
	}
	return ConnectorInfo{Name: name, Config: masked(c.cfg, p.Config), Tasks: ids, Type: p.Type}, nil
}

func (h *distHerder) rawConfig(ctx context.Context, name string) (Config, error) {
	if err := h.sync(ctx, false); err != nil {
		return nil, err
	}
	c, _, err := h.connector(name)
	if err != nil {
		return nil, err
	}
	return c.cfg.Clone(), nil
}

func (h *distHerder) status(key string) (statusValue, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	s, ok := h.mu.statuses[key]
	return s, ok
}

func (h *distHerder) ConnectorStatus(ctx context.Context, name string) (ConnectorStatus, error) {
	if err := h.sync(ctx, true); err != nil {
		return ConnectorStatus{}, err
	}
	c, p, err := h.connector(name)
	if err != nil {
		return ConnectorStatus{}, err
	}
	st := ConnectorStatus{Name: name, Connector: ConnectorState{State: StateUnassigned}, Tasks: []TaskStatus{}, Type: p.Type}
	if s, ok := h.status("status-connector-" + name); ok {
		st.Connector = ConnectorState{State: s.State, WorkerID: s.WorkerID}
		if s.Trace != nil {
			st.Connector.Trace = *s.Trace
		}
	}
	for i := range c.tasks {
		st.Tasks = append(st.Tasks, h.taskStatus(TaskID{name, i}))
	}
	return st, nil
}

func (h *distHerder) taskStatus(id TaskID) TaskStatus {
	ts := TaskStatus{ID: id.Task, State: StateUnassigned}
	if s, ok := h.status(fmt.Sprintf("status-task-%s-%d", id.Connector, id.Task)); ok {
		ts.State, ts.WorkerID = s.State, s.WorkerID
		if s.Trace != nil {
			ts.Trace = *s.Trace
		}
	}
	return ts
}

func (h *distHerder) Validate(_ context.Context, cfg Config) (ConfigInfos, error) {
	infos, _ := validateConfig(h.w.reg, cfg)
	return infos, nil
}

func (h *distHerder) PutConnectorConfig(ctx context.Context, name string, cfg Config, allowReplace bool) (ConnectorInfo, bool, error) {
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
	if err := h.sync(ctx, false); err != nil {
		return ConnectorInfo{}, false, err
	}
	_, _, err := h.connector(name)
	exists := err == nil
	if exists && !allowReplace {
		return ConnectorInfo{}, false, newHerderError(ErrConflict, "Connector %s already exists", name)
	}
	rec, err := connectorRecord(name, cfg)
	if err != nil {
		return ConnectorInfo{}, false, err
	}
	if err := h.cfgLog.send(ctx, rec); err != nil {
		return ConnectorInfo{}, false, err
	}
	if err := h.sync(ctx, false); err != nil {
		return ConnectorInfo{}, false, err
	}
	info := ConnectorInfo{Name: name, Config: masked(cfg, plugin.Config), Tasks: []TaskID{}, Type: plugin.Type}
	return info, !exists, nil
}

func (h *distHerder) DeleteConnector(ctx context.Context, name string) error {
	if err := h.sync(ctx, false); err != nil {
		return err
	}
	if _, _, err := h.connector(name); err != nil {
		return err
	}
	// Tombstones, as Kafka Connect writes them.
	if err := h.cfgLog.send(ctx, &kgo.Record{Key: []byte("connector-" + name)}, &kgo.Record{Key: []byte("target-state-" + name)}); err != nil {
		return err
	}
	return h.sync(ctx, false)
}

func (h *distHerder) TaskConfigs(ctx context.Context, name string) ([]TaskInfo, error) {
	if err := h.sync(ctx, false); err != nil {
		return nil, err
	}
	c, p, err := h.connector(name)
	if err != nil {
		return nil, err
	}
	out := make([]TaskInfo, len(c.tasks))
	for i, t := range c.tasks {
		out[i] = TaskInfo{ID: TaskID{name, i}, Config: masked(t, p.Config)}
	}
	return out, nil
}

func (h *distHerder) TaskStatus(ctx context.Context, id TaskID) (TaskStatus, error) {
	if err := h.sync(ctx, true); err != nil {
		return TaskStatus{}, err
	}
	c, _, err := h.connector(id.Connector)
	if err != nil {
		return TaskStatus{}, err
	}
	if id.Task < 0 || id.Task >= len(c.tasks) {
		return TaskStatus{}, newHerderError(ErrNotFound, "Task %s not found", id)
	}
	return h.taskStatus(id), nil
}

func (h *distHerder) RestartTask(ctx context.Context, id TaskID) error {
	if _, err := h.TaskStatus(ctx, id); err != nil {
		return err
	}
	return h.cfgLog.send(ctx, restartRecord(id.Connector, id.Task, false, false))
}

func (h *distHerder) RestartConnector(ctx context.Context, name string, includeTasks, onlyFailed bool) (ConnectorStatus, error) {
	st, err := h.ConnectorStatus(ctx, name)
	if err != nil {
		return ConnectorStatus{}, err
	}
	if !onlyFailed || st.Connector.State == StateFailed {
		st.Connector.State = StateRestarting
	}
	for i := range st.Tasks {
		if includeTasks && (!onlyFailed || st.Tasks[i].State == StateFailed) {
			st.Tasks[i].State, st.Tasks[i].Trace = StateRestarting, ""
		}
	}
	if err := h.cfgLog.send(ctx, restartRecord(name, -1, includeTasks, onlyFailed)); err != nil {
		return ConnectorStatus{}, err
	}
	return st, nil
}

func (h *distHerder) SetTargetState(ctx context.Context, name string, target TargetState) error {
	if err := h.sync(ctx, false); err != nil {
		return err
	}
	if _, _, err := h.connector(name); err != nil {
		return err
	}
	if err := h.cfgLog.send(ctx, targetStateRecord(name, target)); err != nil {
		return err
	}
	return h.sync(ctx, false)
}

func (h *distHerder) Offsets(ctx context.Context, name string) (ConnectorOffsets, error) {
	if err := h.sync(ctx, false); err != nil {
		return ConnectorOffsets{}, err
	}
	c, p, err := h.connector(name)
	if err != nil {
		return ConnectorOffsets{}, err
	}
	return connectorOffsets(ctx, h.w, name, p, c.cfg)
}

// stopped checks that a connector is stopped and its tasks are gone, as
// changing offsets requires.
func (h *distHerder) stopped(ctx context.Context, name string) (*Plugin, distConnector, error) {
	if err := h.sync(ctx, false); err != nil {
		return nil, distConnector{}, err
	}
	c, p, err := h.connector(name)
	if err != nil {
		return nil, distConnector{}, err
	}
	if c.target != TargetStopped || len(c.tasks) > 0 {
		return nil, distConnector{}, newHerderError(ErrBadRequest, "Connectors must be in the STOPPED state before their offsets can be modified. This can be done for the specified connector by issuing a 'PUT' request to the '/connectors/%s/stop' endpoint", name)
	}
	return p, c, nil
}

func (h *distHerder) AlterOffsets(ctx context.Context, name string, offs ConnectorOffsets) error {
	p, _, err := h.stopped(ctx, name)
	if err != nil {
		return err
	}
	return alterOffsets(ctx, h.w, name, p, offs, false)
}

func (h *distHerder) ResetOffsets(ctx context.Context, name string) error {
	p, c, err := h.stopped(ctx, name)
	if err != nil {
		return err
	}
	cur, err := connectorOffsets(ctx, h.w, name, p, c.cfg)
	if err != nil {
		return err
	}
	return alterOffsets(ctx, h.w, name, p, cur, true)
}
