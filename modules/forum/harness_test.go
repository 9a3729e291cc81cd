package forum_test

// The harness of the forum's own tests: a fresh database of each dialect with only the forum's
// migrations, a settable clock, a recording test double of port.Meter, the module's components, and a
// gin engine that mounts the signed write routes under plugin.AgentPrefix behind a stand-in for the
// guard that only sets the principal, and the public read routes beside them. Requests are served
// in-process through httptest.NewRecorder.
//
// Why a test double of the meter rather than billing's Meter: the forum must not import another
// module, and what these tests check is the forum's side of the contract: that each write charges once,
// on its own transaction, for the right operation, resource and declaration, and that a refused
// charge leaves no row. The double records every Charge and writes a row on the caller's transaction
// (so a rolled-back write leaves no charge row, as with the real meter); it can be told to refuse with
// a billing problem. The real Meter is tested in modules/billing, and the whole signed, metered path
// (guard, idempotency, meter, forum) through the full stack in host/forum_test.go. Idempotent replay
// is likewise left to sigv1 and host: the writes here run through port.Write without a claim.

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/google/uuid"
	"gorm.io/gorm"

	"github.com/svcforum/svc/contracts/plugin"
	"github.com/svcforum/svc/contracts/port"
	"github.com/svcforum/svc/contracts/problem"
	"github.com/svcforum/svc/contracts/render"
	"github.com/svcforum/svc/contracts/schema"
	"github.com/svcforum/svc/database/dbtest"
	"github.com/svcforum/svc/modules/forum"
)

func TestMain(m *testing.M) {
	dbtest.PrepareDocker()
	dbtest.Main(m)
}

// ftSchemas are the published schemas, which the responses must validate against.
var ftSchemas = schema.Published()

// ftT0 is where every test's clock starts: 2026-01-01T00:00:00Z.
var ftT0 = time.Unix(1767225600, 0).UTC()

// ftClock is a settable port.Clock.
type ftClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *ftClock) Now() time.Time      { c.mu.Lock(); defer c.mu.Unlock(); return c.now }
func (c *ftClock) Set(t time.Time)     { c.mu.Lock(); c.now = t; c.mu.Unlock() }
func (c *ftClock) Add(d time.Duration) { c.mu.Lock(); c.now = c.now.Add(d); c.mu.Unlock() }

var _ port.Clock = (*ftClock)(nil)

// ftChargeRow is the row the meter double writes on the write's own transaction for each charge it
// accepts: it exists exactly when the write committed.
type ftChargeRow struct {
	ID             string `gorm:"primaryKey;size:36"`
	AgentID        string `gorm:"size:36"`
	OrgID          string `gorm:"size:36"`
	Operation      string `gorm:"size:32"`
	ResourceID     string `gorm:"size:64"`
	IdempotencyKey string `gorm:"size:128"`
	PricingVersion string `gorm:"size:64"`
	MaxCreditCost  int64
}

func (ftChargeRow) TableName() string { return "forumtest_charges" }

// ftCall is one call of the meter double, as it received it.
type ftCall struct {
	Principal port.Principal
	Charge    port.Charge
	Refused   bool
}

// ftMeter is a recording test double of port.Meter (see the comment at the top of this file).
type ftMeter struct {
	mu     sync.Mutex
	price  int64
	calls  []ftCall
	refuse *problem.Problem
}

var _ port.Meter = (*ftMeter)(nil)

func (m *ftMeter) Charge(ctx context.Context, tx *gorm.DB, p port.Principal, c port.Charge) (port.Receipt, error) {
	m.mu.Lock()
	refuse, price := m.refuse, m.price
	m.calls = append(m.calls, ftCall{Principal: p, Charge: c, Refused: refuse != nil})
	m.mu.Unlock()
	if refuse != nil {
		cp := *refuse
		return port.Receipt{}, &cp
	}
	if price > c.Billing.MaxCreditCost {
		return port.Receipt{}, problem.New(problem.PriceExceedsCap, "The effective price exceeds max_credit_cost.").With("effective_price", price)
	}
	row := ftChargeRow{ID: uuid.Must(uuid.NewV7()).String(), AgentID: p.AgentID, OrgID: p.OrgID, Operation: c.Operation,
		ResourceID: c.ResourceID, IdempotencyKey: c.IdempotencyKey, PricingVersion: c.Billing.PricingVersion,
		MaxCreditCost: c.Billing.MaxCreditCost}
	if err := tx.Create(&row).Error; err != nil {
		return port.Receipt{}, fmt.Errorf("record test charge: %w", err)
	}
	return port.Receipt{UsageEventID: row.ID, Price: price, PricingVersion: c.Billing.PricingVersion, Balance: 1000}, nil
}

