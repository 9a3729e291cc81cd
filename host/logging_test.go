package host

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gin-gonic/gin"
	"go.uber.org/fx"
	"go.uber.org/fx/fxtest"
	"gorm.io/gorm"

	"github.com/svcforum/svc/contracts/plugin"
	"github.com/svcforum/svc/contracts/render"
)

// logLines collects a logger's JSON lines.
type logLines struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *logLines) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

// find returns the first "request" line for which match is true, waiting up to a few seconds for it:
// a request is logged after its answer was sent.
func (l *logLines) find(t *testing.T, match func(map[string]any) bool) map[string]any {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		l.mu.Lock()
		lines := strings.Split(l.buf.String(), "\n")
		l.mu.Unlock()
		for _, line := range lines {
			var m map[string]any
			if json.Unmarshal([]byte(line), &m) == nil && m["msg"] == "request" && match(m) {
				return m
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("no such request line in:\n%s", strings.Join(lines, "\n"))
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// The access log names the agent a signed request proved and the problem code it was answered with; a
// request whose client went away is logged as 499 at info level, not as a failure of the service.
func TestAccessLog(t *testing.T) {
	cfg := testConfig(t, "postgres")
	var lines logLines
	log := slog.New(slog.NewJSONHandler(&lines, &slog.HandlerOptions{Level: slog.LevelInfo}))
	var r running
	slow := fx.Provide(plugin.AsRoutes(func(db *gorm.DB) plugin.Routes {
		return plugin.Routes{Module: "slowtest", Plane: plugin.Public, Mount: func(g gin.IRouter) {
			g.GET("/test/slow", func(c *gin.Context) {
				var n int64
				err := db.WithContext(c.Request.Context()).Raw("SELECT 1 FROM pg_sleep(3)").Scan(&n).Error
				if err == nil {
					c.Status(200)
					return
				}
				render.Error(c, err)
			})
		}}
	}))
	r.app = fxtest.New(t, Serve(cfg, log, allModules(t)), fx.Populate(&r.listeners), slow)
	r.app.RequireStart()
	t.Cleanup(func() { r.app.RequireStop() })

	id := provision(t, map[string]string{"SVC_DATABASE_URL": cfg.DatabaseURL}, "logged-agent")
	req, err := http.NewRequest(http.MethodPost, r.url(ListenerAgentEdge, "/agent-api/v1/conformance"), strings.NewReader(`{"echo":1}`))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Idempotency-Key", "logged")
	if err := id.signer.Sign(req); err != nil {
		t.Fatal(err)
	}
	checkProblem(t, send(t, req), 422, "validation_failed")
	line := lines.find(t, func(m map[string]any) bool { return m["route"] == "/agent-api/v1/conformance" })
	if line["agent_id"] != id.agentID || line["code"] != "validation_failed" || line["status"] != 422.0 {
		t.Fatalf("access log line: %v", line)
	}

	// A secret in the path (a status link's token) is never written.
	secret := strings.Repeat("s3cr3t", 7) + "x"
	res, err := http.Get(r.url(ListenerPublic, "/onboarding/status/"+secret))
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	line = lines.find(t, func(m map[string]any) bool { return m["route"] == "/onboarding/status/:token" })
	lines.mu.Lock()
	leaked := strings.Contains(lines.buf.String(), secret)
	lines.mu.Unlock()
	if line["path"] != "/onboarding/status/(secret)" || leaked {
		t.Fatalf("a secret path: %v", line)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	slowReq, _ := http.NewRequestWithContext(ctx, http.MethodGet, r.url(ListenerPublic, "/test/slow"), nil)
	if res, err := http.DefaultClient.Do(slowReq); err == nil {
		res.Body.Close()
		t.Fatalf("the slow request was answered %d before the client left", res.StatusCode)
	}
	line = lines.find(t, func(m map[string]any) bool { return m["route"] == "/test/slow" })
	if line["status"] != float64(render.StatusClientClosedRequest) || line["level"] != "INFO" || line["error"] != nil {
		t.Fatalf("a request whose client left: %v", line)
	}
}
