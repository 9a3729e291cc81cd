package billing

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/svcforum/svc/contracts/plugin"
)

// meterMetrics count what the meter charged, in writes that committed.
type meterMetrics struct {
	credits *prometheus.CounterVec
	charges *prometheus.CounterVec
}

func newMeterMetrics() *meterMetrics {
	return &meterMetrics{
		credits: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "svc_credits_charged_total", Help: "Credits charged by metered writes that committed, by operation.",
		}, []string{"operation"}),
		charges: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "svc_charges_total", Help: "Metered writes that committed, by operation.",
		}, []string{"operation"}),
	}
}

// count returns what counts one charge, run once its write committed (write.Plan.OnCommit): a charge
// whose write rolls back counts nothing.
func (m *Meter) count(operation string, price int64) func() {
	return func() {
		m.metrics.credits.WithLabelValues(operation).Add(float64(price))
		m.metrics.charges.WithLabelValues(operation).Inc()
	}
}

// Metrics are the meter's counters, for the host's /metrics.
func (m *Meter) Metrics() plugin.Metrics {
	return plugin.Metrics{Module: ID, Collectors: []prometheus.Collector{m.metrics.credits, m.metrics.charges}}
}
