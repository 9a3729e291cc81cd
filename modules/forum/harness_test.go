package forum_test

// The harness of the forum's own tests: a fresh database of each dialect with only the forum's
// migrations, and the module's components on the shared test kit (testkit): a settable clock, the
// recording test double of port.Meter, and an engine that mounts the signed write routes under
// plugin.AgentPrefix behind the kit's stand-in guard, which only sets the principal, and the public read
// routes beside them. Requests are served in-process.
//
// Why a test double of the meter rather than billing's Meter: the forum must not import another
// module, and what these tests check is the forum's side of the contract: that each write charges once,
// on its own transaction, for the right operation, resource and declaration, and that a refused
// charge leaves no row. The double records every charge and adds a row to the caller's plan
// (so a failed write leaves no charge row, as with the real meter); it can be told to refuse with
// a billing problem. The real Meter is tested in modules/billing, and the whole signed, metered path
// (guard, idempotency, meter, forum) through the full stack in host/forum_test.go. Idempotent replay
// is likewise left to sigv1 and host: the writes here run through database.Write without a claim.

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/google/uuid"
	"gorm.io/gorm"

	"github.com/svcforum/svc/contracts/cursor"
	"github.com/svcforum/svc/contracts/plugin"
	"github.com/svcforum/svc/contracts/port"
	"github.com/svcforum/svc/contracts/problem"
	"github.com/svcforum/svc/contracts/schema"
	"github.com/svcforum/svc/database/dbtest"
	"github.com/svcforum/svc/modules/forum"
	"github.com/svcforum/svc/testkit"
)

func TestMain(m *testing.M) {
	dbtest.PrepareDocker()
	dbtest.Main(m)
}

// cursors is the cursor codec of a test, on its clock.
func cursors(t testing.TB, clock port.Clock) *cursor.Codec {
	t.Helper()
	c, err := cursor.New([][]byte{[]byte("forum test cursor key, 32 bytes or more")}, clock.Now)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// world is one test's database and the forum's components on it.
type world struct {
	dialect string
	db      *gorm.DB
	clock   *testkit.Clock
	meter   *testkit.Meter
	cats    *forum.Categories
	writes  *forum.Writes
	reads   *forum.Reads
	engine  *gin.Engine
	assets  port.Assets // nil: a deployment without the media module
	version *forum.ContentVersion
}

func newWorld(t testing.TB, dialect string) *world {
	t.Helper()
	return newWorldWith(t, dialect, nil)
}

// newWorldWith is a world whose forum resolves attachments through assets (a deployment with media).
func newWorldWith(t testing.TB, dialect string, assets port.Assets) *world {
	t.Helper()
	db := dbtest.Open(t, dialect, forum.Migrations())
	if err := db.AutoMigrate(&testkit.ChargeRow{}); err != nil {
		t.Fatal(err)
	}
	w := &world{dialect: dialect, db: db, clock: testkit.NewClock(testkit.T0), meter: testkit.NewMeter(1), assets: assets}
	w.cats = forum.NewCategories(db, w.clock)
	w.writes = forum.NewWrites(db, w.clock, w.meter, schema.Published(), cursors(t, w.clock), w.assets)
	w.reads = forum.NewReads(plugin.ReadDB{DB: db}, cursors(t, w.clock), w.assets)
	// Every read of these tests goes through the read cache, as in the service: a test that reads
	// what it changed checks that the change reached the cache.
	w.version = forum.NewContentVersion(db, slog.New(slog.DiscardHandler))
	if err := w.version.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = w.version.Stop(context.Background()) })
	w.writes.Notify(w.version)
	w.cats.Notify(w.version)
	w.reads.UseCache(forum.NewReadCache(w.version, db, w.clock))
	w.engine = mount(t, w.writes, w.reads)
	return w
}

// mount builds the test kit's engine with the read plane's public routes, and the write routes under
// the agent prefix behind the kit's stand-in guard.
func mount(t testing.TB, wr *forum.Writes, rd *forum.Reads) *gin.Engine {
	t.Helper()
	g := testkit.Engine(t)
	pub := rd.Routes()
	if pub.Module != forum.ID {
		t.Fatalf("read routes of module %q", pub.Module)
	}
	testkit.MountPublic(t, g, pub)
	agent := wr.Routes()
	if agent.Plane != plugin.Agent || agent.Module != forum.ID {
		t.Fatalf("write routes: %+v", agent)
	}
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
	}
	for path, found := range writes {
		if !found {
			t.Fatalf("no write route %s", path)
		}
	}
	testkit.MountAgent(t, g, plugin.ChannelEdge, []gin.HandlerFunc{testkit.StandInGuard}, agent.Agent)
	return g
}

// agent is an agent the tests write as.
type agent struct {
	ID, Org, Handle string
}

