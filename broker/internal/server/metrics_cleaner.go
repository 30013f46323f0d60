package server

import (
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	plog "github.com/runnel-io/runnel/broker/internal/log"
)

// cleanerMetrics count the log cleaner's work (see cleaner.go).
type cleanerMetrics struct {
	runs           *prometheus.CounterVec
	bytesRead      *prometheus.CounterVec
	bytesWritten   *prometheus.CounterVec
	recordsRemoved *prometheus.CounterVec
	seconds        *prometheus.CounterVec
	errors         *prometheus.CounterVec
}

func newCleanerMetrics(reg prometheus.Registerer) *cleanerMetrics {
	counter := func(name, help string) *prometheus.CounterVec {
		c := prometheus.NewCounterVec(prometheus.CounterOpts{Name: name, Help: help}, []string{"topic"})
		reg.MustRegister(c)
		return c
	}
	return &cleanerMetrics{
		runs:           counter("runnel_broker_log_cleaner_runs_total", "Cleaning passes that rewrote segments, by topic."),
		bytesRead:      counter("runnel_broker_log_cleaner_bytes_read_total", "Segment bytes the cleaner read, by topic."),
		bytesWritten:   counter("runnel_broker_log_cleaner_bytes_written_total", "Cleaned segment bytes the cleaner wrote, by topic."),
		recordsRemoved: counter("runnel_broker_log_cleaner_records_removed_total", "Records compaction removed, by topic."),
		seconds:        counter("runnel_broker_log_cleaner_seconds_total", "Time spent cleaning, by topic."),
		errors:         counter("runnel_broker_log_cleaner_errors_total", "Cleaning passes that failed (the partition is then left alone until restart), by topic."),
	}
}

// observe records a pass; failed says it failed (an abandoned pass did not).
func (m *cleanerMetrics) observe(topic string, st plog.CleanStats, d time.Duration, failed bool) {
	if st.Segments > 0 {
		m.runs.WithLabelValues(topic).Inc()
	}
	m.bytesRead.WithLabelValues(topic).Add(float64(st.BytesRead))
	m.bytesWritten.WithLabelValues(topic).Add(float64(st.BytesWritten))
	m.recordsRemoved.WithLabelValues(topic).Add(float64(st.RecordsRemoved))
	m.seconds.WithLabelValues(topic).Add(d.Seconds())
	if failed {
		m.errors.WithLabelValues(topic).Inc()
	}
}

// dirtyCollector reports each compacted partition's dirty ratio at scrape
// time.
type dirtyCollector struct {
	s           *Server
	ratio       *prometheus.Desc
	uncleanable *prometheus.Desc
}

func newDirtyCollector(s *Server) *dirtyCollector {
	return &dirtyCollector{
		s: s,
		ratio: prometheus.NewDesc("runnel_broker_log_cleaner_dirty_ratio",
			"A compacted partition's uncleaned bytes over its cleanable bytes.", []string{"topic", "partition"}, nil),
		uncleanable: prometheus.NewDesc("runnel_broker_log_cleaner_uncleanable_partitions",
			"Partitions the cleaner gave up on after an error.", nil, nil),
	}
}

func (c *dirtyCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.ratio
	ch <- c.uncleanable
}

func (c *dirtyCollector) Collect(ch chan<- prometheus.Metric) {
	for _, p := range c.s.partitions() {
		if p.Config().Log.Compact {
			ch <- prometheus.MustNewConstMetric(c.ratio, prometheus.GaugeValue, p.Cleanable().Ratio, p.Topic, strconv.Itoa(int(p.Index)))
		}
	}
	n := 0
	if c.s.cleaner != nil {
		n = c.s.cleaner.uncleanable()
	}
	ch <- prometheus.MustNewConstMetric(c.uncleanable, prometheus.GaugeValue, float64(n))
}
