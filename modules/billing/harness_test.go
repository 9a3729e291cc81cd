package billing_test

// The harness of billing's own tests: a fresh database of each dialect with billing's migrations and a
// test write table, and billing's components on the shared test kit (testkit): a settable clock, the
// directory double standing in for the identity module, and an engine that mounts the module's routes
// the way the host does (the agent routes behind the kit's stand-in guard, which only sets the
// principal: the signed path is tested in the host).

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"

	"github.com/svcforum/svc/contracts/write"

	"github.com/gin-gonic/gin"
	"github.com/google/uuid"
	"gorm.io/gorm"

	"github.com/svcforum/svc/contracts/cursor"
	"github.com/svcforum/svc/contracts/plugin"
	"github.com/svcforum/svc/contracts/port"
	"github.com/svcforum/svc/contracts/problem"
	"github.com/svcforum/svc/contracts/schema"
	"github.com/svcforum/svc/database"
	"github.com/svcforum/svc/database/dbtest"
	"github.com/svcforum/svc/modules/billing"
	"github.com/svcforum/svc/testkit"
)

func TestMain(m *testing.M) {
	dbtest.PrepareDocker()
	dbtest.Main(m)
}

// testWrite is a row of the test write that each metered charge of these tests goes with.
type testWrite struct {
	ID         uint   `gorm:"primaryKey"`
	AgentID    string `gorm:"size:36"`
	ResourceID string `gorm:"size:64"`
}

func (testWrite) TableName() string { return "billingtest_writes" }

// world is one test's database and billing's components on it.
type world struct {
	dialect   string
	db        *gorm.DB
	clock     *testkit.Clock
	dir       *testkit.Directory
	pricing   *billing.Pricing
	wallets   *billing.Wallets
	meter     *billing.Meter
	endpoints *billing.Endpoints
	engine    *gin.Engine
}

// t0 is where every test's clock starts.
var t0 = testkit.T0

func newWorld(t testing.TB, dialect string) *world {
	t.Helper()
	db := dbtest.Open(t, dialect, billing.Migrations())
	if err := db.AutoMigrate(&testWrite{}); err != nil {
		t.Fatal(err)
	}
	w := &world{dialect: dialect, db: db, clock: testkit.NewClock(t0), dir: testkit.NewDirectory()}
	w.pricing = billing.NewPricing(db, w.clock, schema.Published())
	w.wallets = billing.NewWallets(db, w.clock, w.dir)
	w.meter = billing.NewMeter(w.clock)
	codec, err := cursor.New([][]byte{[]byte("billing test cursor key, 32 bytes or more")}, w.clock.Now)
	if err != nil {
		t.Fatal(err)
	}
	w.endpoints = billing.NewEndpoints(db, w.clock, w.pricing, w.wallets, codec)
	w.engine = mount(t, w.endpoints)
	return w
}

// mount builds the test kit's engine with the module's public routes, and its agent routes under the
// agent prefix behind the kit's stand-in guard.
func mount(t testing.TB, e *billing.Endpoints) *gin.Engine {
	t.Helper()
	g := testkit.Engine(t)
	testkit.MountPublic(t, g, e.PublicRoutes())
	agent := e.AgentRoutes()
	if agent.Plane != plugin.Agent {
		t.Fatalf("agent routes on plane %q", agent.Plane)
	}
	testkit.MountAgent(t, g, plugin.ChannelEdge, []gin.HandlerFunc{testkit.StandInGuard}, agent.Agent)
	return g
}

func (w *world) serve(req *http.Request) testkit.Result { return testkit.Serve(w.engine, req) }

// get serves a GET of target (a full path with its query) on the public plane.
func (w *world) get(target string, hdr map[string]string) testkit.Result {
	req := httptest.NewRequest(http.MethodGet, target, nil)
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	return w.serve(req)
}

// agentGet serves a GET of target (relative to the agent prefix) as p.
func (w *world) agentGet(p port.Principal, target string) testkit.Result {
	return w.serve(testkit.As(httptest.NewRequest(http.MethodGet, plugin.AgentPrefix+target, nil), p))
}

// newID returns a lowercase UUIDv7.
func newID() string { return uuid.Must(uuid.NewV7()).String() }

// newOrg registers an organisation in the directory and returns its id.
func (w *world) newOrg() string {
	id := newID()
	w.dir.Add(id)
	return id
}