// newAgent returns an agent of a new organisation; handle must fit the read plane's pattern.
func newAgent(handle string) agent {
	return agent{ID: newID(), Org: newID(), Handle: handle}
}

// newID returns a lowercase UUIDv7.
func newID() string { return uuid.Must(uuid.NewV7()).String() }

func (w *world) serve(req *http.Request) testkit.Result { return testkit.Serve(w.engine, req) }

// marshal encodes a request body: bytes and strings as they are, anything else as JSON.
func marshal(t testing.TB, body any) []byte {
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

// request builds a write of raw to path (relative to the agent prefix) as a, with a fresh
// Idempotency-Key (which the write hands to the meter).
func request(a agent, path string, raw []byte) *http.Request {
	req := httptest.NewRequest(http.MethodPost, plugin.AgentPrefix+path, bytes.NewReader(raw))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Idempotency-Key", "ft-"+newID())
	return testkit.As(req, port.Principal{AgentID: a.ID, OrgID: a.Org, Handle: a.Handle})
}

// post serves a write of body to path as a.
func (w *world) post(t testing.TB, a agent, path string, body any) testkit.Result {
	t.Helper()
	return w.serve(request(a, path, marshal(t, body)))
}

// get serves a GET of target (a full path with its query) on the public plane.
func (w *world) get(target string, hdr ...string) testkit.Result {
	req := httptest.NewRequest(http.MethodGet, target, nil)
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	return w.serve(req)
}

// pointers returns the pointers a problem names: the entries of errors (422) and its own pointer.
func pointers(t testing.TB, r testkit.Result) []string {
	t.Helper()
	var p struct {
		Pointer *string `json:"pointer"`
		Errors  []struct {
			Pointer string `json:"pointer"`
			Code    string `json:"code"`
		} `json:"errors"`
	}
	r.Decode(t, &p)
	var out []string
	if p.Pointer != nil {
		out = append(out, *p.Pointer)
	}
	for _, e := range p.Errors {
		out = append(out, e.Pointer)
	}
	return out
}

// expectAt fails unless r has status and code and names pointer.
func expectAt(t testing.TB, r testkit.Result, status int, code, pointer string) {
	t.Helper()
	testkit.Expect(t, r, status, code)
	for _, p := range pointers(t, r) {
		if p == pointer {
			return
		}
	}
	t.Fatalf("problem %s names the pointers %q, want %q; body %s", r.Code, pointers(t, r), pointer, testkit.Short(r.Body))
}

// expect422 fails unless r is a 422 validation_failed naming pointer; a non-empty keyword must be
// the code of that entry.
func expect422(t testing.TB, r testkit.Result, pointer, keyword string) {
	t.Helper()
	testkit.Expect(t, r, http.StatusUnprocessableEntity, string(problem.ValidationFailed))
	var p struct {
		Errors []struct {
			Pointer string `json:"pointer"`
			Code    string `json:"code"`
		} `json:"errors"`
	}
	r.Decode(t, &p)
	for _, e := range p.Errors {
		if e.Pointer == pointer && (keyword == "" || e.Code == keyword) {
			return
		}
	}
	t.Fatalf("422 lacks %s (%s); body %s", pointer, keyword, testkit.Short(r.Body))
}

// billing is the billing declaration every write of these tests sends.
func billing() map[string]any {
	return map[string]any{"pricing_version": "2026-11", "max_credit_cost": 10}
}

// category creates an open category and returns its id.
func (w *world) category(t testing.TB, slug string) string {
	t.Helper()
	c, err := w.cats.Create(context.Background(), slug, "Category "+slug, "Threads about "+slug+".")
	if err != nil {
		t.Fatalf("create category %s: %v", slug, err)
	}
	return c.ID
}

// setState sets a category's state through Categories.Update.
func (w *world) setState(t testing.TB, slug, state string) {
	t.Helper()
	if _, err := w.cats.Update(context.Background(), slug, forum.CategoryChange{State: &state}); err != nil {
		t.Fatalf("set %s %s: %v", slug, state, err)
	}
}

// threadBody is a valid CreateThreadRequest in category; mods change it.
func threadBody(category string, mods ...func(map[string]any)) map[string]any {
	b := map[string]any{"category_id": category, "title": "Lentils for a cold evening",
		"body_markdown": "How do you season **red lentils**?", "billing": billing()}
	for _, m := range mods {
		m(b)
	}
	return b
}

// replyBody is a valid CreateReplyRequest to thread (parent "" for none); mods change it.
func replyBody(thread, parent string, mods ...func(map[string]any)) map[string]any {
	b := map[string]any{"thread_id": thread, "body_markdown": "Cumin, then lemon at the end.", "billing": billing()}
	if parent != "" {
		b["parent_reply_id"] = parent
	}
	for _, m := range mods {
		m(b)
	}
	return b
}

// targetBody is the body of a vote ("up", "down"), a clear (value "") or a tombstone (value "") on
// the thread or reply id.
func targetBody(kind, id, value string) map[string]any {
	b := map[string]any{"billing": billing()}
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

// thread creates a thread as a and returns its id; the answer must match its schema.
func (w *world) thread(t testing.TB, a agent, category string, mods ...func(map[string]any)) string {
	t.Helper()
	r := w.post(t, a, forum.ThreadsPath, threadBody(category, mods...))
	testkit.Expect(t, r, http.StatusOK, "")
	testkit.Valid(t, "created-thread-response", r.Body)
	var out forum.CreatedThreadResponse
	r.Decode(t, &out)
	return out.ThreadID
}

// reply creates a reply as a and returns its id; the answer must match its schema.
func (w *world) reply(t testing.TB, a agent, thread, parent string, mods ...func(map[string]any)) string {
	t.Helper()
	r := w.post(t, a, forum.RepliesPath, replyBody(thread, parent, mods...))
	testkit.Expect(t, r, http.StatusOK, "")
	testkit.Valid(t, "created-reply-response", r.Body)
	var out forum.CreatedReplyResponse
	r.Decode(t, &out)
	return out.ReplyID
}

// vote votes value on the target as a, and returns the answer (validated).
func (w *world) vote(t testing.TB, a agent, kind, id, value string) forum.VoteResponse {
	t.Helper()
	path := forum.VotesPath
	if value == "" {
		path = forum.ClearPath
	}
	r := w.post(t, a, path, targetBody(kind, id, value))
	testkit.Expect(t, r, http.StatusOK, "")
	testkit.Valid(t, "vote-response", r.Body)
	var out forum.VoteResponse
	r.Decode(t, &out)
	return out
}

// tombstone tombstones the target as a.
func (w *world) tombstone(t testing.TB, a agent, kind, id string) forum.TombstoneResponse {
	t.Helper()
	r := w.post(t, a, forum.TombstonePath, targetBody(kind, id, ""))
	testkit.Expect(t, r, http.StatusOK, "")
	testkit.Valid(t, "tombstone-response", r.Body)
	var out forum.TombstoneResponse
	r.Decode(t, &out)
	return out
}

// read GETs target, expects a 200 that validates against schemaName, and decodes it into v.
func (w *world) read(t testing.TB, target, schemaName string, v any) testkit.Result {
	t.Helper()
	r := w.get(target)
	testkit.Expect(t, r, http.StatusOK, "")
	if ct := r.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
		t.Fatalf("%s: Content-Type %q", target, ct)
	}
	if schemaName != "" {
		testkit.Valid(t, schemaName, r.Body)
	}
	if v != nil {
		r.Decode(t, v)
	}
	return r
}

// getThread reads a thread from the read plane.
func (w *world) getThread(t testing.TB, id string) forum.Thread {
	t.Helper()
	var th forum.Thread
	w.read(t, forum.ThreadPath+"/"+id, "thread", &th)
	return th
}

// getReply reads a reply from the read plane.
func (w *world) getReply(t testing.TB, id string) forum.Reply {
	t.Helper()
	var rp forum.Reply
	w.read(t, forum.ReplyPath+"/"+id, "reply", &rp)
	return rp
}

// count returns the rows of table.
func (w *world) count(t testing.TB, table string) int64 {
	t.Helper()
	var n int64
	if err := w.db.Table(table).Count(&n).Error; err != nil {
		t.Fatal(err)
	}
	return n
}

// state is everything a write may change, for comparing before and after a refused one.
func (w *world) state(t testing.TB) string {
	t.Helper()
	var b strings.Builder
	for _, table := range []string{"forum_threads", "forum_replies", "forum_votes", "forum_references", "testkit_charges"} {
		fmt.Fprintf(&b, "%s=%d ", table, w.count(t, table))
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

// unchanged fails unless the forum's state is before.
func (w *world) unchanged(t testing.TB, before string) {
	t.Helper()
	if after := w.state(t); after != before {
		t.Fatalf("state changed:\nbefore %s\nafter  %s", before, after)
	}
}

// strPtr returns a pointer to s.
func strPtr(s string) *string { return &s }

// expectUnder fails unless r has status and code and names pointer or a member below it.
func expectUnder(t testing.TB, r testkit.Result, status int, code, pointer string) {
	t.Helper()
	testkit.Expect(t, r, status, code)
	for _, p := range pointers(t, r) {
		if p == pointer || strings.HasPrefix(p, pointer+"/") {
			return
		}
	}
	t.Fatalf("problem %s names the pointers %q, want %q or below; body %s", r.Code, pointers(t, r), pointer, testkit.Short(r.Body))
}
