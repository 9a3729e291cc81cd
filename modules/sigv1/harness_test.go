package sigv1_test

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/svcforum/svc/contracts/write"

	"github.com/gin-gonic/gin"
	"github.com/google/uuid"
	"gorm.io/gorm"

	"github.com/svcforum/svc/contracts/plugin"
	"github.com/svcforum/svc/contracts/port"
	"github.com/svcforum/svc/contracts/problem"
	"github.com/svcforum/svc/contracts/render"
	"github.com/svcforum/svc/contracts/schema"
	"github.com/svcforum/svc/database"
	"github.com/svcforum/svc/database/dbtest"
	"github.com/svcforum/svc/modules/sigv1"
	"github.com/svcforum/svc/sdk/signer"
	"github.com/svcforum/svc/testkit"
)

func TestMain(m *testing.M) {
	if spec := os.Getenv(adminProcessEnv); spec != "" {
		os.Exit(adminProcess(spec))
	}
	dbtest.PrepareDocker()
	dbtest.Main(m)
}

// node is one replica of the agent plane: sigv1's components on a database, mounted the way the host
// mounts them (channel, route declaration, guard, handlers) on a gin engine.
type node struct {
	db       *gorm.DB
	clock    *testkit.Clock
	cfg      sigv1.Config
	registry *sigv1.Registry
	switches *sigv1.Switches
	nonces   *sigv1.Nonces
	limiter  *sigv1.Limiter
	claims   *sigv1.Claims
	guard    *sigv1.Guard
	engine   *gin.Engine // the edge channel
	private  *gin.Engine // the private channel
	writes   *testWrites
}

// world is a test's database with its first node.
type world struct {
	*node
	dialect string
}

// newWorld opens a fresh database of dialect with sigv1's migrations and the test write table, and
// starts one node on it. Options change the module's configuration.
func newWorld(t testing.TB, dialect string, opts ...func(*sigv1.Config)) *world {
	t.Helper()
	db := dbtest.Open(t, dialect, sigv1.Migrations())
	if err := db.AutoMigrate(&testWrite{}); err != nil {
		t.Fatal(err)
	}
	c := testkit.NewClock(testkit.T0)
	return &world{node: newNode(t, db, c, opts...), dialect: dialect}
}

// newNode starts another replica on db (sharing nothing with the others but the database and clock).
func newNode(t testing.TB, db *gorm.DB, c *testkit.Clock, opts ...func(*sigv1.Config)) *node {
	t.Helper()
	cfg := sigv1.DefaultConfig()
	for _, o := range opts {
		o(&cfg)
	}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	if testing.Verbose() {
		log = slog.New(slog.NewTextHandler(os.Stderr, nil))
	}
	n := &node{db: db, clock: c, cfg: cfg}
	n.registry = sigv1.NewRegistry(db, c)
	n.switches = sigv1.NewSwitches(db, c)
	n.nonces = sigv1.NewNonces(db)
	n.limiter = sigv1.NewLimiter(db)
	n.claims = sigv1.NewClaims(db, cfg.IdempotencyLease)
	n.guard = sigv1.NewGuard(cfg, c, log, n.registry, n.switches, n.nonces, n.limiter, n.claims)
	n.writes = &testWrites{db: db, gates: map[string]chan struct{}{}}
	endpoints := sigv1.NewEndpoints(cfg, c, schema.Published(), n.switches, n.limiter)
	routes := append(endpoints.Routes().Agent, n.writes.routes()...)
	n.engine = mountAgent(t, plugin.ChannelEdge, n.guard, routes)
	n.private = mountAgent(t, plugin.ChannelPrivate, n.guard, routes)
	return n
}

// mountAgent mounts routes behind the guard on the test kit's engine, as host/http.go does.
func mountAgent(t testing.TB, channel string, g *sigv1.Guard, routes []plugin.AgentRoute) *gin.Engine {
	t.Helper()
	e := testkit.Engine(t)
	testkit.MountAgent(t, e, channel, g.Plugin().Handlers, routes)
	return e
}

