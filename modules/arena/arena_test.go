package arena_test

// The arena module's own tests: a fresh database of each dialect with the module's migrations, the test
// kit's engine with the stand-in guard (the signed path, idempotency and frozen writes are tested in
// host), the module's public routes for the JWKS, and a settable clock. Tickets are verified here with
// go-jose, as whoever a seat presents its ticket to would verify them.

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"database/sql"
	"encoding/base64"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/go-jose/go-jose/v4"
	"github.com/google/uuid"
	"gorm.io/gorm"

	"github.com/svcforum/svc/contracts/plugin"
	"github.com/svcforum/svc/contracts/port"
	"github.com/svcforum/svc/contracts/problem"
	"github.com/svcforum/svc/contracts/schema"
	"github.com/svcforum/svc/database/dbtest"
	"github.com/svcforum/svc/modules/arena"
	"github.com/svcforum/svc/testkit"
)

func TestMain(m *testing.M) {
	dbtest.PrepareDocker()
	dbtest.Main(m)
}

// baseURL is the deployment's public base URL: every ticket's iss.
const baseURL = "https://svc.example"

type world struct {
	db      *gorm.DB
	cfg     arena.Config
	clock   *testkit.Clock
	keys    *arena.GrantKeys
	matches *arena.Matches
	engine  *gin.Engine
}

// newWorld is the module on a new database of dialect, at testkit.T0, configured with cfg.
func newWorld(t *testing.T, dialect string, cfg arena.Config) *world {
	t.Helper()
	w := &world{db: dbtest.Open(t, dialect, arena.Migrations()), clock: testkit.NewClock(testkit.T0)}
	w.configure(t, cfg)
	return w
}

// configure serves the same database and clock with cfg (a restart with other settings: a rotated
// grant key, another limit).
func (w *world) configure(t *testing.T, cfg arena.Config) {
	t.Helper()
	keys, err := arena.NewGrantKeys(cfg)
	if err != nil {
		t.Fatal(err)
	}
	grants := arena.NewGrants(cfg, keys, w.clock, &plugin.Deployment{BaseURL: baseURL})
	api := arena.NewAPI(w.db, grants, arena.NewRunners(w.db, cfg, w.clock), schema.Published())
	e := testkit.Engine(t)
	testkit.MountAgent(t, e, "edge", []gin.HandlerFunc{testkit.StandInGuard}, arena.AgentRoutes(api).Agent)
	testkit.MountPublic(t, e, arena.PublicRoutes(keys))
	w.cfg, w.keys, w.engine = cfg, keys, e
	w.matches = arena.NewMatches(w.db, cfg, w.clock, testkit.NewDirectory(), slog.New(slog.DiscardHandler))
}

// slowReads makes every query of table on w's database take d longer, after it read: it widens the
// window between a decision read and the write that follows it, so that concurrent requests overlap.
func (w *world) slowReads(t testing.TB, table string, d time.Duration) {
	t.Helper()
	if err := w.db.Callback().Query().After("gorm:query").Register("test:slow_"+table, func(db *gorm.DB) {
		if db.Statement.Table == table {
			time.Sleep(d)
		}
	}); err != nil {
		t.Fatal(err)
	}
}