// ftRefuse makes every later charge fail with p (nil: accept again).
func (m *ftMeter) ftRefuse(p *problem.Problem) {
	m.mu.Lock()
	m.refuse = p
	m.mu.Unlock()
}

// ftCalls returns the calls so far.
func (m *ftMeter) ftCalls() []ftCall {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]ftCall(nil), m.calls...)
}

// ftWorld is one test's database and the forum's components on it.
type ftWorld struct {
	dialect string
	db      *gorm.DB
	clock   *ftClock
	meter   *ftMeter
	cats    *forum.Categories
	writes  *forum.Writes
	reads   *forum.Reads
	engine  *gin.Engine
}

func ftNewWorld(t testing.TB, dialect string) *ftWorld {
	t.Helper()
	db := dbtest.Open(t, dialect, forum.Migrations())
	if err := db.AutoMigrate(&ftChargeRow{}); err != nil {
		t.Fatal(err)
	}
	w := &ftWorld{dialect: dialect, db: db, clock: &ftClock{now: ftT0}, meter: &ftMeter{price: 1}}
	w.cats = forum.NewCategories(db, w.clock)
	w.writes = forum.NewWrites(db, w.clock, w.meter, schema.Published())
	w.reads = forum.NewReads(db)
	w.engine = ftMount(t, w.writes, w.reads)
	return w
}

// The headers through which a test names the principal its agent-plane request runs as; in the host,
// the guard sets it from the verified signature.
const (
	ftHdrAgent  = "X-Ft-Agent-Id"
	ftHdrOrg    = "X-Ft-Org-Id"
	ftHdrHandle = "X-Ft-Handle"
)

// ftMount builds a gin engine with the read plane's public routes, and the write routes under the
// agent prefix behind a middleware that puts the principal named by the test headers into the
// context.
func ftMount(t testing.TB, wr *forum.Writes, rd *forum.Reads) *gin.Engine {
	t.Helper()
	gin.SetMode(gin.ReleaseMode)
	g := gin.New()
	g.RedirectTrailingSlash, g.RedirectFixedPath = false, false
	g.ContextWithFallback = true
	if err := g.SetTrustedProxies(nil); err != nil {
		t.Fatal(err)
	}
	g.Use(func(c *gin.Context) { render.SetRequestID(c, "test-request"); c.Next() })
	g.Use(gin.CustomRecovery(func(c *gin.Context, _ any) { c.AbortWithStatus(http.StatusInternalServerError) }))
	pub := rd.Routes()
	if pub.Plane != plugin.Public || pub.Mount == nil || pub.Module != forum.ID {
		t.Fatalf("read routes: %+v", pub)
	}
	pub.Mount(g)
	agent := wr.Routes()
	if agent.Plane != plugin.Agent || agent.Module != forum.ID {
		t.Fatalf("write routes: %+v", agent)
	}
	group := g.Group(plugin.AgentPrefix, func(c *gin.Context) {
		p := port.Principal{AgentID: c.GetHeader(ftHdrAgent), OrgID: c.GetHeader(ftHdrOrg), KeyID: "test-key", Handle: c.GetHeader(ftHdrHandle)}
		c.Request = c.Request.WithContext(port.WithPrincipal(c.Request.Context(), p))
		c.Next()
	})
	// The five metered writes are declared as writes, so that the guard makes them idempotent and
	// refuses them while writes are frozen.
	writes := map[string]bool{forum.ThreadsPath: false, forum.RepliesPath: false, forum.VotesPath: false, forum.ClearPath: false, forum.TombstonePath: false}
	for _, r := range agent.Agent {
		if _, ok := writes[r.Path]; ok {
			if r.Method != http.MethodPost || !r.Write {
				t.Fatalf("route %s %s: want a POST declared as a write", r.Method, r.Path)
			}
			writes[r.Path] = true
		}
		group.Handle(r.Method, r.Path, r.Handlers...)
	}
	for path, found := range writes {
		if !found {
			t.Fatalf("no write route %s", path)
		}
	}
	return g
}

// ftAgent is an agent the tests write as.
type ftAgent struct {
	ID, Org, Handle string
}

// ftNewAgent returns an agent of a new organisation; handle must fit the read plane's pattern.
func ftNewAgent(handle string) ftAgent {
	return ftAgent{ID: ftID(), Org: ftID(), Handle: handle}
}

// ftID returns a lowercase UUIDv7.
func ftID() string { return uuid.Must(uuid.NewV7()).String() }

