package host

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gin-gonic/gin"
	"go.uber.org/fx"
	"go.uber.org/fx/fxtest"

	"github.com/svcforum/svc/contracts/plugin"
	"github.com/svcforum/svc/contracts/schema"
	"github.com/svcforum/svc/database/dbtest"
)

func TestMain(m *testing.M) { dbtest.Main(m) }

// testConfig listens on free loopback ports and uses a fresh database of dialect.
func testConfig(t *testing.T, dialect string) Config {
	cfg := DefaultConfig()
	cfg.DatabaseURL = dbtest.URL(t, dialect)
	cfg.PublicAddr = "127.0.0.1:0"
	cfg.AgentEdgeAddr = "127.0.0.1:0"
	cfg.AgentPrivateAddr = "127.0.0.1:0"
	cfg.AdminAddr = "127.0.0.1:0"
	cfg.DatabaseWait = 10 * time.Second
	cfg.ShutdownTimeout = 10 * time.Second
	cfg.ReadyTimeout = time.Second
	cfg.ShutdownDelay = 0
	cfg.CursorKeys = testCursorKey
	cfg.Settings = testSettings()
	// The tests read far faster than a person; the limit itself is tested on its own.
	cfg.PublicRate, cfg.PublicBurst = 1e6, 1e6
	cfg.PublicDocumentsRate, cfg.PublicDocumentsBurst = 1e6, 1e6
	return cfg
}

// testCursorKey seals the cursors of the tests' services.
const testCursorKey = "dGVzdCBjdXJzb3Iga2V5OiAzMiBieXRlcyBvZiBub3RoaW5nIHNlY3JldA=="

// testDraftKey encrypts the personality drafts of the tests' services.
const testDraftKey = "dGVzdCBkcmFmdCBrZXksIDMyIGJ5dGVzLCBwdWJsaWM="

// testSettings are the modules' settings of the tests' services: the defaults and the keys serving
// needs.
func testSettings() plugin.Settings {
	return settings{DefaultSettings(), map[string]any{"onboarding-draft-key": testDraftKey, "media-dir": testMediaDir}}
}

// testMediaDir keeps the images of the tests that store them on disk out of the source tree (the
// default is ./var/media).
var testMediaDir = filepath.Join(os.TempDir(), "svc-host-test-media")

func testLogger(t *testing.T) *slog.Logger {
	return slog.New(slog.NewTextHandler(tWriter{t}, &slog.HandlerOptions{Level: slog.LevelWarn}))
}

type tWriter struct{ t *testing.T }

func (w tWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimSpace(string(p)))
	return len(p), nil
}

// running is the assembled service started in-process.
type running struct {
	app       *fxtest.App
	listeners *Listeners
}

func (r running) url(listener, path string) string {
	return "http://" + r.listeners.Addr(listener) + path
}

func start(t *testing.T, cfg Config, mods []plugin.Descriptor, extra ...fx.Option) running {
	t.Helper()
	var r running
	r.app = fxtest.New(t, Serve(cfg, testLogger(t), mods), fx.Populate(&r.listeners), fx.Options(extra...))
	r.app.RequireStart()
	t.Cleanup(func() { r.app.RequireStop() })
	return r
}

func allModules(t testing.TB) []plugin.Descriptor {
	mods, err := Select(Catalog(), nil)
	if err != nil {
		t.Fatal(err)
	}
	return mods
}

type response struct {
	status int
	header http.Header
	body   []byte
}

func do(t *testing.T, method, url string, header map[string]string) response {
	t.Helper()
	return fetch(t, http.DefaultClient, method, url, header)
}

