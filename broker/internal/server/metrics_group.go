package server

import (
	"strconv"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/runnel-io/runnel/broker/internal/group"
)

// groupMetrics reports the group coordinator at scrape time: groups by
// state, completed rebalances, and consumer lag (high watermark minus
// committed offset) per group and partition. Offset commits are counted as
// they happen (metrics.groupCommits).
type groupMetrics struct {
	s          *Server
	groups     *prometheus.Desc
	rebalances *prometheus.Desc
	lag        *prometheus.Desc
}

func newGroupMetrics(s *Server) *groupMetrics {
	return &groupMetrics{
		s: s,
		groups: prometheus.NewDesc("runnel_broker_groups",
			"Consumer groups this node coordinates, by state.", []string{"state"}, nil),
		rebalances: prometheus.NewDesc("runnel_broker_group_rebalances_total",
			"Join phases completed (each starts a generation) since the broker started.", nil, nil),
		lag: prometheus.NewDesc("runnel_broker_group_lag",
			"Records between a group's committed offset and the partition's high watermark.",
			[]string{"group", "topic", "partition"}, nil),
	}
}

func (m *groupMetrics) Describe(ch chan<- *prometheus.Desc) {
	ch <- m.groups
	ch <- m.rebalances
	ch <- m.lag
}

func (m *groupMetrics) Collect(ch chan<- prometheus.Metric) {
	counts := map[group.State]int{}
	var rebalances uint64
	type lagKey struct {
		group, topic string
		part         int32
		offset       int64
	}
	var lags []lagKey
	for _, sh := range m.s.groups.loaded() {
		sh.mu.Lock()
		core := sh.mu.core
		rebalances += core.Rebalances()
		for _, g := range core.List() {
			counts[g.State]++
			for t, ps := range core.Offsets(g.Group) {
				for p, o := range ps {
					lags = append(lags, lagKey{g.Group, t, p, o})
				}
			}
		}
		sh.mu.Unlock()
	}
	for _, st := range []group.State{group.Empty, group.PreparingRebalance, group.CompletingRebalance, group.Stable} {
		ch <- prometheus.MustNewConstMetric(m.groups, prometheus.GaugeValue, float64(counts[st]), st.String())
	}
	ch <- prometheus.MustNewConstMetric(m.rebalances, prometheus.CounterValue, float64(rebalances))
	for _, l := range lags {
		p := m.s.partition(l.topic, l.part)
		if p == nil {
			continue
		}
		lag := max(p.Offsets().HighWatermark-l.offset, 0)
		ch <- prometheus.MustNewConstMetric(m.lag, prometheus.GaugeValue, float64(lag), l.group, l.topic, strconv.Itoa(int(l.part)))
	}
}