// warm opens n connections of w's pool and leaves them idle, so that concurrent requests start together
// instead of one at a time as each connects.
func (w *world) warm(t testing.TB, n int) {
	t.Helper()
	pool, err := w.db.DB()
	if err != nil {
		t.Fatal(err)
	}
	conns := make([]*sql.Conn, n)
	for i := range conns {
		if conns[i], err = pool.Conn(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range conns {
		_ = c.Close()
	}
}

// keyedConfig is the default configuration with one new grant key, and the key's id.
func keyedConfig(t testing.TB) (arena.Config, string) {
	t.Helper()
	seed, kid, err := arena.NewGrantKey()
	if err != nil {
		t.Fatal(err)
	}
	cfg := arena.DefaultConfig()
	cfg.GrantKeys = seed
	return cfg, kid
}

func agent(name string) port.Principal {
	return port.Principal{AgentID: uuid.NewSHA1(uuid.NameSpaceOID, []byte(name)).String(), OrgID: "org-" + name, Handle: name}
}

func newID() string { return uuid.Must(uuid.NewV7()).String() }

func (w *world) post(t testing.TB, p port.Principal, path, body string) testkit.Result {
	t.Helper()
	req := httptest.NewRequest(http.MethodPost, plugin.AgentPrefix+path, bytes.NewReader([]byte(body)))
	req.Header.Set("Content-Type", "application/json")
	return testkit.Serve(w.engine, testkit.As(req, p))
}

func (w *world) grant(t testing.TB, p port.Principal, matchID, seat, sessionKey string) testkit.Result {
	t.Helper()
	return w.post(t, p, "/arena/matches/"+matchID+"/grant", `{"seat":"`+seat+`","session_public_key":"`+sessionKey+`"}`)
}

func (w *world) poll(t testing.TB, p port.Principal, runner, availability string) testkit.Result {
	t.Helper()
	return w.post(t, p, arena.PollPath, `{"runner_id":"`+runner+`","availability":"`+availability+`"}`)
}

// polled polls online and returns the intents offered.
func (w *world) polled(t testing.TB, p port.Principal, runner string) arena.StartIntentList {
	t.Helper()
	var out arena.StartIntentList
	ok(t, w.poll(t, p, runner, arena.Online), http.StatusOK, "start-intent-list").Decode(t, &out)
	return out
}

func (w *world) claim(t testing.TB, p port.Principal, intentID, body string) testkit.Result {
	t.Helper()
	return w.post(t, p, "/arena/start-intents/"+intentID+"/claim", body)
}

func (w *world) status(t testing.TB, p port.Principal, intentID, body string) testkit.Result {
	t.Helper()
	return w.post(t, p, "/arena/start-intents/"+intentID+"/status", body)
}

// jwks is the key set the public listener serves.
func (w *world) jwks(t testing.TB) (jose.JSONWebKeySet, []byte) {
	t.Helper()
	r := testkit.Serve(w.engine, httptest.NewRequest(http.MethodGet, arena.JWKSPath, nil))
	testkit.Expect(t, r, http.StatusOK, "")
	if !strings.HasPrefix(r.Header.Get("Content-Type"), "application/json") || !strings.Contains(r.Header.Get("Cache-Control"), "max-age=") {
		t.Fatalf("JWKS served as %q with Cache-Control %q", r.Header.Get("Content-Type"), r.Header.Get("Cache-Control"))
	}
	testkit.Expect(t, testkit.Serve(w.engine, httptest.NewRequest(http.MethodHead, arena.JWKSPath, nil)), http.StatusOK, "")
	testkit.Valid(t, "grant-keys", r.Body)
	var set jose.JSONWebKeySet
	r.Decode(t, &set)
	return set, r.Body
}

// open opens a match now, granting for a day (longer than an intent lives), with seats held by agents.
func (w *world) open(t testing.TB, seats map[string]port.Principal) arena.Match {
	t.Helper()
	ids := map[string]string{}
	for name, p := range seats {
		ids[name] = p.AgentID
	}
	m, err := w.matches.Create(context.Background(), ids, w.clock.Now(), w.clock.Now().Add(24*time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// intentOf is the id of the first intent of seat in m.
func intentOf(t testing.TB, m arena.Match, seat string) string {
	t.Helper()
	for _, i := range m.Intents {
		if i.Seat == seat {
			return i.IntentID
		}
	}
	t.Fatalf("match %s has no intent for seat %s", m.MatchID, seat)
	return ""
}

// ok checks r's status, that it is no problem, and that its body matches the published schema name.
func ok(t testing.TB, r testkit.Result, status int, name string) testkit.Result {
	t.Helper()
	testkit.Expect(t, r, status, "")
	testkit.Valid(t, name, r.Body)
	return r
}

// sessionKey is a new session key: its public half, and that in standard base64 as a grant request sends it.
func sessionKey(t testing.TB) (ed25519.PublicKey, string) {
	t.Helper()
	pub, _, err := ed25519.GenerateKey(nil)
	if err != nil {
		t.Fatal(err)
	}
	return pub, base64.StdEncoding.EncodeToString(pub)
}

func isProblem(t testing.TB, err error, code problem.Code) {
	t.Helper()
	var p *problem.Problem
	if !errors.As(err, &p) || p.Code != code {
		t.Fatalf("got %v, want the problem %s", err, code)
	}
}

// member is a member of a JSON object body.
func member(t testing.TB, r testkit.Result, name string) any {
	t.Helper()
	return r.JSON(t)[name]
}

func mustJSON(t testing.TB, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// earlier is the earlier of two times: an intent expires at its TTL or at its match's window end.
func earlier(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}
