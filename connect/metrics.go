package connect

import (
	"errors"
	"strconv"

	"github.com/prometheus/client_golang/prometheus"
)

// metrics are one worker's Prometheus collectors, labelled by connector
// and task. Task goroutines update them per batch, not per record.
type metrics struct {
	sourcePolled   *prometheus.CounterVec // connector, task
	sourceWritten  *prometheus.CounterVec
	sourceFiltered *prometheus.CounterVec
	sinkRead       *prometheus.CounterVec
	sinkPut        *prometheus.CounterVec
	sinkFiltered   *prometheus.CounterVec
	batchSize      *prometheus.HistogramVec // connector, task, kind (poll|put)
	offsetCommits  *prometheus.CounterVec   // connector, task, result (ok|failed)
	errs           *prometheus.CounterVec   // connector, task, stage
	dlq            *prometheus.CounterVec   // connector, task
	restarts       *prometheus.CounterVec   // connector, task
	taskState      *prometheus.GaugeVec     // connector, task, state
}

var taskLabels = []string{"connector", "task"}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	c := func(name, help string, extra ...string) *prometheus.CounterVec {
		return prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: "runnel", Subsystem: "connect", Name: name, Help: help},
			append(append([]string(nil), taskLabels...), extra...))
	}
	m := &metrics{
		sourcePolled:   c("source_records_polled_total", "Records source tasks returned from Poll."),
		sourceWritten:  c("source_records_written_total", "Source records the brokers acknowledged."),
		sourceFiltered: c("source_records_filtered_total", "Source records dropped by a transform or the error policy."),
		sinkRead:       c("sink_records_read_total", "Records sink tasks read from their topics."),
		sinkPut:        c("sink_records_put_total", "Records handed to sink tasks' Put."),
		sinkFiltered:   c("sink_records_filtered_total", "Sink records dropped by a transform or the error policy."),
		batchSize: prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: "runnel", Subsystem: "connect", Name: "batch_size_records",
			Help: "Records per source poll or sink put.", Buckets: prometheus.ExponentialBuckets(1, 4, 9)}, append(append([]string(nil), taskLabels...), "kind")),
		offsetCommits: c("offset_commits_total", "Offset commits of tasks, by result.", "result"),
		errs:          c("errors_total", "Errors of tasks, by stage (convert, transform, poll, put, produce, commit, task).", "stage"),
		dlq:           c("deadletterqueue_records_total", "Records sink tasks sent to their dead letter queue."),
		restarts:      c("task_restarts_total", "Automatic and requested restarts of tasks."),
		taskState: prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: "runnel", Subsystem: "connect", Name: "task_state",
			Help: "1 for the state each task of this worker is in (RUNNING, PAUSED, FAILED, RESTARTING, UNASSIGNED)."}, append(append([]string(nil), taskLabels...), "state")),
	}
	if reg == nil {
		return m, nil
	}
	// A second worker on one registry (tests, embedding) shares the
	// collectors: their series are told apart by connector and task.
	err := errors.Join(register(reg, &m.sourcePolled), register(reg, &m.sourceWritten), register(reg, &m.sourceFiltered),
		register(reg, &m.sinkRead), register(reg, &m.sinkPut), register(reg, &m.sinkFiltered), register(reg, &m.batchSize),
		register(reg, &m.offsetCommits), register(reg, &m.errs), register(reg, &m.dlq), register(reg, &m.restarts), register(reg, &m.taskState))
	return m, err
}

func register[C prometheus.Collector](reg prometheus.Registerer, c *C) error {
	err := reg.Register(*c)
	var are prometheus.AlreadyRegisteredError
	if errors.As(err, &are) {
		if existing, ok := are.ExistingCollector.(C); ok {
			*c = existing
			return nil
		}
	}
	return err
}

// taskStates are the states a task's gauge has a series for.
var taskStates = []string{StateRunning, StatePaused, StateFailed, StateRestarting, StateUnassigned}

func (m *metrics) setTaskState(id TaskID, state string) {
	t := strconv.Itoa(id.Task)
	for _, s := range taskStates {
		v := 0.0
		if s == state {
			v = 1
		}
		m.taskState.WithLabelValues(id.Connector, t, s).Set(v)
	}
}

// forgetTask deletes a task's series when it leaves this worker.
func (m *metrics) forgetTask(id TaskID) {
	m.taskState.DeletePartialMatch(prometheus.Labels{"connector": id.Connector, "task": strconv.Itoa(id.Task)})
}
