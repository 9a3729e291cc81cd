package host

import (
	"context"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/svcforum/svc/contracts/plugin"
	"github.com/svcforum/svc/contracts/problem"
	"github.com/svcforum/svc/contracts/render"
)

type checkResult struct {
	Name   string `json:"name"`
	Status string `json:"status"`
	Error  string `json:"error,omitempty"`
}

// live answers while the process runs; it touches nothing else.
func live(c *gin.Context) {
	render.JSON(c, http.StatusOK, gin.H{"status": "live"})
}

// ready runs every readiness check at once, each bounded by timeout, and answers 503 naming the failing
// ones. The reason a check failed is logged, not published: it may name hosts or users.
func ready(checks []plugin.Readiness, timeout time.Duration, log *slog.Logger, d *drain) gin.HandlerFunc {
	checks = slices.Clone(checks)
	slices.SortFunc(checks, func(a, b plugin.Readiness) int { return strings.Compare(a.Name, b.Name) })
	return func(c *gin.Context) {
		if d.draining() {
			render.Problem(c, problem.New(problem.NotReady, "Shutting down: this replica takes no new work; use another.").With("retry_after_seconds", 1))
			return
		}
		results := make([]checkResult, len(checks))
		var wg sync.WaitGroup
		for i, chk := range checks {
			wg.Go(func() {
				ctx, cancel := context.WithTimeout(c.Request.Context(), timeout)
				defer cancel()
				results[i] = checkResult{Name: chk.Name, Status: "ok"}
				if err := runCheck(ctx, chk); err != nil {
					results[i] = checkResult{Name: chk.Name, Status: "failing", Error: "check failed"}
					if ctx.Err() != nil {
						results[i].Error = "check timed out after " + timeout.String()
					}
					log.Warn("readiness check failing", "check", chk.Name, "error", err)
				}
			})
		}
		wg.Wait()
		var failing []string
		for _, r := range results {
			if r.Status != "ok" {
				failing = append(failing, r.Name)
			}
		}
		if len(failing) > 0 {
			render.Problem(c, problem.Newf(problem.NotReady, "Failing readiness checks: %s.", strings.Join(failing, ", ")).With("checks", results))
			return
		}
		render.JSON(c, http.StatusOK, gin.H{"status": "ready", "checks": results})
	}
}

// runCheck returns when the check does or ctx ends, so one stuck check cannot hold the probe.
func runCheck(ctx context.Context, chk plugin.Readiness) error {
	done := make(chan error, 1)
	go func() { done <- chk.Check(ctx) }()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// drain is the state of a replica asked to stop: from then on /health/ready answers 503, so that load
// balancers stop sending it work while it finishes what it has (the lame-duck period).
type drain struct{ on atomic.Bool }

func newDrain() *drain { return &drain{} }

// start begins the lame-duck period.
func (d *drain) start() { d.on.Store(true) }

func (d *drain) draining() bool { return d != nil && d.on.Load() }
