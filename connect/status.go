package connect

import "fmt"

// The states of connectors and tasks, as GET /connectors/{name}/status
// names them.
const (
	StateUnassigned = "UNASSIGNED"
	StateRunning    = "RUNNING"
	StatePaused     = "PAUSED"
	StateStopped    = "STOPPED"
	StateFailed     = "FAILED"
	StateRestarting = "RESTARTING"
)

// TargetState is what a user asked a connector to be: running, paused
// (tasks keep their resources but move no records) or stopped (no tasks at
// all; offsets can then be changed).
type TargetState string

// The target states.
const (
	TargetStarted TargetState = "STARTED"
	TargetPaused  TargetState = "PAUSED"
	TargetStopped TargetState = "STOPPED"
)

// TaskID names one task of a connector.
type TaskID struct {
	Connector string `json:"connector"`
	Task      int    `json:"task"`
}

func (id TaskID) String() string { return fmt.Sprintf("%s-%d", id.Connector, id.Task) }

// TaskStatus is the state of one task, as the REST API shows it.
type TaskStatus struct {
	ID       int    `json:"id"`
	State    string `json:"state"`
	WorkerID string `json:"worker_id"`
	Trace    string `json:"trace,omitempty"`
}

// ConnectorState is the state of a connector itself.
type ConnectorState struct {
	State    string `json:"state"`
	WorkerID string `json:"worker_id"`
	Trace    string `json:"trace,omitempty"`
}

// ConnectorStatus is GET /connectors/{name}/status.
type ConnectorStatus struct {
	Name      string         `json:"name"`
	Connector ConnectorState `json:"connector"`
	Tasks     []TaskStatus   `json:"tasks"`
	Type      PluginType     `json:"type"`
}

// ConnectorInfo is what creating a connector or GET /connectors/{name}
// returns.
type ConnectorInfo struct {
	Name   string     `json:"name"`
	Config Config     `json:"config"`
	Tasks  []TaskID   `json:"tasks"`
	Type   PluginType `json:"type"`
}

// TaskInfo is one entry of GET /connectors/{name}/tasks.
type TaskInfo struct {
	ID     TaskID `json:"id"`
	Config Config `json:"config"`
}
