package server

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/runnel-io/runnel/broker/internal/txn"
)

// txnMetrics reports the transaction coordinator: transactional ids by
// state at scrape time, and, as they happen, transactions completed (their
// markers all written) by result with their duration, and markers this
// node appended to the partitions it leads.
type txnMetrics struct {
	s         *Server
	states    *prometheus.Desc
	completed *prometheus.CounterVec
	duration  prometheus.Histogram
	markers   *prometheus.CounterVec
}

func newTxnMetrics(s *Server, reg prometheus.Registerer) *txnMetrics {
	m := &txnMetrics{
		s: s,
		states: prometheus.NewDesc("runnel_broker_transactions",
			"Transactional ids this node coordinates, by state (Ongoing: open transactions).", []string{"state"}, nil),
		completed: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "runnel_broker_transactions_completed_total", Help: "Transactions whose markers are all written, by result (commit, abort).",
		}, []string{"result"}),
		duration: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "runnel_broker_transaction_duration_seconds", Help: "Time from a transaction's first partition to its markers all written.",
			Buckets: prometheus.ExponentialBuckets(0.001, 4, 10),
		}),
		markers: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "runnel_broker_txn_markers_written_total", Help: "Transaction markers appended to partitions this node leads, by result (commit, abort).",
		}, []string{"result"}),
	}
	reg.MustRegister(m, m.completed, m.duration, m.markers)
	return m
}

func (m *txnMetrics) Describe(ch chan<- *prometheus.Desc) { ch <- m.states }

func (m *txnMetrics) Collect(ch chan<- prometheus.Metric) {
	counts := map[string]int{}
	now := m.s.now()
	all := kmsg.NewPtrListTransactionsRequest()
	for _, sh := range m.s.txns.loaded() {
		sh.mu.Lock()
		for _, t := range sh.mu.core.List(now, all).TransactionStates {
			counts[t.TransactionState]++
		}
		sh.mu.Unlock()
	}
	for _, st := range []txn.State{txn.Empty, txn.Ongoing, txn.PrepareCommit, txn.PrepareAbort, txn.CompleteCommit, txn.CompleteAbort} {
		ch <- prometheus.MustNewConstMetric(m.states, prometheus.GaugeValue, float64(counts[st.String()]), st.String())
	}
}

// complete counts a transaction whose markers are all written, started at
// startMs (-1: unknown).
func (m *txnMetrics) complete(commit bool, startMs int64, now time.Time) {
	m.completed.WithLabelValues(markerKind(commit)).Inc()
	if startMs >= 0 {
		m.duration.Observe(now.Sub(time.UnixMilli(startMs)).Seconds())
	}
}
