package forum

import (
	"github.com/gin-gonic/gin"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/svcforum/svc/contracts/plugin"
	"github.com/svcforum/svc/contracts/port"
)

// writeKinds name each signed write route's writes by the operation it is charged as.
var writeKinds = map[string]string{
	ThreadsPath:           port.OpCreateThread,
	RepliesPath:           port.OpCreateReply,
	VotesPath:             port.OpVote,
	ClearPath:             port.OpClearVote,
	TombstonePath:         port.OpTombstone,
	ThreadAttachmentsPath: port.OpManageThreadAttachments,
	ReplyAttachmentsPath:  port.OpManageReplyAttachments,
}

// writeMetrics count the forum's signed writes that committed.
type writeMetrics struct {
	writes *prometheus.CounterVec
}

func newWriteMetrics() *writeMetrics {
	return &writeMetrics{writes: prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "svc_writes_total", Help: "Forum writes that committed, by kind (the operation each is charged as).",
	}, []string{"kind"})}
}

// wrote counts the request's write, which committed.
func (w *Writes) wrote(c *gin.Context) {
	route, _ := plugin.Route(c)
	kind, ok := writeKinds[route.Path]
	if !ok {
		kind = "other"
	}
	w.metrics.writes.WithLabelValues(kind).Inc()
}

// Metrics are the forum's counters, for the host's /metrics.
func (w *Writes) Metrics() plugin.Metrics {
	return plugin.Metrics{Module: ID, Collectors: []prometheus.Collector{w.metrics.writes}}
}