// ftResult is a response as the tests read it.
type ftResult struct {
	Status int
	Header http.Header
	Body   []byte
	Code   string // the problem's code, if the body is a problem
}

func (r ftResult) json(t testing.TB) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(r.Body, &m); err != nil {
		t.Fatalf("body %q: %v", r.Body, err)
	}
	return m
}

// ftDecode decodes r's body into v.
func (r ftResult) decode(t testing.TB, v any) {
	t.Helper()
	if err := json.Unmarshal(r.Body, v); err != nil {
		t.Fatalf("body %q: %v", r.Body, err)
	}
}

func (w *ftWorld) serve(req *http.Request) ftResult {
	rec := httptest.NewRecorder()
	w.engine.ServeHTTP(rec, req)
	r := ftResult{Status: rec.Code, Header: rec.Header(), Body: rec.Body.Bytes()}
	if rec.Header().Get("Content-Type") == problem.ContentType {
		var p struct{ Code string }
		_ = json.Unmarshal(r.Body, &p)
		r.Code = p.Code
	}
	return r
}

// ftMarshal encodes a request body: bytes and strings as they are, anything else as JSON.
func ftMarshal(t testing.TB, body any) []byte {
	t.Helper()
	switch b := body.(type) {
	case []byte:
		return b
	case string:
		return []byte(b)
	}
	raw, err := json.Marshal(body)
	if err != nil {
		t.Fatal(err)
	}
	return raw
}

// ftRequest builds a write of raw to path (relative to the agent prefix) as a, with a fresh
// Idempotency-Key (which the write hands to the meter).
func ftRequest(a ftAgent, path string, raw []byte) *http.Request {
	req := httptest.NewRequest(http.MethodPost, plugin.AgentPrefix+path, bytes.NewReader(raw))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Idempotency-Key", "ft-"+ftID())
	req.Header.Set(ftHdrAgent, a.ID)
	req.Header.Set(ftHdrOrg, a.Org)
	req.Header.Set(ftHdrHandle, a.Handle)
	return req
}

// post serves a write of body to path as a.
func (w *ftWorld) post(t testing.TB, a ftAgent, path string, body any) ftResult {
	t.Helper()
	return w.serve(ftRequest(a, path, ftMarshal(t, body)))
}

// get serves a GET of target (a full path with its query) on the public plane.
func (w *ftWorld) get(target string, hdr ...string) ftResult {
	req := httptest.NewRequest(http.MethodGet, target, nil)
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	return w.serve(req)
}

// ftExpect fails unless r has status and problem code ("" for a success). A problem must validate
// against the published problem schema.
func ftExpect(t testing.TB, r ftResult, status int, code string) {
	t.Helper()
	if r.Status != status || r.Code != code {
		t.Fatalf("got %d %q, want %d %q; body %s", r.Status, r.Code, status, code, ftShort(r.Body))
	}
	if code != "" {
		ftValid(t, "problem", r.Body)
	}
}

// ftPointers returns the pointers a problem names: the entries of errors (422) and its own pointer.
func ftPointers(t testing.TB, r ftResult) []string {
	t.Helper()
	var p struct {
		Pointer *string `json:"pointer"`
		Errors  []struct {
			Pointer string `json:"pointer"`
			Code    string `json:"code"`
		} `json:"errors"`
	}
	r.decode(t, &p)
	var out []string
	if p.Pointer != nil {
		out = append(out, *p.Pointer)
	}
	for _, e := range p.Errors {
		out = append(out, e.Pointer)
	}
	return out
}

// ftExpectAt fails unless r has status and code and names pointer.
func ftExpectAt(t testing.TB, r ftResult, status int, code, pointer string) {
	t.Helper()
	ftExpect(t, r, status, code)
	for _, p := range ftPointers(t, r) {
		if p == pointer {
			return
		}
	}
	t.Fatalf("problem %s names the pointers %q, want %q; body %s", r.Code, ftPointers(t, r), pointer, ftShort(r.Body))
}

// ftExpect422 fails unless r is a 422 validation_failed naming pointer; a non-empty keyword must be
// the code of that entry.
func ftExpect422(t testing.TB, r ftResult, pointer, keyword string) {
	t.Helper()
	ftExpect(t, r, http.StatusUnprocessableEntity, string(problem.ValidationFailed))
	var p struct {
		Errors []struct {
			Pointer string `json:"pointer"`
			Code    string `json:"code"`
		} `json:"errors"`
	}
	r.decode(t, &p)
	for _, e := range p.Errors {
		if e.Pointer == pointer && (keyword == "" || e.Code == keyword) {
			return
		}
	}
	t.Fatalf("422 lacks %s (%s); body %s", pointer, keyword, ftShort(r.Body))
}

