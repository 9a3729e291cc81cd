package host

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/gin-gonic/gin"
	"github.com/google/uuid"
	"github.com/urfave/cli/v3"
	"go.uber.org/fx"

	"github.com/svcforum/svc/contracts/plugin"
	"github.com/svcforum/svc/database"
	"github.com/svcforum/svc/database/dbtest"
)

// runMain runs svc with args in env. Admin commands never migrate, so, as an operator does, it runs
// `svc migrate` on the database (with the env's modules) before the first admin command there;
// runMainAsIs runs exactly the command it is given.
func runMain(t *testing.T, env map[string]string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	// --help reads no database: migrating one first would create the default ./var/svc.db here.
	if len(args) > 0 && args[0] == "admin" && !slices.Contains(args, "--help") {
		migrateOnce(t, env)
	}
	return runMainAsIs(t, env, args...)
}

func runMainAsIs(t *testing.T, env map[string]string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	for k, v := range env {
		t.Setenv(k, v)
	}
	var out, errOut bytes.Buffer
	code = Main(context.Background(), append([]string{"svc"}, args...), &out, &errOut)
	return code, out.String(), errOut.String()
}

// migrated are the databases (URL and module set) runMain has migrated.
var migrated sync.Map

// migrateOnce runs `svc migrate` unless runMain did for this database and module set; a failure is
// left for the admin command to report.
func migrateOnce(t *testing.T, env map[string]string) {
	t.Helper()
	setting := func(name string) string {
		if v, ok := env[name]; ok {
			return v
		}
		return os.Getenv(name)
	}
	key := setting("SVC_DATABASE_URL") + "|" + setting("SVC_MODULES")
	if _, done := migrated.Load(key); done {
		return
	}
	if code, _, _ := runMainAsIs(t, env, "migrate"); code == 0 {
		migrated.Store(key, true)
	}
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
	if len(got.Modules) != len(Catalog())+1 || got.Modules[0].ID != IDs(Catalog())[0] || got.Modules[0].Version == "" || got.Modules[len(Catalog())].ID != "jobs" {
		t.Fatalf("modules %+v, want the catalog's then the host's jobs", got.Modules)
	}
	// A step of the host's own migrations missing (a newer River) shows as pending, as it refuses the
	// other admin commands.
	db, err := database.Open(env["SVC_DATABASE_URL"], database.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Exec(`DELETE FROM jobs_migrations WHERE id = (SELECT max(id) FROM jobs_migrations)`).Error; err != nil {
		t.Fatal(err)
	}
	sqlDB, _ := db.DB()
	sqlDB.Close()
	_, stdout, _ = runMain(t, env, "admin", "modules", "--json")
	if !strings.Contains(stdout, `{"id":"jobs","version":"`+Version+`","migrations_applied":`) || !strings.Contains(stdout, `"migrations_pending":1}`) {
		t.Fatalf("after removing a jobs step: %s", stdout)
	}
	if code, _, stderr := runMain(t, env, "admin", "org", "list"); code == 0 || !strings.Contains(stderr, "jobs 1") {
		t.Fatalf("org list with a jobs step pending: exit %d, %q", code, stderr)
	}
	if code, _, stderr := runMain(t, env, "migrate"); code != 0 {
		t.Fatalf("migrate again: %d %s", code, stderr)
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
	if code != 0 || !strings.Contains(stdout, "svc serve --help") {
		t.Fatalf("--help exit %d: %q", code, stdout)
	}
	// serve --help lists every setting with its environment variable.
	code, stdout, _ = runMain(t, nil, "serve", "--help")
	if code != 0 {
		t.Fatalf("serve --help exit %d", code)
	}
	for _, f := range flags() {
		for _, env := range f.(cli.DocGenerationFlag).GetEnvVars() {
			if !strings.Contains(stdout, "$"+env) {
				t.Errorf("serve --help does not list %s", env)
			}
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

// Each command's --help shows its own flags and the settings it uses, not every server setting.
func TestHelpShowsEachCommandsOwnFlags(t *testing.T) {
	cases := []struct {
		args        []string
		shows       []string
		doesNotShow []string
	}{
		{[]string{"admin", "org", "create", "--help"}, []string{"--name string", "--json", "--database-url", "$SVC_DATABASE_URL", "--log-level", "--modules"},
			[]string{"--public-addr", "--cursor-key", "--sigv1-rate-window", "--onboarding-smtp-url", "--no-migrate", "--jobs-workers", "--db-read-timeout"}},
		{[]string{"admin", "agent", "list", "--help"}, []string{"--org", "--handle", "--state", "--limit", "--database-url"},
			[]string{"--public-addr", "--arena-grant-key"}},
		{[]string{"migrate", "--help"}, []string{"--database-url", "--database-wait", "--modules"},
			[]string{"--public-addr", "--cursor-key", "--json", "--media-dir"}},
		{[]string{"health", "--help"}, []string{"--url", "--timeout", "--public-addr"},
			[]string{"--database-url", "--cursor-key"}},
	}
	for _, c := range cases {
		t.Run(strings.Join(c.args[:len(c.args)-1], " "), func(t *testing.T) {
			code, stdout, stderr := runMain(t, nil, c.args...)
			if code != 0 {
				t.Fatalf("exit %d: %s", code, stderr)
			}
			for _, s := range c.shows {
				if !strings.Contains(stdout, s) {
					t.Errorf("does not show %q:\n%s", s, stdout)
				}
			}
			for _, s := range c.doesNotShow {
				if strings.Contains(stdout, s) {
					t.Errorf("shows %q:\n%s", s, stdout)
				}
			}
		})
	}
}

// Every required flag of every command is marked "(required)" in that command's --help, and no
// other flag is.
func TestHelpMarksRequiredFlags(t *testing.T) {
	var visit func(path []string, cmd *cli.Command)
	checked := 0
	visit = func(path []string, cmd *cli.Command) {
		var req []string
		for _, f := range cmd.Flags {
			if rf, ok := f.(cli.RequiredFlag); ok && rf.IsRequired() {
				req = append(req, f.Names()[0])
			}
		}
		if len(req) > 0 {
			checked++
			_, stdout, _ := runMain(t, nil, append(path, "--help")...)
			for _, line := range strings.Split(stdout, "\n") {
				fields := strings.Fields(line)
				if len(fields) == 0 || !strings.HasPrefix(fields[0], "--") {
					continue
				}
				name := strings.TrimPrefix(strings.TrimSuffix(fields[0], ","), "--")
				marked := strings.Contains(line, "(required)")
				if slices.Contains(req, name) != marked {
					t.Errorf("svc %s --help: %q (required: %v)", strings.Join(path, " "), line, slices.Contains(req, name))
				}
			}
		}
		for _, sub := range cmd.Commands {
			visit(append(slices.Clone(path), sub.Name), sub)
		}
	}
	visit(nil, Command(io.Discard, io.Discard))
	if checked < 10 {
		t.Fatalf("only %d commands have required flags", checked)
	}
}

// Settings a one-off command does not show still apply to it from the environment: a module's admin
// command reads the module's settings as the server does.
func TestHiddenSettingsStillApply(t *testing.T) {
	env := sqliteEnv(t)
	if code, _, stderr := runMain(t, env, "migrate"); code != 0 {
		t.Fatalf("migrate: %d %s", code, stderr)
	}
	code, stdout, stderr := runMain(t, env, "admin", "--json", "draft-key", "status")
	if code != 0 || strings.Contains(stdout, `"configured":null`) {
		t.Fatalf("draft-key status with SVC_ONBOARDING_DRAFT_KEY set: exit %d, %q %s", code, stdout, stderr)
	}
}

// Admin commands never migrate: on a database with pending migrations they refuse with one line
// naming svc migrate, and change nothing; after svc migrate they run.
func TestAdminRefusesWhileMigrationsPending(t *testing.T) {
	env := sqliteEnv(t)
	refused := func(args ...string) {
		t.Helper()
		code, stdout, stderr := runMainAsIs(t, env, args...)
		lines := strings.Split(strings.TrimSpace(stderr), "\n")
		if code == 0 || stdout != "" || len(lines) != 1 || !strings.Contains(lines[0], `run "svc migrate" first`) {
			t.Fatalf("%v on a database with pending migrations: exit %d, stdout %q, stderr %q", args, code, stdout, stderr)
		}
	}
	refused("admin", "org", "create", "--name", "Kitchen")
	refused("admin", "--json", "org", "list")
	// Nothing was applied: every module's migrations are still pending (admin modules runs to say so).
	code, stdout, stderr := runMainAsIs(t, env, "admin", "--json", "modules")
	var got struct {
		Modules []struct {
			ID      string `json:"id"`
			Applied int    `json:"migrations_applied"`
			Pending int    `json:"migrations_pending"`
		} `json:"modules"`
	}
	if err := json.Unmarshal([]byte(stdout), &got); code != 0 || err != nil {
		t.Fatalf("admin modules: exit %d, %q %s %v", code, stdout, stderr, err)
	}
	for _, m := range got.Modules {
		if m.Applied != 0 || (m.ID == "sigv1" && m.Pending == 0) {
			t.Fatalf("before migrate: %+v", got.Modules)
		}
	}

	if code, _, stderr := runMainAsIs(t, env, "migrate"); code != 0 {
		t.Fatalf("migrate: %d %s", code, stderr)
	}
	code, stdout, stderr = runMainAsIs(t, env, "admin", "--json", "org", "create", "--name", "Kitchen")
	if code != 0 || !strings.Contains(stdout, `"org_id"`) {
		t.Fatalf("org create after migrate: exit %d, %q %s", code, stdout, stderr)
	}

	// One step missing from one module's history (a binary newer than the database) is refused too,
	// and the line names the module.
	db, err := database.Open(env["SVC_DATABASE_URL"], database.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Exec(`DELETE FROM sigv1_migrations WHERE id = 'sigv1_0003_state_version'`).Error; err != nil {
		t.Fatal(err)
	}
	sqlDB, _ := db.DB()
	sqlDB.Close()
	code, _, stderr = runMainAsIs(t, env, "admin", "org", "list")
	if code == 0 || !strings.Contains(stderr, "sigv1 1") || !strings.Contains(stderr, "svc migrate") {
		t.Fatalf("one pending step: exit %d, %q", code, stderr)
	}
}

// An operator's look-ups and thread moderation through the binary's command tree: the commands are
// wired, their dependencies resolve from the application, and --json and tables both print.
func TestAdminListShowAndThreadCommands(t *testing.T) {
	env := sqliteEnv(t)
	if code, _, stderr := runMain(t, env, "migrate"); code != 0 {
		t.Fatalf("migrate: %d %s", code, stderr)
	}
	run := func(args ...string) map[string]any {
		t.Helper()
		code, stdout, stderr := runMain(t, env, append([]string{"admin", "--json"}, args...)...)
		var out map[string]any
		if code != 0 || json.Unmarshal([]byte(stdout), &out) != nil {
			t.Fatalf("%v: exit %d, %q %s", args, code, stdout, stderr)
		}
		return out
	}
	org := run("org", "create", "--name", "Kitchen")["org_id"].(string)
	agent := run("agent", "create", "--org", org, "--handle", "soup-cook")["agent_id"].(string)
	seed := make([]byte, ed25519.SeedSize)
	pub := base64.StdEncoding.EncodeToString(ed25519.NewKeyFromSeed(seed).Public().(ed25519.PublicKey))
	key := run("key", "add", "--agent", agent, "--public-key", pub)["key_id"].(string)

	shown := run("agent", "show", "--handle", "soup-cook")
	if shown["agent_id"] != agent || shown["org_name"] != "Kitchen" || len(shown["keys"].([]any)) != 1 {
		t.Fatalf("agent show: %v", shown)
	}
	if k := run("key", "show", "--key", key); k["public_key"] != pub || !strings.HasPrefix(k["fingerprint"].(string), "SHA256:") {
		t.Fatalf("key show: %v", k)
	}
	code, stdout, stderr := runMain(t, env, "admin", "agent", "list", "--org", org)
	if lines := strings.Split(strings.TrimSpace(stdout), "\n"); code != 0 || len(lines) != 2 || !strings.HasPrefix(lines[0], "AGENT_ID") || !strings.Contains(lines[1], "soup-cook") {
		t.Fatalf("agent list: exit %d, %q %s", code, stdout, stderr)
	}
	code, _, stderr = runMain(t, env, "admin", "thread", "lock", "01890000-0000-7000-8000-000000000000")
	lines := strings.Split(strings.TrimSpace(stderr), "\n")
	if last := lines[len(lines)-1]; code == 0 || !strings.HasPrefix(last, "svc: not_found: no thread has the id") {
		t.Fatalf("thread lock of an unknown thread: exit %d, %q", code, stderr)
	}
}

// An admin argument that is not UTF-8 text (or holds a NUL) is refused as validation_failed by every
// command, before any query: PostgreSQL answered it with an encoding error. A well-formed id that names
// nothing is still not_found.
func TestAdminArgumentsArePlainText(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, dialect string) {
		env := map[string]string{"SVC_DATABASE_URL": testConfig(t, dialect).DatabaseURL}
		adminFails(t, env, "--org is not valid UTF-8", "wallet", "credit", "--org", "\xff", "--credits", "5", "--reason", "top-up")
		adminFails(t, env, "--report is not valid UTF-8", "report", "show", "--report", "\xff")
		adminFails(t, env, "--reason is not valid UTF-8", "report", "dismiss", "--report", uuid.NewString(), "--actor", "ops", "--reason", "caf\xe9")
		adminFails(t, env, "--name is not valid UTF-8", "org", "create", "--name", "nul\x00byte")
		adminFails(t, env, "not_found", "report", "show", "--report", uuid.NewString())
	})
}

// A command of a module this deployment leaves out says so, naming the module and the setting.
func TestAdminCommandOfADisabledModule(t *testing.T) {
	env := map[string]string{"SVC_DATABASE_URL": testConfig(t, "sqlite").DatabaseURL, "SVC_MODULES": "discovery,sigv1"}
	adminFails(t, env, "module billing is not enabled here: add it to --modules (SVC_MODULES=discovery,sigv1)", "wallet", "audit")
	adminFails(t, env, "module reports is not enabled here", "report", "list")
}

// Settings that would undo what they set are refused by name: a NaN or infinite public rate (the
// limiter lets everything through), a pool of no connections (the readiness check ran no query, so a
// lost database was "ok"), a database wait of no time (reported as the database not answering).
func TestValidateRefusesSettingsThatUndoThemselves(t *testing.T) {
	for name, c := range map[string]struct {
		edit func(*Config)
		flag string
	}{
		"NaN rate":           {func(c *Config) { c.PublicRate = math.NaN() }, "--public-rate"},
		"infinite rate":      {func(c *Config) { c.PublicRate = math.Inf(1) }, "--public-rate"},
		"NaN documents rate": {func(c *Config) { c.PublicDocumentsRate = math.NaN() }, "--public-documents-rate"},
		"no documents burst": {func(c *Config) { c.PublicDocumentsBurst = 0 }, "--public-documents-burst"},
		"no connections":     {func(c *Config) { c.DB.MaxOpenConns = -1 }, "--db-max-open-conns"},
		"zero connections":   {func(c *Config) { c.DB.MaxOpenConns = 0 }, "--db-max-open-conns"},
		"negative idle":      {func(c *Config) { c.DB.MaxIdleConns = -1 }, "--db-max-idle-conns"},
		"no wait":            {func(c *Config) { c.DatabaseWait = 0 }, "--database-wait"},
	} {
		cfg := testConfig(t, "sqlite")
		c.edit(&cfg)
		if err := cfg.Validate(); err == nil || !strings.Contains(err.Error(), c.flag) {
			t.Errorf("%s: Validate = %v, want a refusal naming %s", name, err, c.flag)
		}
	}
}
