package host

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
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
	"github.com/svcforum/svc/database"
	"github.com/svcforum/svc/database/dbtest"
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
	// The time a request took is in milliseconds, a number with its fraction.
	if took, ok := line["took_ms"].(float64); !ok || took <= 0 || line["took"] != nil {
		t.Fatalf("access log line's took_ms: %v", line)
	}

	// A secret in the path (a status link's token) is never written.
	secret := strings.Repeat("s3cr3t", 7) + "x"
	res, err := http.Get(r.url(ListenerPublic, "/onboarding/status/"+secret))
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	line = lines.find(t, func(m map[string]any) bool { return m["route"] == "/onboarding/status/:token" })
	if line["path"] != "/onboarding/status/(secret)" {
		t.Fatalf("a secret path: %v", line)
	}
	// Nor in a path no route matches, where no parameter says which segment is the secret; a UUID
	// stays readable.
	for path, logged := range map[string]string{
		"/onboarding/status/" + secret + "/":    "/onboarding/status/(secret)/",
		"/onboarding/confirm/" + secret + "/x":  "/onboarding/confirm/(secret)/x",
		"/nothing/" + id.agentID + "/" + secret: "/nothing/" + id.agentID + "/(secret)",
	} {
		res, err := http.Get(r.url(ListenerPublic, path))
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode != http.StatusNotFound {
			t.Fatalf("GET %s: %d, want 404", path, res.StatusCode)
		}
		line = lines.find(t, func(m map[string]any) bool { return m["route"] == "unmatched" && m["path"] == logged })
		if line["status"] != 404.0 {
			t.Fatalf("an unmatched secret path: %v", line)
		}
	}
	lines.mu.Lock()
	leaked := strings.Contains(lines.buf.String(), secret)
	lines.mu.Unlock()
	if leaked {
		t.Fatal("the access log wrote a secret")
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

// loggedPath rebuilds a matched path from its route, so a token is hidden in its own segment only (not
// wherever its text first appears), and hides what looks like a token in an unmatched path.
func TestLoggedPath(t *testing.T) {
	gin.SetMode(gin.ReleaseMode)
	e := gin.New()
	e.RedirectTrailingSlash = false // as newEngine sets it
	var got string
	record := func(c *gin.Context) { got = loggedPath(c) }
	e.GET("/onboarding/status/:token", record)
	e.GET("/things/:id/:token", record)
	e.GET("/files/*path", record)
	e.NoRoute(record)
	token := strings.Repeat("A-_z", 10) + "abc"
	uuid := "0190a8c2-4f3e-7b6a-9c1d-2e3f4a5b6c7d"
	for path, want := range map[string]string{
		"/onboarding/status/onboarding":               "/onboarding/status/(secret)",
		"/things/" + token + "/" + token:              "/things/" + token + "/(secret)",
		"/things/" + uuid + "/x":                      "/things/" + uuid + "/(secret)",
		"/files/a/" + token + "/b":                    "/files/a/(secret)/b",
		"/files/":                                     "/files/",
		"/onboarding/status/" + token + "/":           "/onboarding/status/(secret)/",
		"/x/" + uuid + "/" + token[:39] + "/" + token: "/x/" + uuid + "/" + token[:39] + "/(secret)",
		"/x/" + token + "=":                           "/x/" + token + "=",
	} {
		got = ""
		e.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(http.MethodGet, path, nil))
		if got != want {
			t.Errorf("%s: logged %s, want %s", path, got, want)
		}
	}
}

// A health probe's answer is logged at debug level, and its 503 (a failing check, or the lame-duck
// period) at info: the probe reported what it should, and a failing check logs its reason itself. Any
// other route's 5xx is an error.
func TestProbeAnswersAreNotErrors(t *testing.T) {
	_, m, err := newRegistry(registryParams{DB: dbtest.Open(t, database.SQLite), Jobs: &Jobs{failed: newJobFailures()}})
	if err != nil {
		t.Fatal(err)
	}
	var lines logLines
	e := gin.New()
	e.Use(observe("public", slog.New(slog.NewJSONHandler(&lines, &slog.HandlerOptions{Level: slog.LevelDebug})), m))
	status := http.StatusOK
	answer := func(c *gin.Context) { c.Status(status) }
	e.GET(livePath, answer)
	e.GET(readyPath, answer)
	e.GET("/other", answer)
	for _, tc := range []struct {
		path   string
		status int
		level  string
	}{
		{readyPath, http.StatusOK, "DEBUG"}, {livePath, http.StatusOK, "DEBUG"},
		{readyPath, http.StatusServiceUnavailable, "INFO"}, {"/other", http.StatusServiceUnavailable, "ERROR"},
	} {
		lines.mu.Lock()
		lines.buf.Reset()
		lines.mu.Unlock()
		status = tc.status
		e.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(http.MethodGet, tc.path, nil))
		line := lines.find(t, func(m map[string]any) bool { return m["path"] == tc.path })
		if line["level"] != tc.level || line["status"] != float64(tc.status) {
			t.Errorf("GET %s answered %d: logged %v %v, want %s", tc.path, tc.status, line["level"], line["status"], tc.level)
		}
	}
}