// ftValid fails unless raw validates against the published schema name.
func ftValid(t testing.TB, name string, raw []byte) {
	t.Helper()
	if err := ftSchemas.Validate(name, raw); err != nil {
		t.Fatalf("response does not match the %s schema: %v\n%s", name, err, ftShort(raw))
	}
}

func ftShort(b []byte) string {
	if len(b) > 600 {
		return string(b[:600]) + fmt.Sprintf("... (%d bytes)", len(b))
	}
	return string(b)
}

// ftBilling is the billing declaration every write of these tests sends.
func ftBilling() map[string]any {
	return map[string]any{"pricing_version": "2026-11", "max_credit_cost": 10}
}

// ftCategory creates an open category and returns its id.
func (w *ftWorld) ftCategory(t testing.TB, slug string) string {
	t.Helper()
	c, err := w.cats.Create(context.Background(), slug, "Category "+slug, "Threads about "+slug+".")
	if err != nil {
		t.Fatalf("create category %s: %v", slug, err)
	}
	return c.ID
}

// ftSetState sets a category's state through Categories.Update.
func (w *ftWorld) ftSetState(t testing.TB, slug, state string) {
	t.Helper()
	if _, err := w.cats.Update(context.Background(), slug, forum.CategoryChange{State: &state}); err != nil {
		t.Fatalf("set %s %s: %v", slug, state, err)
	}
}

// ftThreadBody is a valid CreateThreadRequest in category; mods change it.
func ftThreadBody(category string, mods ...func(map[string]any)) map[string]any {
	b := map[string]any{"category_id": category, "title": "Lentils for a cold evening",
		"body_markdown": "How do you season **red lentils**?", "billing": ftBilling()}
	for _, m := range mods {
		m(b)
	}
	return b
}

// ftReplyBody is a valid CreateReplyRequest to thread (parent "" for none); mods change it.
func ftReplyBody(thread, parent string, mods ...func(map[string]any)) map[string]any {
	b := map[string]any{"thread_id": thread, "body_markdown": "Cumin, then lemon at the end.", "billing": ftBilling()}
	if parent != "" {
		b["parent_reply_id"] = parent
	}
	for _, m := range mods {
		m(b)
	}
	return b
}

// ftTargetBody is the body of a vote ("up", "down"), a clear (value "") or a tombstone (value "") on
// the thread or reply id.
func ftTargetBody(kind, id, value string) map[string]any {
	b := map[string]any{"billing": ftBilling()}
	switch kind {
	case forum.KindThread:
		b["thread_id"] = id
	case forum.KindReply:
		b["reply_id"] = id
	}
	if value != "" {
		b["value"] = value
	}
	return b
}

// ftThread creates a thread as a and returns its id; the answer must match its schema.
func (w *ftWorld) ftThread(t testing.TB, a ftAgent, category string, mods ...func(map[string]any)) string {
	t.Helper()
	r := w.post(t, a, forum.ThreadsPath, ftThreadBody(category, mods...))
	ftExpect(t, r, http.StatusOK, "")
	ftValid(t, "created-thread-response", r.Body)
	var out forum.CreatedThreadResponse
	r.decode(t, &out)
	return out.ThreadID
}

// ftReply creates a reply as a and returns its id; the answer must match its schema.
func (w *ftWorld) ftReply(t testing.TB, a ftAgent, thread, parent string, mods ...func(map[string]any)) string {
	t.Helper()
	r := w.post(t, a, forum.RepliesPath, ftReplyBody(thread, parent, mods...))
	ftExpect(t, r, http.StatusOK, "")
	ftValid(t, "created-reply-response", r.Body)
	var out forum.CreatedReplyResponse
	r.decode(t, &out)
	return out.ReplyID
}

// ftVote votes value on the target as a, and returns the answer (validated).
func (w *ftWorld) ftVote(t testing.TB, a ftAgent, kind, id, value string) forum.VoteResponse {
	t.Helper()
	path := forum.VotesPath
	if value == "" {
		path = forum.ClearPath
	}
	r := w.post(t, a, path, ftTargetBody(kind, id, value))
	ftExpect(t, r, http.StatusOK, "")
	ftValid(t, "vote-response", r.Body)
	var out forum.VoteResponse
	r.decode(t, &out)
	return out
}

// ftTombstone tombstones the target as a.
func (w *ftWorld) ftTombstone(t testing.TB, a ftAgent, kind, id string) forum.TombstoneResponse {
	t.Helper()
	r := w.post(t, a, forum.TombstonePath, ftTargetBody(kind, id, ""))
	ftExpect(t, r, http.StatusOK, "")
	ftValid(t, "tombstone-response", r.Body)
	var out forum.TombstoneResponse
	r.decode(t, &out)
	return out
}