// agent is a registered agent with one key, and a signer on the test clock.
type agent struct {
	OrgID, AgentID, KeyID, Handle string
	Key                           ed25519.PrivateKey
	Signer                        *signer.Signer
}

// newAgent registers an organisation, an agent and a key derived from label.
func (w *world) newAgent(t testing.TB, label string) agent {
	t.Helper()
	ctx := context.Background()
	o, err := w.registry.CreateOrg(ctx, "org of "+label)
	if err != nil {
		t.Fatal(err)
	}
	return w.agentIn(t, o.ID, label)
}

// agentIn registers an agent of org with a key derived from label.
func (w *world) agentIn(t testing.TB, orgID, label string) agent {
	t.Helper()
	ctx := context.Background()
	a, err := w.registry.CreateAgent(ctx, orgID, label)
	if err != nil {
		t.Fatal(err)
	}
	seed := sha256.Sum256([]byte("svc sigv1 test key " + label))
	key := ed25519.NewKeyFromSeed(seed[:])
	k, err := w.registry.AddKey(ctx, a.ID, base64.StdEncoding.EncodeToString(key.Public().(ed25519.PublicKey)))
	if err != nil {
		t.Fatal(err)
	}
	return agent{OrgID: orgID, AgentID: a.ID, KeyID: k.ID, Handle: label, Key: key,
		Signer: signer.New(a.ID, k.ID, key, signer.WithClock(w.clock.Now))}
}

// request builds a request to path (relative to the agent prefix) with body; idem sets the
// Idempotency-Key (POST and PUT need one).
func request(method, path string, body []byte, idem string) *http.Request {
	req := httptest.NewRequest(method, plugin.AgentPrefix+path, bytes.NewReader(body))
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if idem != "" {
		req.Header.Set(sigv1.HeaderIdempotencyKey, idem)
	}
	return req
}

// signed builds and signs a request as a.
func signed(t testing.TB, a agent, method, path string, body []byte, idem string) *http.Request {
	t.Helper()
	req := request(method, path, body, idem)
	if err := a.Signer.Sign(req); err != nil {
		t.Fatal(err)
	}
	return req
}

// serve runs req through the node's edge engine in-process. RequestURI is what the server reads the
// target from; httptest.NewRequest sets it from the URL as written.
func (n *node) serve(req *http.Request) testkit.Result { return testkit.Serve(n.engine, req) }

// send signs and serves one request as a.
func (n *node) send(t testing.TB, a agent, method, path string, body []byte, idem string) testkit.Result {
	t.Helper()
	return n.serve(signed(t, a, method, path, body, idem))
}

// testWrite is a row the test write route creates.
type testWrite struct {
	ID      uint `gorm:"primaryKey"`
	AgentID string
	Note    string
}

func (testWrite) TableName() string { return "sigv1test_writes" }

// testWrites is a write route like the forum's: POST /test/writes {"note": "..."} inserts a row
// through a planned write (database.Write) and answers 201 with it. X-Test-Fail makes the write fail after its insert,
// X-Test-Panic makes it panic there;
// X-Test-Wait names a gate the handler waits on while it plans, holding its claim (release with open).
type testWrites struct {
	db          *gorm.DB
	mu          sync.Mutex
	gates       map[string]chan struct{}
	plannedRuns atomic.Int64 // how often the planned route's handler ran
}

const writePath = "/test/writes"

// plannedPath is the same write as a planned one (database.Write), on a Planned route: the guard
// leaves its admission to the write. X-Test-Refuse makes it refuse (422) before writing, X-Test-Fail
// makes its plan fail after the insert (403 with its own code), X-Test-Broken makes its batch fail
// with an error (a statement PostgreSQL refuses), X-Test-Panic makes it panic before writing, and
// X-Test-Cancel makes it cancel the request's context (testCancel) before writing, as a client that
// leaves. The route first sets a header of its own, which a dropped answer must not leak.
const plannedPath = "/test/planned"

func (tw *testWrites) routes() []plugin.AgentRoute {
	return []plugin.AgentRoute{
		{Method: http.MethodPost, Path: writePath, Write: true, Handlers: []gin.HandlerFunc{tw.handle}},
		{Method: http.MethodPost, Path: plannedPath, Write: true, Planned: true, Handlers: []gin.HandlerFunc{tw.handlePlanned}},
	}
}

