package host

import (
	"github.com/gin-gonic/gin"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"gorm.io/gorm"
)

// httpMetrics are the request metrics of every listener.
type httpMetrics struct {
	requests *prometheus.CounterVec
	duration *prometheus.HistogramVec
}

// newRegistry returns the process's metrics registry: HTTP requests by listener, route and status,
// latency histograms, the database pool, and the Go runtime and process.
func newRegistry(db *gorm.DB) (*prometheus.Registry, *httpMetrics, error) {
	reg := prometheus.NewRegistry()
	m := &httpMetrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "svc_http_requests_total", Help: "HTTP requests answered, by listener, method, route and status.",
		}, []string{"listener", "method", "route", "status"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "svc_http_request_duration_seconds", Help: "Time to answer an HTTP request, by listener, method and route.",
			Buckets: []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10},
		}, []string{"listener", "method", "route"}),
	}
	sqlDB, err := db.DB()
	if err != nil {
		return nil, nil, err
	}
	for _, c := range []prometheus.Collector{
		m.requests, m.duration,
		collectors.NewDBStatsCollector(sqlDB, "svc"),
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
	} {
		if err := reg.Register(c); err != nil {
			return nil, nil, err
		}
	}
	return reg, m, nil
}

func metricsHandler(reg *prometheus.Registry) gin.HandlerFunc {
	return gin.WrapH(promhttp.HandlerFor(reg, promhttp.HandlerOpts{Registry: reg}))
}