// agentOf returns a principal: a new agent of org.
func agentOf(org string) port.Principal {
	return port.Principal{AgentID: newID(), KeyID: newID(), OrgID: org, Handle: "agent"}
}

// funded registers an organisation with a wallet of credits (none when credits is 0) and returns an
// agent of it.
func (w *world) funded(t testing.TB, credits int64) port.Principal {
	t.Helper()
	org := w.newOrg()
	if credits > 0 {
		w.credit(t, org, credits)
	}
	return agentOf(org)
}

func (w *world) credit(t testing.TB, org string, credits int64) billing.Wallet {
	t.Helper()
	wl, err := w.wallets.Credit(context.Background(), org, credits, "test credit")
	if err != nil {
		t.Fatalf("credit %d to %s: %v", credits, org, err)
	}
	return wl
}

// wireExample is the pricing file of WIRE.md section 8, verbatim.
const wireExample = `{"pricing_version": "2026-11", "grace_period_days": 30, "per_attachment": 1,
 "prices": {"create_thread": 10, "create_reply": 5, "vote": 1, "clear_vote": 0, "tombstone": 1,
            "manage_thread_attachments": 2, "manage_reply_attachments": 2, "media_upload": 3}}`

// wirePrices are wireExample's prices.
var wirePrices = map[string]int64{"create_thread": 10, "create_reply": 5, "vote": 1, "clear_vote": 0, "tombstone": 1,
	"manage_thread_attachments": 2, "manage_reply_attachments": 2, "media_upload": 3}

// pricingFile returns a pricing file: every operation costs 1 unless prices says otherwise.
func pricingFile(code string, grace int, perAttachment int64, prices map[string]int64) []byte {
	all := map[string]int64{}
	for _, op := range port.Operations {
		all[op] = 1
	}
	for op, p := range prices {
		all[op] = p
	}
	raw, err := json.Marshal(map[string]any{"pricing_version": code, "grace_period_days": grace,
		"per_attachment": perAttachment, "prices": all})
	if err != nil {
		panic(err)
	}
	return raw
}

// publish publishes raw and fails the test on an error.
func (w *world) publish(t testing.TB, raw []byte) billing.Price {
	t.Helper()
	p, err := w.pricing.Publish(context.Background(), raw)
	if err != nil {
		t.Fatalf("publish %s: %v", raw, err)
	}
	return p
}

// errInjected is the failure a test write returns after its charge, before its commit.
var errInjected = errors.New("injected failure after the charge")

// write runs one metered test write as p, planned (database.Write) as every metered write is: it adds
// a test row and the charge of c to one plan; fail makes it fail after the charge. The receipt's
// balance is resolved once the plan has run. It never calls t.Fatal, so goroutines may use it.
func (w *world) write(ctx context.Context, p port.Principal, c port.Charge, fail bool) (port.Receipt, error) {
	var rc port.Receipt
	_, body, err := database.Write(ctx, w.db, func(plan *write.Plan) (int, any, error) {
		plan.Add(plan.Build().Create(&testWrite{AgentID: p.AgentID, ResourceID: c.ResourceID}), 1, nil)
		r, err := w.meter.Plan(ctx, plan, p, c)
		if err != nil {
			return 0, nil, err
		}
		if fail {
			plan.Refuse(errInjected)
		}
		rc = r
		return http.StatusCreated, map[string]any{"balance": r.Balance}, nil
	})
	if err != nil {
		return port.Receipt{}, err
	}
	var answer struct{ Balance int64 }
	if err := json.Unmarshal(body, &answer); err != nil {
		return port.Receipt{}, err
	}
	rc.Balance = answer.Balance
	return rc, nil
}

// each runs f on each dialect, in a world of its own.
func each(t *testing.T, f func(t *testing.T, w *world)) {
	t.Helper()
	dbtest.Each(t, func(t *testing.T, dialect string) { f(t, newWorld(t, dialect)) })
}

// eachOnPostgres is each on PostgreSQL only.
func eachOnPostgres(t *testing.T, f func(t *testing.T, w *world)) {
	t.Helper()
	onPostgres(t, func(t *testing.T, dialect string) { f(t, newWorld(t, dialect)) })
}