// fetch sends one request with c and reads the whole answer.
func fetch(t *testing.T, c *http.Client, method, url string, header map[string]string) response {
	t.Helper()
	req, err := http.NewRequest(method, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range header {
		req.Header.Set(k, v)
	}
	res, err := c.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer res.Body.Close()
	body, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	return response{res.StatusCode, res.Header, body}
}

func checkProblem(t *testing.T, r response, status int, code string) map[string]any {
	t.Helper()
	if r.status != status {
		t.Fatalf("status %d, want %d: %s", r.status, status, r.body)
	}
	if ct := r.header.Get("Content-Type"); ct != "application/problem+json" {
		t.Fatalf("Content-Type %q", ct)
	}
	if err := schema.Published().Validate("problem", r.body); err != nil {
		t.Fatalf("problem body does not match its schema: %v\n%s", err, r.body)
	}
	var p map[string]any
	if err := json.Unmarshal(r.body, &p); err != nil {
		t.Fatal(err)
	}
	if p["code"] != code || p["type"] != "urn:svc:problem:"+code || p["request_id"] != r.header.Get(RequestIDHeader) {
		t.Fatalf("problem %v (X-Request-Id %q)", p, r.header.Get(RequestIDHeader))
	}
	return p
}

func TestAssembledService(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, dialect string) {
		r := start(t, testConfig(t, dialect), allModules(t))

		for _, l := range []string{ListenerPublic, ListenerAgentEdge, ListenerAgentPrivate, ListenerAdmin} {
			res := do(t, "GET", r.url(l, "/health/live"), nil)
			if res.status != 200 || schema.Published().Validate("liveness-response", res.body) != nil {
				t.Fatalf("%s /health/live: %d %s", l, res.status, res.body)
			}
			res = do(t, "GET", r.url(l, "/health/ready"), nil)
			if res.status != 200 {
				t.Fatalf("%s /health/ready: %d %s", l, res.status, res.body)
			}
			if err := schema.Published().Validate("readiness-response", res.body); err != nil {
				t.Fatalf("readiness body: %v: %s", err, res.body)
			}
			if !strings.Contains(string(res.body), `"name":"database","status":"ok"`) {
				t.Fatalf("readiness lacks the database check: %s", res.body)
			}
		}

		// Unknown routes and wrong methods are problems on every listener.
		for _, l := range []string{ListenerPublic, ListenerAgentEdge, ListenerAdmin} {
			checkProblem(t, do(t, "GET", r.url(l, "/no/such/path"), nil), 404, "not_found")
			res := do(t, "POST", r.url(l, "/health/live"), nil)
			checkProblem(t, res, 405, "method_not_allowed")
			if res.header.Get("Allow") == "" {
				t.Fatalf("405 without Allow header")
			}
		}
		// No redirect to a "fixed" path: a signed target is exact.
		checkProblem(t, do(t, "GET", r.url(ListenerPublic, "/health/live/"), nil), 404, "not_found")

		// Request IDs: a well-formed one is kept, anything else replaced.
		res := do(t, "GET", r.url(ListenerPublic, "/health/live"), map[string]string{RequestIDHeader: "abc-123.x:y_z"})
		if got := res.header.Get(RequestIDHeader); got != "abc-123.x:y_z" {
			t.Fatalf("kept request id = %q", got)
		}
		res = do(t, "GET", r.url(ListenerPublic, "/health/live"), map[string]string{RequestIDHeader: "bad id\twith spaces"})
		if got := res.header.Get(RequestIDHeader); got == "" || strings.ContainsAny(got, " \t") {
			t.Fatalf("replaced request id = %q", got)
		}

		// 406 for another version of the svc media type only.
		checkProblem(t, do(t, "GET", r.url(ListenerPublic, "/health/live"), map[string]string{"Accept": "application/svc+json; version=2"}), 406, "not_acceptable")
		res = do(t, "GET", r.url(ListenerPublic, "/health/live"), map[string]string{"Accept": "application/svc+json; version=1"})
		if res.status != 200 || res.header.Get("Content-Type") != "application/svc+json; version=1" {
			t.Fatalf("svc+json: %d %q", res.status, res.header.Get("Content-Type"))
		}

		// An invented method is counted, without a series of its own.
		checkProblem(t, do(t, "FOO1", r.url(ListenerPublic, "/health/live"), nil), 405, "method_not_allowed")
		if v := res.header.Get("Vary"); v != "Accept" {
			t.Fatalf("Vary = %q", v)
		}

		// Metrics on the admin listener only.
		res = do(t, "GET", r.url(ListenerAdmin, "/metrics"), nil)
		if strings.Contains(string(res.body), "FOO1") || !strings.Contains(string(res.body), `method="other",route="unmatched",status="405"`) {
			t.Errorf("invented method in metrics")
		}
		for _, want := range []string{
			`svc_http_requests_total{listener="public",method="GET",route="/health/live",status="200"}`,
			`svc_http_request_duration_seconds_bucket{listener="public",method="GET",route="/health/ready"`,
			`svc_http_requests_total{listener="public",method="GET",route="unmatched",status="404"}`,
			"go_goroutines", `go_sql_max_open_connections{db_name="svc"}`, `go_sql_in_use_connections{db_name="svc"}`,
		} {
			if !strings.Contains(string(res.body), want) {
				t.Errorf("metrics lack %s", want)
			}
		}
		checkProblem(t, do(t, "GET", r.url(ListenerPublic, "/metrics"), nil), 404, "not_found")
	})
}

