package connect

import (
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/twmb/franz-go/pkg/kgo"
)

// The config topic holds, as Kafka Connect's does (same keys, same JSON):
//
//	connector-<name>        {"properties": {...}}      null: deleted
//	target-state-<name>     {"state": "PAUSED", "state.v2": "PAUSED"}
//	task-<name>-<n>         {"properties": {...}}
//	commit-<name>           {"tasks": n}               the task configs above are complete
//	restart-connector-<name> {"include-tasks": b, "only-failed": b}   (Runnel: restarts are records too)
//	restart-task-<name>-<n> {}
//
// Every worker reads it into a configView; the leader writes task configs
// for connectors whose config or target state changed.

// configView is what a worker knows of the config topic.
type configView struct {
	offset     int64 // the next offset to apply
	connectors map[string]*distConnector
	// restarts are restart requests not yet acted on, in order.
	restarts []restartRequest
}

type distConnector struct {
	cfg    Config
	target TargetState
	// cfgOffset is the offset of the connector's latest config (or
	// target-state) record: the leader writes task configs when it is
	// newer than tasksFor.
	cfgOffset int64
	// tasks are the committed task configs; tasksFor the cfgOffset they
	// were generated for; commitOffset the offset of their commit record.
	tasks        []Config
	tasksFor     int64
	commitOffset int64
	pending      map[int]Config // task configs read, not yet committed
}

type restartRequest struct {
	offset       int64
	connector    string
	task         int // -1: the connector
	includeTasks bool
	onlyFailed   bool
}

func newConfigView() *configView {
	return &configView{connectors: map[string]*distConnector{}}
}

type propertiesValue struct {
	Properties map[string]string `json:"properties"`
	// TasksFor is Runnel's: the offset of the connector config the task
	// configs were generated from.
	TasksFor int64 `json:"runnel.tasks.for,omitempty"`
}

type targetStateValue struct {
	State   string `json:"state"`
	StateV2 string `json:"state.v2"`
}

type commitValue struct {
	Tasks    int   `json:"tasks"`
	TasksFor int64 `json:"runnel.tasks.for,omitempty"`
}

type restartValue struct {
	IncludeTasks bool `json:"include-tasks"`
	OnlyFailed   bool `json:"only-failed"`
}

// apply applies one record of the config topic. Records it cannot read
// are skipped (and reported), as Kafka Connect does.
func (v *configView) apply(r *kgo.Record) error {
	v.offset = r.Offset + 1
	k := string(r.Key)
	conn := func(name string) *distConnector {
		c := v.connectors[name]
		if c == nil {
			c = &distConnector{target: TargetStarted, pending: map[int]Config{}, tasksFor: -1}
			v.connectors[name] = c
		}
		return c
	}
	switch {
	case strings.HasPrefix(k, "connector-"):
		name := strings.TrimPrefix(k, "connector-")
		if r.Value == nil {
			delete(v.connectors, name)
			return nil
		}
		var pv propertiesValue
		if err := json.Unmarshal(r.Value, &pv); err != nil {
			return fmt.Errorf("config record %s: %v", k, err)
		}
		c := conn(name)
		c.cfg, c.cfgOffset = Config(pv.Properties), r.Offset
	case strings.HasPrefix(k, "target-state-"):
		name := strings.TrimPrefix(k, "target-state-")
		if r.Value == nil {
			return nil
		}
		var tv targetStateValue
		if err := json.Unmarshal(r.Value, &tv); err != nil {
			return fmt.Errorf("config record %s: %v", k, err)
		}
		s := tv.StateV2
		if s == "" {
			s = tv.State
		}
		c, ok := v.connectors[name]
		if !ok {
			return nil
		}
		if t := TargetState(s); t != c.target {
			// Stopping drops the tasks and resuming a stopped connector
			// makes new ones: both need task configs written.
			if t == TargetStopped || c.target == TargetStopped {
				c.cfgOffset = r.Offset
			}
			c.target = t
		}
	case strings.HasPrefix(k, "task-"):
		name, n, ok := splitTaskKey(strings.TrimPrefix(k, "task-"))
		if !ok || r.Value == nil {
			return nil
		}
		var pv propertiesValue
		if err := json.Unmarshal(r.Value, &pv); err != nil {
			return fmt.Errorf("config record %s: %v", k, err)
		}
		if c, ok := v.connectors[name]; ok {
			c.pending[n] = Config(pv.Properties)
		}
	case strings.HasPrefix(k, "commit-"):
		name := strings.TrimPrefix(k, "commit-")
		var cv commitValue
		if err := json.Unmarshal(r.Value, &cv); err != nil {
			return fmt.Errorf("config record %s: %v", k, err)
		}
		c, ok := v.connectors[name]
		if !ok {
			return nil
		}
		tasks := make([]Config, 0, cv.Tasks)
		for i := range cv.Tasks {
			t, ok := c.pending[i]
			if !ok {
				return fmt.Errorf("config record %s: task config %d is missing", k, i)
			}
			tasks = append(tasks, t)
		}
		c.tasks, c.tasksFor, c.commitOffset, c.pending = tasks, cv.TasksFor, r.Offset, map[int]Config{}
	case strings.HasPrefix(k, "restart-connector-"):
		var rv restartValue
		_ = json.Unmarshal(r.Value, &rv)
		v.restarts = append(v.restarts, restartRequest{offset: r.Offset, connector: strings.TrimPrefix(k, "restart-connector-"), task: -1,
			includeTasks: rv.IncludeTasks, onlyFailed: rv.OnlyFailed})
	case strings.HasPrefix(k, "restart-task-"):
		name, n, ok := splitTaskKey(strings.TrimPrefix(k, "restart-task-"))
		if ok {
			v.restarts = append(v.restarts, restartRequest{offset: r.Offset, connector: name, task: n})
		}
	}
	return nil
}

