package server

import (
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// metrics are the broker's Prometheus metrics. They live in a registry per
// Server so several brokers can run in one process (tests).
type metrics struct {
	requests         *prometheus.CounterVec
	latency          *prometheus.HistogramVec
	errors           *prometheus.CounterVec
	connections      prometheus.Gauge
	connectionsTotal prometheus.Counter
	unsupported      prometheus.Counter
	bytesOut         prometheus.Counter
	topicBytesIn     *prometheus.CounterVec
	topicRecordsIn   *prometheus.CounterVec
	topicBytesOut    *prometheus.CounterVec
	topicRecordsOut  *prometheus.CounterVec
	commitLatency    prometheus.Histogram
	groupCommits     prometheus.Counter
	controllerActive prometheus.Gauge
	isrShrinks       prometheus.Counter
	isrExpands       prometheus.Counter
	cleaner          *cleanerMetrics
}

func newMetrics(reg prometheus.Registerer) *metrics {
	f := func(c prometheus.Collector) prometheus.Collector { reg.MustRegister(c); return c }
	return &metrics{
		cleaner: newCleanerMetrics(reg),
		isrShrinks: f(prometheus.NewCounter(prometheus.CounterOpts{
			Name: "runnel_broker_isr_shrinks_total", Help: "ISR shrinks of partitions this node leads (a follower fell behind replica.lag.time.max.ms).",
		})).(prometheus.Counter),
		isrExpands: f(prometheus.NewCounter(prometheus.CounterOpts{
			Name: "runnel_broker_isr_expands_total", Help: "ISR expansions of partitions this node leads (a follower caught up).",
		})).(prometheus.Counter),
		controllerActive: f(prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "runnel_broker_active_controller", Help: "1 while this node is the active controller (the metadata quorum's leader), else 0.",
		})).(prometheus.Gauge),
		requests: f(prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "runnel_broker_requests_total", Help: "Requests answered, by API.",
		}, []string{"api"})).(*prometheus.CounterVec),
		latency: f(prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "runnel_broker_request_duration_seconds", Help: "Time from reading a request to its response being ready, by API.",
			Buckets: prometheus.ExponentialBuckets(0.0001, 4, 10),
		}, []string{"api"})).(*prometheus.HistogramVec),
		errors: f(prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "runnel_broker_errors_total", Help: "Error codes returned, by API and Kafka error name.",
		}, []string{"api", "error"})).(*prometheus.CounterVec),
		connections: f(prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "runnel_broker_connections", Help: "Open client connections.",
		})).(prometheus.Gauge),
		connectionsTotal: f(prometheus.NewCounter(prometheus.CounterOpts{
			Name: "runnel_broker_connections_total", Help: "Client connections accepted.",
		})).(prometheus.Counter),
		unsupported: f(prometheus.NewCounter(prometheus.CounterOpts{
			Name: "runnel_broker_unsupported_requests_total", Help: "Connections closed for an unknown API key or version.",
		})).(prometheus.Counter),
		bytesOut: f(prometheus.NewCounter(prometheus.CounterOpts{
			Name: "runnel_broker_network_bytes_out_total", Help: "Response bytes written to clients.",
		})).(prometheus.Counter),
		topicBytesIn: f(prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "runnel_broker_topic_bytes_in_total", Help: "Record batch bytes appended, by topic.",
		}, []string{"topic"})).(*prometheus.CounterVec),
		topicRecordsIn: f(prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "runnel_broker_topic_records_in_total", Help: "Records appended, by topic.",
		}, []string{"topic"})).(*prometheus.CounterVec),
		topicBytesOut: f(prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "runnel_broker_topic_bytes_out_total", Help: "Record batch bytes fetched, by topic.",
		}, []string{"topic"})).(*prometheus.CounterVec),
		topicRecordsOut: f(prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "runnel_broker_topic_records_out_total", Help: "Records fetched, by topic.",
		}, []string{"topic"})).(*prometheus.CounterVec),
		groupCommits: f(prometheus.NewCounter(prometheus.CounterOpts{
			Name: "runnel_broker_group_offset_commits_total", Help: "Partition offsets committed by consumer groups (durable).",
		})).(prometheus.Counter),
		commitLatency: f(prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "runnel_broker_fsync_wait_seconds", Help: "Time a produce waited for its bytes to be fsynced (group commit included).",
			Buckets: prometheus.ExponentialBuckets(0.00005, 3, 12),
		})).(prometheus.Histogram),
	}
}

func (m *metrics) observe(key kmsg.Key, d time.Duration) {
	name := key.Name()
	m.requests.WithLabelValues(name).Inc()
	m.latency.WithLabelValues(name).Observe(d.Seconds())
}

// code returns the Kafka code for err and counts it.
func (m *metrics) code(key kmsg.Key, err error) int16 {
	code := errCode(err)
	if code != 0 {
		name := strconv.Itoa(int(code))
		if e := kerr.ErrorForCode(code); e != nil {
			if ke, ok := e.(*kerr.Error); ok {
				name = ke.Message
			}
		}
		m.errors.WithLabelValues(key.Name(), name).Inc()
	}
	return code
}

// logCollector reports each hosted partition's log size, segment count and
// offsets at scrape time.
type logCollector struct {
	s        *Server
	size     *prometheus.Desc
	segments *prometheus.Desc
	hw       *prometheus.Desc
	lso      *prometheus.Desc
	start    *prometheus.Desc
}

func newLogCollector(s *Server) *logCollector {
	l := []string{"topic", "partition"}
	return &logCollector{
		s:        s,
		size:     prometheus.NewDesc("runnel_broker_log_size_bytes", "Bytes in a partition's log segments.", l, nil),
		segments: prometheus.NewDesc("runnel_broker_log_segments", "Segments in a partition's log.", l, nil),
		hw:       prometheus.NewDesc("runnel_broker_log_high_watermark", "A partition's high watermark.", l, nil),
		lso: prometheus.NewDesc("runnel_broker_log_last_stable_offset",
			"A partition's last stable offset (below the high watermark while a transaction is open).", l, nil),
		start: prometheus.NewDesc("runnel_broker_log_start_offset", "A partition's log start offset.", l, nil),
	}
}

func (c *logCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.size
	ch <- c.segments
	ch <- c.hw
	ch <- c.lso
	ch <- c.start
}

func (c *logCollector) Collect(ch chan<- prometheus.Metric) {
	for _, p := range c.s.partitions() {
		part := strconv.Itoa(int(p.Index))
		o := p.Offsets()
		ch <- prometheus.MustNewConstMetric(c.size, prometheus.GaugeValue, float64(p.Log().Size()), p.Topic, part)
		ch <- prometheus.MustNewConstMetric(c.segments, prometheus.GaugeValue, float64(p.Log().NumSegments()), p.Topic, part)
		ch <- prometheus.MustNewConstMetric(c.hw, prometheus.GaugeValue, float64(o.HighWatermark), p.Topic, part)
		ch <- prometheus.MustNewConstMetric(c.lso, prometheus.GaugeValue, float64(o.LastStable), p.Topic, part)
		ch <- prometheus.MustNewConstMetric(c.start, prometheus.GaugeValue, float64(o.LogStart), p.Topic, part)
	}
}