// ftRead GETs target, expects a 200 that validates against schemaName, and decodes it into v.
func (w *ftWorld) ftRead(t testing.TB, target, schemaName string, v any) ftResult {
	t.Helper()
	r := w.get(target)
	ftExpect(t, r, http.StatusOK, "")
	if ct := r.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
		t.Fatalf("%s: Content-Type %q", target, ct)
	}
	if schemaName != "" {
		ftValid(t, schemaName, r.Body)
	}
	if v != nil {
		r.decode(t, v)
	}
	return r
}

// ftGetThread reads a thread from the read plane.
func (w *ftWorld) ftGetThread(t testing.TB, id string) forum.Thread {
	t.Helper()
	var th forum.Thread
	w.ftRead(t, forum.ThreadPath+"/"+id, "thread", &th)
	return th
}

// ftGetReply reads a reply from the read plane.
func (w *ftWorld) ftGetReply(t testing.TB, id string) forum.Reply {
	t.Helper()
	var rp forum.Reply
	w.ftRead(t, forum.ReplyPath+"/"+id, "reply", &rp)
	return rp
}

// ftCount returns the rows of table.
func (w *ftWorld) ftCount(t testing.TB, table string) int64 {
	t.Helper()
	var n int64
	if err := w.db.Table(table).Count(&n).Error; err != nil {
		t.Fatal(err)
	}
	return n
}

// ftState is everything a write may change, for comparing before and after a refused one.
func (w *ftWorld) ftState(t testing.TB) string {
	t.Helper()
	var b strings.Builder
	for _, table := range []string{"forum_threads", "forum_replies", "forum_votes", "forum_references", "forumtest_charges"} {
		fmt.Fprintf(&b, "%s=%d ", table, w.ftCount(t, table))
	}
	type post struct {
		ID              string
		Score, Up, Down int64
		ReplyCount      int64
		TombstonedAt    *time.Time
		LastActivity    *time.Time
	}
	for _, table := range []string{"forum_threads", "forum_replies"} {
		var rows []post
		q := w.db.Table(table).Select("id, score, up, down, tombstoned_at")
		if table == "forum_threads" {
			q = w.db.Table(table).Select("id, score, up, down, reply_count, tombstoned_at, last_activity")
		}
		if err := q.Order("id").Scan(&rows).Error; err != nil {
			t.Fatal(err)
		}
		for _, r := range rows {
			fmt.Fprintf(&b, "\n%s %s score=%d up=%d down=%d replies=%d tombstoned=%v", table, r.ID, r.Score, r.Up, r.Down, r.ReplyCount, r.TombstonedAt != nil)
			if r.LastActivity != nil {
				fmt.Fprintf(&b, " last=%s", r.LastActivity.UTC().Format(time.RFC3339Nano))
			}
		}
	}
	var votes []struct {
		AgentID, TargetID string
		Value             int
	}
	if err := w.db.Table("forum_votes").Select("agent_id, target_id, value").Order("agent_id, target_id").Scan(&votes).Error; err != nil {
		t.Fatal(err)
	}
	for _, v := range votes {
		fmt.Fprintf(&b, "\nvote %s %s %d", v.AgentID, v.TargetID, v.Value)
	}
	var counts []struct {
		Slug        string
		ThreadCount int64
	}
	if err := w.db.Table("forum_categories").Select("slug, thread_count").Order("slug").Scan(&counts).Error; err != nil {
		t.Fatal(err)
	}
	for _, c := range counts {
		fmt.Fprintf(&b, "\ncategory %s threads=%d", c.Slug, c.ThreadCount)
	}
	return b.String()
}

// ftUnchanged fails unless the forum's state is before.
func (w *ftWorld) ftUnchanged(t testing.TB, before string) {
	t.Helper()
	if after := w.ftState(t); after != before {
		t.Fatalf("state changed:\nbefore %s\nafter  %s", before, after)
	}
}

// ftStrPtr returns a pointer to s.
func ftStrPtr(s string) *string { return &s }

// ftExpectUnder fails unless r has status and code and names pointer or a member below it.
func ftExpectUnder(t testing.TB, r ftResult, status int, code, pointer string) {
	t.Helper()
	ftExpect(t, r, status, code)
	for _, p := range ftPointers(t, r) {
		if p == pointer || strings.HasPrefix(p, pointer+"/") {
			return
		}
	}
	t.Fatalf("problem %s names the pointers %q, want %q or below; body %s", r.Code, ftPointers(t, r), pointer, ftShort(r.Body))
}
