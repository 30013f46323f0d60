package server

import (
	"strconv"

	"github.com/prometheus/client_golang/prometheus"
)

// clusterMetrics reports replication and the metadata at scrape time:
// partitions this node leads, those of them under-replicated or under
// min.insync.replicas, each follower's lag behind the leader, the
// partitions without a leader in the image (Kafka's controller reports
// OfflinePartitionsCount; every node here reports what its image says),
// and the metadata offset this node has applied. The controller role and
// the ISR shrink and expand counts are kept as they happen (metrics).
type clusterMetrics struct {
	s               *Server
	leaders         *prometheus.Desc
	underReplicated *prometheus.Desc
	underMinISR     *prometheus.Desc
	offline         *prometheus.Desc
	followerLag     *prometheus.Desc
	metadataOffset  *prometheus.Desc
	registeredNodes *prometheus.Desc
	fencedNodes     *prometheus.Desc
}

func newClusterMetrics(s *Server) *clusterMetrics {
	d := func(name, help string, labels ...string) *prometheus.Desc {
		return prometheus.NewDesc(name, help, labels, nil)
	}
	return &clusterMetrics{
		s:               s,
		leaders:         d("runnel_broker_leader_partitions", "Partitions this node leads."),
		underReplicated: d("runnel_broker_under_replicated_partitions", "Partitions this node leads whose ISR is smaller than their replica set."),
		underMinISR:     d("runnel_broker_under_min_isr_partitions", "Partitions this node leads whose ISR is smaller than min.insync.replicas (acks=all writes fail)."),
		offline:         d("runnel_cluster_offline_partitions", "Partitions without a leader in this node's metadata image."),
		followerLag:     d("runnel_broker_replica_lag_records", "Records a follower is behind the leader's log end, for partitions this node leads.", "topic", "partition", "follower"),
		metadataOffset:  d("runnel_broker_metadata_offset", "Index of the last metadata log entry this node applied."),
		registeredNodes: d("runnel_cluster_registered_brokers", "Brokers registered in the metadata image."),
		fencedNodes:     d("runnel_cluster_fenced_brokers", "Registered brokers that are fenced (no heartbeat within broker.session.timeout.ms, or stopped)."),
	}
}

func (m *clusterMetrics) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{m.leaders, m.underReplicated, m.underMinISR, m.offline, m.followerLag, m.metadataOffset, m.registeredNodes, m.fencedNodes} {
		ch <- d
	}
}

func (m *clusterMetrics) Collect(ch chan<- prometheus.Metric) {
	s := m.s
	im := s.meta.Image()
	gauge := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
	}
	var leaders, under, underMin, offline, fenced int
	for _, t := range im.Topics {
		for _, pm := range t.Partitions {
			if pm.Leader < 0 {
				offline++
			}
		}
	}
	for _, b := range im.Brokers {
		if b.Fenced {
			fenced++
		}
	}
	for _, p := range s.partitions() {
		if !leads(p) {
			continue
		}
		leaders++
		pm, ok := s.partitionMeta(tp{p.Topic, p.Index})
		isr := p.ISR()
		if ok && len(isr) < len(pm.Replicas) {
			under++
		}
		if t := im.Topic(p.Topic); t != nil && len(isr) < minISROf(t.Configs, s.layers(im)) {
			underMin++
		}
		for f, lag := range p.FollowerLag() {
			gauge(m.followerLag, float64(lag), p.Topic, strconv.Itoa(int(p.Index)), strconv.Itoa(int(f)))
		}
	}
	gauge(m.leaders, float64(leaders))
	gauge(m.underReplicated, float64(under))
	gauge(m.underMinISR, float64(underMin))
	gauge(m.offline, float64(offline))
	gauge(m.metadataOffset, float64(s.meta.MetadataOffset()))
	gauge(m.registeredNodes, float64(len(im.Brokers)))
	gauge(m.fencedNodes, float64(fenced))
}
