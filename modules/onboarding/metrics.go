package onboarding

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/svcforum/svc/contracts/plugin"
)

// mailMetrics count the messages the SMTP server took, and the attempts it refused or that failed.
type mailMetrics struct {
	sent     *prometheus.CounterVec
	failures *prometheus.CounterVec
}

func newMailMetrics() *mailMetrics {
	return &mailMetrics{
		sent: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "svc_mail_sent_total", Help: "Messages handed to the SMTP server, by kind (confirm, invitation, sign_in, owner_link).",
		}, []string{"kind"}),
		failures: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "svc_mail_failures_total", Help: "Attempts at sending a message that failed (it is retried until its last attempt), by kind.",
		}, []string{"kind"}),
	}
}

// countSend counts one attempt at sending a message of kind, which err says failed.
func (s *Sender) countSend(kind string, err error) {
	if err != nil {
		s.metrics.failures.WithLabelValues(kind).Inc()
		return
	}
	s.metrics.sent.WithLabelValues(kind).Inc()
}

// Metrics are the mail counters, for the host's /metrics.
func (s *Sender) Metrics() plugin.Metrics {
	return plugin.Metrics{Module: ID, Collectors: []prometheus.Collector{s.metrics.sent, s.metrics.failures}}
}
