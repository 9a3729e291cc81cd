package host

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gin-gonic/gin"
	"go.uber.org/fx"

	"github.com/svcforum/svc/contracts/plugin"
)

func runMain(t *testing.T, env map[string]string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	for k, v := range env {
		t.Setenv(k, v)
	}
	var out, errOut bytes.Buffer
	code = Main(context.Background(), append([]string{"svc"}, args...), &out, &errOut)
	return code, out.String(), errOut.String()
}

func sqliteEnv(t *testing.T) map[string]string {
	return map[string]string{"SVC_DATABASE_URL": "sqlite:" + filepath.Join(t.TempDir(), "svc.db"), "SVC_ONBOARDING_DRAFT_KEY": testDraftKey}
}

func TestUnknownModuleStopsStartUpWithOneLine(t *testing.T) {
	code, _, stderr := runMain(t, map[string]string{"SVC_MODULES": "nope"}, "serve")
	if code == 0 {
		t.Fatal("exit code 0")
	}
	lines := strings.Split(strings.TrimSpace(stderr), "\n")
	if len(lines) != 1 || !strings.Contains(lines[0], `unknown module "nope"`) || !strings.HasPrefix(lines[0], "svc: ") {
		t.Fatalf("stderr %q", stderr)
	}
}

func TestBadConfigurationStopsWithOneLine(t *testing.T) {
	cases := map[string]map[string]string{
		"database url":     {"SVC_DATABASE_URL": "mysql://x"},
		"base url":         {"SVC_BASE_URL": "localhost:8080"},
		"log level":        {"SVC_LOG_LEVEL": "loud"},
		"log format":       {"SVC_LOG_FORMAT": "xml"},
		"proxies":          {"SVC_TRUSTED_PROXIES": "not-an-ip", "SVC_PUBLIC_ADDR": "127.0.0.1:0", "SVC_AGENT_EDGE_ADDR": "127.0.0.1:0", "SVC_ADMIN_ADDR": "127.0.0.1:0"},
		"duration":         {"SVC_SHUTDOWN_TIMEOUT": "soon"},
		"agent url":        {"SVC_AGENT_EDGE_URL": "agents.example:8081"},
		"public rate":      {"SVC_PUBLIC_RATE": "0"},
		"db timeout":       {"SVC_DB_TIMEOUT": "0s"},
		"no cursor key":    {"SVC_PUBLIC_ADDR": "127.0.0.1:0", "SVC_AGENT_EDGE_ADDR": "127.0.0.1:0", "SVC_ADMIN_ADDR": "127.0.0.1:0"},
		"short cursor key": {"SVC_CURSOR_KEY": "c2hvcnQ=", "SVC_PUBLIC_ADDR": "127.0.0.1:0", "SVC_AGENT_EDGE_ADDR": "127.0.0.1:0", "SVC_ADMIN_ADDR": "127.0.0.1:0"},
		"no draft key":     {"SVC_CURSOR_KEY": testCursorKey, "SVC_ONBOARDING_DRAFT_KEY": "", "SVC_PUBLIC_ADDR": "127.0.0.1:0", "SVC_AGENT_EDGE_ADDR": "127.0.0.1:0", "SVC_ADMIN_ADDR": "127.0.0.1:0"},
		"short draft key":  {"SVC_CURSOR_KEY": testCursorKey, "SVC_ONBOARDING_DRAFT_KEY": "c2hvcnQ=", "SVC_PUBLIC_ADDR": "127.0.0.1:0", "SVC_AGENT_EDGE_ADDR": "127.0.0.1:0", "SVC_ADMIN_ADDR": "127.0.0.1:0"},
	}
	for name, env := range cases {
		t.Run(name, func(t *testing.T) {
			for k, v := range sqliteEnv(t) {
				if _, set := env[k]; !set {
					env[k] = v
				}
			}
			code, _, stderr := runMain(t, env, "serve")
			if code == 0 || strings.Count(strings.TrimSpace(stderr), "\n") != 0 || !strings.HasPrefix(stderr, "svc: ") {
				t.Fatalf("exit %d, stderr %q", code, stderr)
			}
			if strings.Contains(name, "cursor key") && !strings.Contains(stderr, "SVC_CURSOR_KEY") {
				t.Fatalf("the line does not name SVC_CURSOR_KEY: %q", stderr)
			}
			if strings.Contains(name, "draft key") && !strings.Contains(stderr, "--onboarding-draft-key") {
				t.Fatalf("the line does not name --onboarding-draft-key: %q", stderr)
			}
		})
	}
}

