package host

import (
	"cmp"
	"fmt"
	"log/slog"
	"runtime"
	"runtime/debug"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"go.uber.org/fx"
	"gorm.io/gorm"

	"github.com/svcforum/svc/contracts/plugin"
)

// httpMetrics are the request metrics of every listener.
type httpMetrics struct {
	requests *prometheus.CounterVec
	duration *prometheus.HistogramVec
	signed   *prometheus.CounterVec
	series   sync.Map // seriesKey to *series: each request finds its children without hashing its labels
}

// seriesKey names the children of requests and duration that one kind of request counts on. Every
// part is bounded (a listener, metricMethod, a route pattern or "unmatched", a status), so the map is.
type seriesKey struct {
	listener, method, route string
	status                  int
}

type series struct {
	requests prometheus.Counter
	duration prometheus.Observer
}

// observe counts one request of key that took took.
func (m *httpMetrics) observe(key seriesKey, took time.Duration) {
	s, ok := m.series.Load(key)
	if !ok {
		s, _ = m.series.LoadOrStore(key, &series{
			requests: m.requests.WithLabelValues(key.listener, key.method, key.route, strconv.Itoa(key.status)),
			duration: m.duration.WithLabelValues(key.listener, key.method, key.route),
		})
	}
	s.(*series).requests.Inc()
	s.(*series).duration.Observe(took.Seconds())
}

type registryParams struct {
	fx.In
	DB      *gorm.DB
	Jobs    *Jobs
	Modules []plugin.Metrics `group:"svc.metrics"`
}

// newRegistry returns the process's metrics registry: HTTP requests by listener, route and status,
// latency histograms, signed requests by outcome, the job queue, the database pool, the Go runtime and
// process, and the collectors the modules contribute (plugin.Metrics). A metric registered twice
// stops start-up.
func newRegistry(p registryParams) (*prometheus.Registry, *httpMetrics, error) {
	reg := prometheus.NewRegistry()
	m := &httpMetrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "svc_http_requests_total", Help: "HTTP requests answered, by listener, method, route and status.",
		}, []string{"listener", "method", "route", "status"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "svc_http_request_duration_seconds", Help: "Time to answer an HTTP request, by listener, method and route.",
			Buckets: []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10},
		}, []string{"listener", "method", "route"}),
		signed: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "svc_signed_requests_total", Help: `Requests to the signed agent plane, by outcome: "ok", or the code of the problem answered (the guard's refusals included).`,
		}, []string{"code"}),
	}
	sqlDB, err := p.DB.DB()
	if err != nil {
		return nil, nil, err
	}
	for _, c := range append([]prometheus.Collector{
		m.requests, m.duration, m.signed, buildInfo(),
		collectors.NewDBStatsCollector(sqlDB, "svc"),
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
	}, p.Jobs.collectors()...) {
		if err := reg.Register(c); err != nil {
			return nil, nil, err
		}
	}
	mods := slices.Clone(p.Modules)
	slices.SortFunc(mods, func(a, b plugin.Metrics) int { return cmp.Compare(a.Module, b.Module) })
	for _, mod := range mods {
		for _, c := range mod.Collectors {
			if err := reg.Register(c); err != nil {
				return nil, nil, fmt.Errorf("module %s: metrics: %w", mod.Module, err)
			}
		}
	}
	return reg, m, nil
}

// buildInfo is svc_build_info, 1, labelled with the binary's release (Version), the Go release that
// built it and the commit it was built from (vcs.revision, "-dirty" when the tree had changes; empty
// when the build did not record it, as with -buildvcs=false), so that a dashboard tells which build
// each replica runs.
func buildInfo() prometheus.Collector {
	goVersion, revision := runtime.Version(), ""
	if bi, ok := debug.ReadBuildInfo(); ok {
		goVersion = bi.GoVersion
		var modified bool
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				revision = s.Value
			case "vcs.modified":
				modified = s.Value == "true"
			}
		}
		if revision != "" && modified {
			revision += "-dirty"
		}
	}
	g := prometheus.NewGauge(prometheus.GaugeOpts{
		Name:        "svc_build_info",
		Help:        "Always 1, labelled with the svc release, the Go release that built the binary and its commit.",
		ConstLabels: prometheus.Labels{"version": Version, "go_version": goVersion, "revision": revision},
	})
	g.Set(1)
	return g
}

// metricsHandler serves the registry. A collector that fails (the job queue's, when the database does
// not answer) is logged and left out of the answer; the other metrics are still served.
func metricsHandler(reg *prometheus.Registry, log *slog.Logger) gin.HandlerFunc {
	return gin.WrapH(promhttp.HandlerFor(reg, promhttp.HandlerOpts{
		Registry:      reg,
		ErrorHandling: promhttp.ContinueOnError,
		ErrorLog:      slog.NewLogLogger(log.Handler(), slog.LevelWarn),
	}))
}