// charge is a port.Charge of op under version with cap; every charge gets its own resource and key.
func charge(op, version string, limit int64) port.Charge {
	return port.Charge{Operation: op, Billing: port.Billing{PricingVersion: version, MaxCreditCost: limit},
		ResourceID: newID(), IdempotencyKey: "key-" + newID()}
}

// asProblem fails unless err is a *problem.Problem of code with status, and returns it.
func asProblem(t testing.TB, err error, code problem.Code, status int) *problem.Problem {
	t.Helper()
	var p *problem.Problem
	if !errors.As(err, &p) {
		t.Fatalf("got %v (%T), want the problem %s", err, err, code)
	}
	if p.Code != code || p.Status != status {
		t.Fatalf("got problem %s %d (%s), want %s %d", p.Code, p.Status, p.Detail, code, status)
	}
	return p
}

// state is what a charge may change, for comparing before and after a refusal or a rollback.
type state struct {
	Wallets []billing.Wallet
	Ledger  int64
	Usage   int64
	Writes  int64
}

func (w *world) state(t testing.TB) state {
	t.Helper()
	var s state
	if err := w.db.Order("org_id").Find(&s.Wallets).Error; err != nil {
		t.Fatal(err)
	}
	for i := range s.Wallets {
		s.Wallets[i].UpdatedAt = s.Wallets[i].UpdatedAt.UTC()
	}
	for _, c := range []struct {
		model any
		n     *int64
	}{{&billing.LedgerEntry{}, &s.Ledger}, {&billing.UsageEvent{}, &s.Usage}, {&testWrite{}, &s.Writes}} {
		if err := w.db.Model(c.model).Count(c.n).Error; err != nil {
			t.Fatal(err)
		}
	}
	return s
}

// unchanged fails unless the database is in state before.
func (w *world) unchanged(t testing.TB, before state) {
	t.Helper()
	after := w.state(t)
	if fmt.Sprint(after) != fmt.Sprint(before) {
		t.Fatalf("state changed:\nbefore %+v\nafter  %+v", before, after)
	}
}

// balance reads org's wallet row directly: its balance, and whether it exists.
func (w *world) balance(t testing.TB, org string) (int64, bool) {
	t.Helper()
	var rows []int64
	if err := w.db.Raw("SELECT balance FROM billing_wallets WHERE org_id = ?", org).Scan(&rows).Error; err != nil {
		t.Fatal(err)
	}
	if len(rows) == 0 {
		return 0, false
	}
	return rows[0], true
}

// wantBalance fails unless org's wallet row holds want.
func (w *world) wantBalance(t testing.TB, org string, want int64) {
	t.Helper()
	got, ok := w.balance(t, org)
	if !ok || got != want {
		t.Fatalf("balance of %s: %d (row exists: %v), want %d", org, got, ok, want)
	}
}

// usage returns org's usage events, oldest first.
func (w *world) usage(t testing.TB, org string) []billing.UsageEvent {
	t.Helper()
	var evs []billing.UsageEvent
	if err := w.db.Where("org_id = ?", org).Order("id").Find(&evs).Error; err != nil {
		t.Fatal(err)
	}
	return evs
}

// ledger returns org's ledger entries, oldest first.
func (w *world) ledger(t testing.TB, org string) []billing.LedgerEntry {
	t.Helper()
	var es []billing.LedgerEntry
	if err := w.db.Where("org_id = ?", org).Order("created_at, id").Find(&es).Error; err != nil {
		t.Fatal(err)
	}
	return es
}

// audit runs the audit and fails on an error.
func (w *world) audit(t testing.TB, org string) (int, []billing.Discrepancy) {
	t.Helper()
	n, found, err := w.wallets.Audit(context.Background(), org)
	if err != nil {
		t.Fatalf("audit: %v", err)
	}
	return n, found
}

// clean fails unless the audit checks want organisations and finds nothing.
func (w *world) clean(t testing.TB, want int) {
	t.Helper()
	n, found := w.audit(t, "")
	if n != want || len(found) != 0 {
		t.Fatalf("audit checked %d (want %d), found %+v", n, want, found)
	}
}

// onPostgres runs f on PostgreSQL only.
func onPostgres(t *testing.T, f func(t *testing.T, dialect string)) {
	t.Helper()
	t.Run(database.Postgres, func(t *testing.T) { f(t, database.Postgres) })
}

func itoa(i int) string { return strconv.Itoa(i) }