// One-off admin commands need none of the keys serving needs: an operator's shell lacks them.
func TestAdminNeedsNoServingKeys(t *testing.T) {
	env := sqliteEnv(t)
	delete(env, "SVC_ONBOARDING_DRAFT_KEY")
	if code, _, stderr := runMain(t, env, "migrate"); code != 0 {
		t.Fatalf("migrate: %d %s", code, stderr)
	}
	if code, stdout, stderr := runMain(t, env, "admin", "--json", "application", "list"); code != 0 || !strings.HasPrefix(stdout, `{"applications":`) {
		t.Fatalf("application list without a draft key: exit %d, %q %s", code, stdout, stderr)
	}
	if code, stdout, stderr := runMain(t, env, "admin", "--json", "draft-key", "status"); code != 0 || strings.TrimSpace(stdout) != `{"waiting":{},"configured":null}` {
		t.Fatalf("draft-key status without a draft key: exit %d, %q %s", code, stdout, stderr)
	}
}

func TestMigrateAndAdminModules(t *testing.T) {
	env := sqliteEnv(t)
	if code, _, stderr := runMain(t, env, "migrate"); code != 0 {
		t.Fatalf("migrate: %d %s", code, stderr)
	}
	code, stdout, stderr := runMain(t, env, "admin", "modules", "--json")
	if code != 0 {
		t.Fatalf("admin modules: %d %s", code, stderr)
	}
	var got struct {
		Modules []struct {
			ID      string `json:"id"`
			Version string `json:"version"`
		} `json:"modules"`
	}
	if err := json.Unmarshal([]byte(stdout), &got); err != nil || strings.Count(stdout, "\n") != 1 {
		t.Fatalf("stdout %q: %v", stdout, err)
	}
	if len(got.Modules) != len(Catalog()) || got.Modules[0].ID != IDs(Catalog())[0] || got.Modules[0].Version == "" {
		t.Fatalf("modules %+v", got.Modules)
	}
	// Without --json the same result is printed for people.
	_, stdout, _ = runMain(t, env, "admin", "modules")
	if !strings.HasPrefix(stdout, "modules: [") {
		t.Fatalf("human output %q", stdout)
	}
}

func TestVersionAndHelp(t *testing.T) {
	code, stdout, _ := runMain(t, nil, "version")
	if code != 0 || !strings.HasPrefix(stdout, "svc "+Version+"\n") || !strings.Contains(stdout, "discovery ") {
		t.Fatalf("version: %d %q", code, stdout)
	}
	code, stdout, _ = runMain(t, nil, "--help")
	if code != 0 {
		t.Fatalf("--help exit %d", code)
	}
	// Every flag's environment variable is listed.
	for _, env := range []string{"SVC_DATABASE_URL", "SVC_MODULES", "SVC_PUBLIC_ADDR", "SVC_AGENT_EDGE_ADDR", "SVC_AGENT_PRIVATE_ADDR", "SVC_ADMIN_ADDR", "SVC_BASE_URL", "SVC_NO_MIGRATE", "SVC_TRUSTED_PROXIES", "SVC_DB_MAX_OPEN_CONNS"} {
		if !strings.Contains(stdout, "$"+env) {
			t.Errorf("--help does not list %s", env)
		}
	}
	code, _, stderr := runMain(t, nil, "no-such-command")
	if code == 0 || stderr == "" {
		t.Fatalf("unknown command: %d %q", code, stderr)
	}
}

func TestSelect(t *testing.T) {
	cat := []plugin.Descriptor{
		{ID: "b", Module: func() fx.Option { return fx.Options() }},
		{ID: "a", Module: func() fx.Option { return fx.Options() }},
		{ID: "forum", Requires: []string{"a"}, Module: func() fx.Option { return fx.Options() }},
	}
	got, err := Select(cat, nil)
	if err != nil || len(got) != 3 || got[0].ID != "a" || got[1].ID != "b" || got[2].ID != "forum" {
		t.Fatalf("Select all = %v, %v", got, err)
	}
	for _, tc := range []struct {
		ids  []string
		want string
	}{
		{[]string{"nope"}, `unknown module "nope"`},
		{[]string{"a", "a"}, `named twice`},
		{[]string{"forum", "b"}, `module "forum" requires module "a"`},
	} {
		if _, err := Select(cat, tc.ids); err == nil || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("Select(%v) = %v, want %q", tc.ids, err, tc.want)
		}
	}
	if _, err := Select(append(cat, cat[0]), nil); err == nil {
		t.Error("a module registered twice was accepted")
	}
}

// Every documented deployment profile assembles: no missing or duplicate dependency.
func TestProfilesValidate(t *testing.T) {
	for name, ids := range Profiles() {
		t.Run(name, func(t *testing.T) {
			mods, err := Select(Catalog(), ids)
			if err != nil {
				t.Fatal(err)
			}
			if err := fx.ValidateApp(Serve(testConfig(t, "sqlite"), testLogger(t), mods)); err != nil {
				t.Fatalf("ValidateApp: %v", err)
			}
		})
	}
}

func routesOption(module string, plane plugin.Plane, path string) fx.Option {
	return fx.Provide(plugin.AsRoutes(func() plugin.Routes {
		return plugin.Routes{Module: module, Plane: plane, Mount: func(r gin.IRouter) {
			r.GET(path, func(c *gin.Context) { c.Status(204) })
		}}
	}))
}

