package sigv1

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/svcforum/svc/contracts/plugin"
)

// How an admission was recorded (the label of svc_admissions_total).
const (
	admittedWithWrite = "with_write" // in the write's own transaction (a Planned route)
	admittedAlone     = "alone"      // in a statement of its own: before the route, or after it
)

// guardMetrics count the guard's admissions by how they were recorded: on a Planned route, "alone"
// counts the writes whose admission could not go with them (a refusal, a failed plan, a route that
// refused first or panicked), which operators can watch beside the writes.
type guardMetrics struct {
	admissions *prometheus.CounterVec
}

func newGuardMetrics() *guardMetrics {
	return &guardMetrics{admissions: prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "svc_admissions_total",
		Help: "Signed requests admitted or refused after their signature verified, by how the admission was recorded: with_write (in the write's own transaction) or alone.",
	}, []string{"how"})}
}

// Metrics are the guard's counters, for the host's /metrics.
func (g *Guard) Metrics() plugin.Metrics {
	return plugin.Metrics{Module: ID, Collectors: []prometheus.Collector{g.metrics.admissions}}
}