func TestPanicIsAProblemThatLeaksNothing(t *testing.T) {
	panicky := fx.Provide(plugin.AsRoutes(func() plugin.Routes {
		return plugin.Routes{Module: "panicky", Plane: plugin.Public, Mount: func(r gin.IRouter) {
			r.GET("/boom", func(*gin.Context) { panic("secret-token-123 leaked?") })
		}}
	}))
	r := start(t, testConfig(t, "sqlite"), allModules(t), panicky)
	res := do(t, "GET", r.url(ListenerPublic, "/boom"), nil)
	checkProblem(t, res, 500, "internal_error")
	if strings.Contains(string(res.body), "secret-token-123") || strings.Contains(string(res.body), "goroutine") {
		t.Fatalf("500 leaks: %s", res.body)
	}
	// The process survives.
	if do(t, "GET", r.url(ListenerPublic, "/health/live"), nil).status != 200 {
		t.Fatal("not live after a panic")
	}
}

// Stopping the service lets an in-flight request finish, then refuses new connections.
func TestGracefulShutdownDrains(t *testing.T) {
	entered, release := make(chan struct{}), make(chan struct{})
	slow := fx.Provide(plugin.AsRoutes(func() plugin.Routes {
		return plugin.Routes{Module: "slow", Plane: plugin.Public, Mount: func(r gin.IRouter) {
			r.GET("/slow", func(c *gin.Context) {
				close(entered)
				<-release
				c.String(200, "finished")
			})
		}}
	}))
	cfg := testConfig(t, "sqlite")
	var ls *Listeners
	app := fx.New(Serve(cfg, testLogger(t), allModules(t)), fx.Populate(&ls), slow, fx.NopLogger)
	if err := app.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	url := "http://" + ls.Addr(ListenerPublic)
	type result struct {
		status int
		body   string
		err    error
	}
	got := make(chan result, 1)
	go func() {
		res, err := http.Get(url + "/slow")
		if err != nil {
			got <- result{err: err}
			return
		}
		defer res.Body.Close()
		body, err := io.ReadAll(res.Body)
		got <- result{res.StatusCode, string(body), err}
	}()
	<-entered
	stopped := make(chan error, 1)
	go func() { stopped <- app.Stop(context.Background()) }()
	// New connections are refused once shutdown has begun.
	deadline := time.Now().Add(10 * time.Second)
	for {
		res, err := http.Get(url + "/health/live")
		if err != nil {
			break
		}
		res.Body.Close()
		if time.Now().After(deadline) {
			t.Fatal("listener still accepting during shutdown")
		}
		time.Sleep(20 * time.Millisecond)
	}
	select {
	case err := <-stopped:
		t.Fatalf("stopped (%v) before the in-flight request finished", err)
	default:
	}
	close(release)
	if res := <-got; res.err != nil || res.status != 200 || res.body != "finished" {
		t.Fatalf("in-flight request: %d %q %v", res.status, res.body, res.err)
	}
	if err := <-stopped; err != nil {
		t.Fatalf("stop: %v", err)
	}
}
