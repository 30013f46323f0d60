package streams

import (
	"errors"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// metrics are one App's Prometheus collectors, all labelled app=<application
// id>. The loop goroutine updates them; a scrape reads them from any
// goroutine (client_golang's collectors are safe for that).
//
// Records processed are counted per node in plain task-local counters (no
// atomic per record) and added to the collectors after each poll.
type metrics struct {
	processed      *prometheus.CounterVec // node
	nodeCounters   []prometheus.Counter   // by node id, cached children of processed
	dropped        *prometheus.CounterVec // reason
	pollSeconds    prometheus.Histogram
	commitSeconds  prometheus.Histogram
	storeEntries   *prometheus.GaugeVec // store, partition
	storeBytes     *prometheus.GaugeVec // store, partition
	restored       *prometheus.CounterVec
	restoreTime    prometheus.Counter
	restoreLeft    *prometheus.GaugeVec // store, partition
	lag            *prometheus.GaugeVec // task, topic, partition
	tasks          prometheus.Gauge
	standbyTasks   prometheus.Gauge
	standbyRecords *prometheus.CounterVec // store
	rebalances     prometheus.Counter
	fenced         prometheus.Counter

	lastStoreStats time.Time
}

// storeStatsEvery bounds how often store sizes are read: reading them walks
// pebble's table list, too much for every exactly-once commit.
const storeStatsEvery = 5 * time.Second

func newMetrics(reg prometheus.Registerer, topo *Topology, appID string) *metrics {
	f := func(o prometheus.Opts) prometheus.Opts {
		o.Namespace, o.Subsystem = "runnel", "streams"
		o.ConstLabels = prometheus.Labels{"app": appID}
		return o
	}
	h := func(name, help string) prometheus.Histogram {
		return prometheus.NewHistogram(prometheus.HistogramOpts{Namespace: "runnel", Subsystem: "streams", Name: name, Help: help,
			ConstLabels: prometheus.Labels{"app": appID}, Buckets: prometheus.ExponentialBuckets(0.0001, 4, 10)})
	}
	m := &metrics{
		processed: prometheus.NewCounterVec(prometheus.CounterOpts(f(prometheus.Opts{Name: "records_processed_total",
			Help: "Records each node of the topology took in."})), []string{"node"}),
		dropped: prometheus.NewCounterVec(prometheus.CounterOpts(f(prometheus.Opts{Name: "records_dropped_total",
			Help: "Records dropped, by reason (bad-record, dead-letter, negative-timestamp, expired-window...)."})), []string{"reason"}),
		pollSeconds:   h("poll_process_seconds", "Time to process the records of one poll, punctuation included."),
		commitSeconds: h("commit_seconds", "Time of one commit: changelogs written, outputs acknowledged, state and offsets committed."),
		storeEntries: prometheus.NewGaugeVec(prometheus.GaugeOpts(f(prometheus.Opts{Name: "store_entries",
			Help: "Approximate entries of a store partition hosted here (flushed data; refreshed every few seconds)."})), []string{"store", "partition"}),
		storeBytes: prometheus.NewGaugeVec(prometheus.GaugeOpts(f(prometheus.Opts{Name: "store_bytes",
			Help: "Approximate on-disk bytes of a store partition hosted here."})), []string{"store", "partition"}),
		restored: prometheus.NewCounterVec(prometheus.CounterOpts(f(prometheus.Opts{Name: "restored_records_total",
			Help: "Changelog records applied to local stores while restoring."})), []string{"store"}),
		restoreTime: prometheus.NewCounter(prometheus.CounterOpts(f(prometheus.Opts{Name: "restore_seconds_total",
			Help: "Time spent restoring stores from their changelogs (the loop does nothing else meanwhile)."}))),
		restoreLeft: prometheus.NewGaugeVec(prometheus.GaugeOpts(f(prometheus.Opts{Name: "restore_remaining_records",
			Help: "Changelog offsets still to restore for a store partition (0 once it is current)."})), []string{"store", "partition"}),
		lag: prometheus.NewGaugeVec(prometheus.GaugeOpts(f(prometheus.Opts{Name: "task_lag_records",
			Help: "Records of an input partition not yet processed: its last stable offset minus the next offset to process."})), []string{"task", "topic", "partition"}),
		tasks: prometheus.NewGauge(prometheus.GaugeOpts(f(prometheus.Opts{Name: "active_tasks",
			Help: "Tasks running in this instance."}))),
		standbyTasks: prometheus.NewGauge(prometheus.GaugeOpts(f(prometheus.Opts{Name: "standby_tasks",
			Help: "Standby tasks whose changelogs this instance follows."}))),
		standbyRecords: prometheus.NewCounterVec(prometheus.CounterOpts(f(prometheus.Opts{Name: "standby_records_total",
			Help: "Changelog records applied to standby replicas of stores."})), []string{"store"}),
		fenced: prometheus.NewCounter(prometheus.CounterOpts(f(prometheus.Opts{Name: "producer_fenced_total",
			Help: "Times this exactly-once instance's producer was fenced and it rejoined its group."}))),
		rebalances: prometheus.NewCounter(prometheus.CounterOpts(f(prometheus.Opts{Name: "rebalances_total",
			Help: "Assignments this instance received from its group."}))),
	}
	if reg != nil {
		// A second App with the same id on one registry (two instances
		// in one process) shares the collectors already there.
		m.processed, m.dropped = register(reg, m.processed), register(reg, m.dropped)
		m.pollSeconds, m.commitSeconds = register(reg, m.pollSeconds), register(reg, m.commitSeconds)
		m.storeEntries, m.storeBytes = register(reg, m.storeEntries), register(reg, m.storeBytes)
		m.restored, m.restoreTime, m.restoreLeft = register(reg, m.restored), register(reg, m.restoreTime), register(reg, m.restoreLeft)
		m.lag, m.tasks = register(reg, m.lag), register(reg, m.tasks)
		m.standbyTasks, m.standbyRecords = register(reg, m.standbyTasks), register(reg, m.standbyRecords)
		m.rebalances, m.fenced = register(reg, m.rebalances), register(reg, m.fenced)
	}
	m.nodeCounters = make([]prometheus.Counter, len(topo.nodes))
	for i, n := range topo.nodes {
		m.nodeCounters[i] = m.processed.WithLabelValues(n.name)
	}
	return m
}

// register registers c, or returns the equal collector registered before.
func register[C prometheus.Collector](reg prometheus.Registerer, c C) C {
	err := reg.Register(c)
	if err == nil {
		return c
	}
	var are prometheus.AlreadyRegisteredError
	if errors.As(err, &are) {
		if existing, ok := are.ExistingCollector.(C); ok {
			return existing
		}
	}
	panic(err) // only a programming error in the opts above gets here
}

// flushCounts adds the tasks' per-node counts to the collectors.
func (m *metrics) flushCounts(g *engine) {
	for _, t := range g.tasks {
		for id, n := range t.counts {
			if n != 0 {
				m.nodeCounters[id].Add(float64(n))
				t.counts[id] = 0
			}
		}
	}
	m.tasks.Set(float64(len(g.tasks)))
}

// storeStats refreshes the store size gauges when they are due.
func (m *metrics) storeStats(g *engine) {
	if time.Since(m.lastStoreStats) < storeStatsEvery {
		return
	}
	m.lastStoreStats = time.Now()
	for _, t := range g.tasks {
		p := strconv.Itoa(int(t.id.Partition))
		for _, s := range t.sub.stores {
			entries, bytes := g.env.db.Stats(s.name, t.id.Partition)
			m.storeEntries.WithLabelValues(s.name, p).Set(float64(entries))
			m.storeBytes.WithLabelValues(s.name, p).Set(float64(bytes))
		}
	}
}

// forgetTask removes the gauges of a task that left this instance.
func (m *metrics) forgetTask(t *task) {
	p := strconv.Itoa(int(t.id.Partition))
	for _, s := range t.sub.stores {
		m.storeEntries.DeleteLabelValues(s.name, p)
		m.storeBytes.DeleteLabelValues(s.name, p)
	}
	m.lag.DeletePartialMatch(prometheus.Labels{"task": t.id.String()})
}

// counted counts the records a node takes in, in its task's counters.
type counted[K, V any] struct {
	d downstream[K, V]
	n *int64
}

func (c counted[K, V]) process(r Record[K, V]) error {
	*c.n++
	return c.d.process(r)
}
