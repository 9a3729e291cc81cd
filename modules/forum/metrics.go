package forum

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/svcforum/svc/contracts/plugin"
)

// writeMetrics count the forum's signed writes that committed.
type writeMetrics struct {
	writes *prometheus.CounterVec
}

func newWriteMetrics() *writeMetrics {
	return &writeMetrics{writes: prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "svc_writes_total", Help: "Forum writes that committed, by kind (the operation each is charged as).",
	}, []string{"kind"})}
}

// wrote counts a write that committed, under the operation it was charged as.
func (w *Writes) wrote(op string) {
	w.metrics.writes.WithLabelValues(op).Inc()
}

// Metrics are the forum's counters, for the host's /metrics.
func (w *Writes) Metrics() plugin.Metrics {
	return plugin.Metrics{Module: ID, Collectors: []prometheus.Collector{w.metrics.writes}}
}
