package testkit

import (
	"sort"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/svcforum/svc/contracts/plugin"
)

// Counters gathers the counters a module contributes to /metrics (m) and returns each series' value
// under its name and labels as the exposition format writes them, labels sorted:
// `svc_writes_total{kind="create_thread"}`. A series that was never counted is absent.
func Counters(t testing.TB, m plugin.Metrics) map[string]float64 {
	t.Helper()
	reg := prometheus.NewRegistry()
	reg.MustRegister(m.Collectors...)
	families, err := reg.Gather()
	if err != nil {
		t.Fatalf("gather the metrics of %s: %v", m.Module, err)
	}
	out := map[string]float64{}
	for _, f := range families {
		for _, s := range f.GetMetric() {
			if s.GetCounter() == nil {
				continue
			}
			var labels []string
			for _, l := range s.GetLabel() {
				labels = append(labels, l.GetName()+`="`+l.GetValue()+`"`)
			}
			sort.Strings(labels)
			out[f.GetName()+"{"+strings.Join(labels, ",")+"}"] = s.GetCounter().GetValue()
		}
	}
	return out
}