// agentRouteOption contributes one agent-plane route of module.
func agentRouteOption(module string, route plugin.AgentRoute) fx.Option {
	if route.Handlers == nil {
		route.Handlers = []gin.HandlerFunc{func(c *gin.Context) { c.Status(204) }}
	}
	return fx.Provide(plugin.AsRoutes(func() plugin.Routes {
		return plugin.Routes{Module: module, Plane: plugin.Agent, Agent: []plugin.AgentRoute{route}}
	}))
}

// discoveryOnly is a deployment without sigv1: nothing guards the agent plane.
func discoveryOnly(t testing.TB) []plugin.Descriptor {
	mods, err := Select(Catalog(), []string{"discovery"})
	if err != nil {
		t.Fatal(err)
	}
	return mods
}

func TestStartUpRefusesConflicts(t *testing.T) {
	cases := map[string][]fx.Option{
		"duplicate route":               {routesOption("one", plugin.Public, "/x"), routesOption("two", plugin.Public, "/x")},
		"taken by a module":             {routesOption("one", plugin.Public, "/.well-known/svc")},
		"agent routes mounted directly": {routesOption("one", plugin.Agent, "/thing")},
		"a write that is a GET":         {agentRouteOption("one", plugin.AgentRoute{Method: "GET", Path: "/thing", Write: true})},
		"an uncounted write":            {agentRouteOption("one", plugin.AgentRoute{Method: "POST", Path: "/thing", Write: true, Uncounted: true})},
		"an agent route taken twice": {
			agentRouteOption("one", plugin.AgentRoute{Method: "POST", Path: "/conformance"}),
		},
		"a location published twice": {fx.Provide(plugin.AsPublications(func() []plugin.Publication {
			return []plugin.Publication{{Module: "one", Name: "skill", Path: "/other/SKILL.md"}}
		}))},
	}
	for name, extra := range cases {
		t.Run(name, func(t *testing.T) {
			app := fx.New(Serve(testConfig(t, "sqlite"), testLogger(t), allModules(t)), fx.Options(extra...), fx.NopLogger)
			if app.Err() == nil {
				t.Fatal("the application assembled")
			}
		})
	}
	t.Run("agent routes without a guard", func(t *testing.T) {
		app := fx.New(Serve(testConfig(t, "sqlite"), testLogger(t), discoveryOnly(t)),
			agentRouteOption("one", plugin.AgentRoute{Method: "GET", Path: "/thing"}), fx.NopLogger)
		if err := app.Err(); err == nil || !strings.Contains(err.Error(), "enable sigv1") {
			t.Fatalf("assembled, or not for the missing guard: %v", err)
		}
	})
}

func TestAgentRoutesBehindTheGuardOnEveryChannel(t *testing.T) {
	// A stand-in guard shows what the host tells the real one: the channel and the route's declaration.
	guard := fx.Supply(&plugin.Guard{Module: "test", Handlers: []gin.HandlerFunc{func(c *gin.Context) {
		route, ok := plugin.Route(c)
		c.Header("X-Guarded-Channel", plugin.Channel(c))
		c.Header("X-Route", fmt.Sprintf("%v %s %v", ok, route.Path, route.Write))
		c.Next()
	}}})
	r := start(t, testConfig(t, "sqlite"), discoveryOnly(t), guard,
		agentRouteOption("one", plugin.AgentRoute{Method: "GET", Path: "/thing"}),
		agentRouteOption("two", plugin.AgentRoute{Method: "POST", Path: "/write", Write: true}))
	for listener, channel := range map[string]string{ListenerAgentEdge: plugin.ChannelEdge, ListenerAgentPrivate: plugin.ChannelPrivate} {
		res := do(t, "GET", r.url(listener, "/agent-api/v1/thing"), nil)
		if res.status != 204 || res.header.Get("X-Guarded-Channel") != channel || res.header.Get("X-Route") != "true /thing false" {
			t.Fatalf("%s: %d, channel %q, route %q", listener, res.status, res.header.Get("X-Guarded-Channel"), res.header.Get("X-Route"))
		}
		res = do(t, "POST", r.url(listener, "/agent-api/v1/write"), nil)
		if res.status != 204 || res.header.Get("X-Route") != "true /write true" {
			t.Fatalf("%s: %d, route %q", listener, res.status, res.header.Get("X-Route"))
		}
	}
	// The agent plane is not on the public listener.
	checkProblem(t, do(t, "GET", r.url(ListenerPublic, "/agent-api/v1/thing"), nil), 404, "agent_plane_elsewhere")
}

func TestTakenPortFailsStart(t *testing.T) {
	r := start(t, testConfig(t, "sqlite"), allModules(t))
	cfg := testConfig(t, "sqlite")
	cfg.PublicAddr = r.listeners.Addr(ListenerPublic)
	app := fx.New(Serve(cfg, testLogger(t), allModules(t)), fx.NopLogger)
	if err := app.Start(context.Background()); err == nil || !strings.Contains(err.Error(), "listen public") {
		t.Fatalf("start on a taken port: %v", err)
	}
}