// splitTaskKey splits "<name>-<n>".
func splitTaskKey(s string) (string, int, bool) {
	i := strings.LastIndexByte(s, '-')
	if i <= 0 {
		return "", 0, false
	}
	n, err := strconv.Atoi(s[i+1:])
	if err != nil || n < 0 {
		return "", 0, false
	}
	return s[:i], n, true
}

// names returns the connectors, sorted.
func (v *configView) names() []string {
	out := make([]string, 0, len(v.connectors))
	for n := range v.connectors {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// needsTasks lists the connectors whose task configs are older than their
// config or target state: the leader writes new ones.
func (v *configView) needsTasks() []string {
	var out []string
	for _, n := range v.names() {
		if c := v.connectors[n]; c.tasksFor < c.cfgOffset {
			out = append(out, n)
		}
	}
	return out
}

// allTasks lists every task that should run, by connector.
func (v *configView) allTasks() []TaskID {
	var out []TaskID
	for _, n := range v.names() {
		c := v.connectors[n]
		if c.target == TargetStopped {
			continue
		}
		for i := range c.tasks {
			out = append(out, TaskID{n, i})
		}
	}
	return out
}

// Config topic records.

func connectorRecord(name string, cfg Config) (*kgo.Record, error) {
	b, err := json.Marshal(propertiesValue{Properties: cfg})
	return &kgo.Record{Key: []byte("connector-" + name), Value: b}, err
}

func targetStateRecord(name string, t TargetState) *kgo.Record {
	b, _ := json.Marshal(targetStateValue{State: string(t), StateV2: string(t)})
	return &kgo.Record{Key: []byte("target-state-" + name), Value: b}
}

func taskRecords(name string, tasks []Config, tasksFor int64) ([]*kgo.Record, error) {
	var out []*kgo.Record
	for i, t := range tasks {
		b, err := json.Marshal(propertiesValue{Properties: t, TasksFor: tasksFor})
		if err != nil {
			return nil, err
		}
		out = append(out, &kgo.Record{Key: []byte(fmt.Sprintf("task-%s-%d", name, i)), Value: b})
	}
	b, _ := json.Marshal(commitValue{Tasks: len(tasks), TasksFor: tasksFor})
	return append(out, &kgo.Record{Key: []byte("commit-" + name), Value: b}), nil
}

func restartRecord(name string, task int, includeTasks, onlyFailed bool) *kgo.Record {
	if task >= 0 {
		return &kgo.Record{Key: []byte(fmt.Sprintf("restart-task-%s-%d", name, task)), Value: []byte("{}")}
	}
	b, _ := json.Marshal(restartValue{IncludeTasks: includeTasks, OnlyFailed: onlyFailed})
	return &kgo.Record{Key: []byte("restart-connector-" + name), Value: b}
}