// testCancel is the context key of the function the planned route calls for X-Test-Cancel.
type testCancel struct{}

// errTestStep is the refusal of a planned test write's failing step.
var errTestStep = problem.New(problem.ThreadLocked, "the test write's step refused it")

func (tw *testWrites) handlePlanned(c *gin.Context) {
	tw.plannedRuns.Add(1)
	c.Header("X-Test-Route", "ran")
	var in struct {
		Note string `json:"note"`
	}
	raw, _ := io.ReadAll(c.Request.Body)
	if err := json.Unmarshal(raw, &in); err != nil || c.GetHeader("X-Test-Refuse") != "" {
		render.Abort(c, problem.New(problem.ValidationFailed, "the test write refuses its body"))
		return
	}
	if c.GetHeader("X-Test-Panic") != "" {
		panic("test planned write panics before its write")
	}
	if cancel, ok := c.Request.Context().Value(testCancel{}).(context.CancelFunc); ok && c.GetHeader("X-Test-Cancel") != "" {
		cancel()
		render.Error(c, c.Request.Context().Err())
		return
	}
	p, _ := port.PrincipalFrom(c.Request.Context())
	status, body, err := database.Write(c.Request.Context(), tw.db, func(plan *write.Plan) (int, any, error) {
		plan.Exec(1, nil, "INSERT INTO sigv1test_writes (agent_id, note) VALUES (?, ?)", p.AgentID, in.Note)
		if c.GetHeader("X-Test-Fail") != "" {
			plan.Refuse(errTestStep)
		}
		if c.GetHeader("X-Test-Broken") != "" {
			plan.Exec(1, nil, "UPDATE sigv1test_no_such_table SET note = ?", in.Note)
		}
		return http.StatusCreated, map[string]any{"id": uuid.NewString(), "note": in.Note}, nil
	})
	if err != nil {
		render.Error(c, err)
		return
	}
	render.Raw(c, status, body)
}

func (tw *testWrites) gate(name string) chan struct{} {
	tw.mu.Lock()
	defer tw.mu.Unlock()
	if tw.gates[name] == nil {
		tw.gates[name] = make(chan struct{})
	}
	return tw.gates[name]
}

func (tw *testWrites) open(name string) { close(tw.gate(name)) }

func (tw *testWrites) handle(c *gin.Context) {
	var in struct {
		Note string `json:"note"`
	}
	raw, _ := io.ReadAll(c.Request.Body)
	if err := json.Unmarshal(raw, &in); err != nil {
		c.AbortWithStatus(http.StatusUnprocessableEntity)
		return
	}
	p, _ := port.PrincipalFrom(c.Request.Context())
	// A write the guard admits first (the route is not Planned): it holds its claim while it plans, so
	// X-Test-Wait keeps the key in flight.
	status, body, err := database.Write(c.Request.Context(), tw.db, func(plan *write.Plan) (int, any, error) {
		plan.Exec(1, nil, "INSERT INTO sigv1test_writes (agent_id, note) VALUES (?, ?)", p.AgentID, in.Note)
		if name := c.GetHeader("X-Test-Wait"); name != "" {
			<-tw.gate(name)
		}
		if c.GetHeader("X-Test-Panic") != "" {
			panic("test write panics inside its transaction")
		}
		if c.GetHeader("X-Test-Fail") != "" {
			plan.Refuse(io.ErrUnexpectedEOF)
		}
		return http.StatusCreated, map[string]any{"id": uuid.NewString(), "note": in.Note}, nil
	})
	if err != nil {
		render.Error(c, err)
		return
	}
	render.Raw(c, status, body)
}

// count returns the rows of the test write table.
func (tw *testWrites) count(t testing.TB) int64 {
	t.Helper()
	var n int64
	if err := tw.db.Model(&testWrite{}).Count(&n).Error; err != nil {
		t.Fatal(err)
	}
	return n
}

func itoa(i int) string { return strconv.Itoa(i) }
