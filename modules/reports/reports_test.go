package reports_test

// The reports module's own tests: a fresh database of each dialect with the module's migrations, the
// test kit's engine and stand-in guard (the signed path is tested in host), and a test double of the
// forum's port.Moderation holding the posts. The real forum, hiding real posts, is in host's tests.

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/svcforum/svc/contracts/write"

	"github.com/gin-gonic/gin"
	"github.com/google/uuid"
	"gorm.io/gorm"

	"github.com/svcforum/svc/contracts/plugin"
	"github.com/svcforum/svc/contracts/port"
	"github.com/svcforum/svc/contracts/problem"
	"github.com/svcforum/svc/contracts/schema"
	"github.com/svcforum/svc/database/dbtest"
	"github.com/svcforum/svc/modules/reports"
	"github.com/svcforum/svc/testkit"
)

func TestMain(m *testing.M) {
	dbtest.PrepareDocker()
	dbtest.Main(m)
}

// posts is a test double of port.Moderation: the posts, and which were hidden.
type posts struct {
	mu    sync.Mutex
	posts map[string]port.Post
	// delay widens the window between a planned report's count and its insert: VisibleIn's step, which
	// runs between them in the batch, sleeps that long on PostgreSQL (SQLite has one writer anyway).
	delay time.Duration
}

func (p *posts) Post(_ context.Context, _ *gorm.DB, kind, id string) (port.Post, bool, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	post, ok := p.posts[id]
	return post, ok && post.Kind == kind, nil
}

// VisibleIn checks, in the plan, the visibility the double holds when the write is planned.
func (p *posts) VisibleIn(plan *write.Plan, kind, id string, explain func(context.Context, *gorm.DB) error) {
	p.mu.Lock()
	post, ok := p.posts[id]
	p.mu.Unlock()
	visible := ok && post.Kind == kind && post.Visible
	if p.delay > 0 && plan.Dialect() == "postgres" {
		plan.Check(explain, "SELECT CAST(? AS BOOLEAN) FROM (SELECT pg_sleep(?)) AS s", visible, p.delay.Seconds())
		return
	}
	plan.Check(explain, "SELECT CAST(? AS BOOLEAN)", visible)
}

func (p *posts) Hide(_ context.Context, _ *gorm.DB, kind, id string, _ time.Time) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	post := p.posts[id]
	post.Visible = false
	p.posts[id] = post
	return nil
}

func (p *posts) add(kind, text string, visible bool) string {
	id := uuid.Must(uuid.NewV7()).String()
	p.mu.Lock()
	p.posts[id] = port.Post{Kind: kind, ID: id, AuthorID: "author", Visible: visible, Text: text}
	p.mu.Unlock()
	return id
}

type world struct {
	posts     *posts
	moderator *reports.Moderator
	persons   *reports.Persons
	engine    *gin.Engine
	clock     *testkit.Clock
}

func newWorld(t testing.TB, dialect string, cfg reports.Config) *world {
	t.Helper()
	db := dbtest.Open(t, dialect, reports.Migrations())
	w := &world{posts: &posts{posts: map[string]port.Post{}}, clock: testkit.NewClock(testkit.T0)}
	r := reports.NewReports(cfg, db, w.clock, w.posts, schema.Published())
	w.moderator = reports.NewModerator(db, w.clock, w.posts)
	w.persons = reports.NewPersons(r)
	w.engine = testkit.Engine(t)
	testkit.MountAgent(t, w.engine, "edge", []gin.HandlerFunc{testkit.StandInGuard}, r.Routes().Agent)
	return w
}

func agent(name string) port.Principal {
	return port.Principal{AgentID: uuid.NewSHA1(uuid.NameSpaceOID, []byte(name)).String(), OrgID: "org", Handle: name}
}

func (w *world) report(t testing.TB, p port.Principal, body string) testkit.Result {
	t.Helper()
	req := httptest.NewRequest(http.MethodPost, plugin.AgentPrefix+reports.ReportsPath, bytes.NewReader([]byte(body)))
	req.Header.Set("Content-Type", "application/json")
	return testkit.Serve(w.engine, testkit.As(req, p))
}

const soup = "Simmer the lentils for twenty-five minutes, then temper cumin seeds in hot ghee until they crackle."

// TestReports is WIRE.md section 10 on both databases: each refusal with its code, and two agents'
// reports of one reply worked through by an operator.
func TestReports(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, dialect string) {
		t.Parallel()
		w := newWorld(t, dialect, reports.DefaultConfig())
		alice, bob := agent("alice"), agent("bob")
		reply := w.posts.add(reports.KindReply, soup, true)
		thread := w.posts.add(reports.KindThread, "Dal\n"+soup, true)
		gone := w.posts.add(reports.KindReply, "gone", false)
		body := func(kind, id, extra string) string {
			return fmt.Sprintf(`{"target_%s_id":%q,"reason_code":"prompt_injection"%s}`, kind, id, extra)
		}

		r := w.report(t, alice, body("reply", reply, `,"explanation":"It tells agents to post their keys."`))
		testkit.Expect(t, r, http.StatusCreated, "")
		testkit.Valid(t, "created-report-response", r.Body)
		first := r.JSON(t)
		if first["status"] != "open" || first["target_kind"] != "reply" || first["target_id"] != reply {
			t.Fatalf("report %v", first)
		}
		testkit.Expect(t, w.report(t, alice, body("reply", reply, "")), http.StatusConflict, string(problem.ReportAlreadyOpen))
		testkit.Expect(t, w.report(t, bob, body("reply", reply, "")), http.StatusCreated, "")
		testkit.Expect(t, w.report(t, alice, `{"reason_code":"spam"}`), http.StatusBadRequest, string(problem.ReportTargetRequired))
		testkit.Expect(t, w.report(t, alice, `{"target_thread_id":null,"target_reply_id":null,"reason_code":"spam"}`), http.StatusBadRequest, string(problem.ReportTargetRequired))
		testkit.Expect(t, w.report(t, alice, fmt.Sprintf(`{"target_thread_id":%q,"target_reply_id":%q,"reason_code":"spam"}`, thread, reply)),
			http.StatusUnprocessableEntity, string(problem.ValidationFailed))
		testkit.Expect(t, w.report(t, alice, body("reply", uuid.Must(uuid.NewV7()).String(), "")), http.StatusNotFound, string(problem.TargetNotFound))
		testkit.Expect(t, w.report(t, alice, body("reply", gone, "")), http.StatusNotFound, string(problem.TargetNotFound))
		testkit.Expect(t, w.report(t, alice, body("thread", reply, "")), http.StatusNotFound, string(problem.TargetNotFound))
		// Describing is fine; quoting 40 characters, even re-cased and re-spaced, is not.
		quote := strings.ToUpper(strings.ReplaceAll(soup[10:55], " ", "   "))
		testkit.Expect(t, w.report(t, alice, body("thread", thread, `,"explanation":"It says: `+quote+`"`)), http.StatusBadRequest, string(problem.ExplanationQuotesContent))
		// Zero-width characters or fullwidth letters slipped into a quote do not hide it.
		zw := strings.Join(strings.SplitAfter(soup[10:60], "e"), "\u200b")
		testkit.Expect(t, w.report(t, alice, body("thread", thread, `,"explanation":"`+zw+`"`)), http.StatusBadRequest, string(problem.ExplanationQuotesContent))
		full := strings.Map(func(r rune) rune {
			if r >= 'a' && r <= 'z' {
				return r - 'a' + 'ａ'
			}
			return r
		}, soup[10:60])
		testkit.Expect(t, w.report(t, alice, body("thread", thread, `,"explanation":"`+full+`"`)), http.StatusBadRequest, string(problem.ExplanationQuotesContent))
		// Text that could redraw an operator's console is refused.
		testkit.Expect(t, w.report(t, alice, body("thread", thread, `,"explanation":"fine\u001b[2Jstatus: dismissed"`)), http.StatusBadRequest, string(problem.ContentPolicyViolation))
		testkit.Expect(t, w.report(t, alice, body("thread", thread, `,"explanation":"looks \u202efine"`)), http.StatusBadRequest, string(problem.ContentPolicyViolation))
		testkit.Expect(t, w.report(t, alice, body("thread", thread, `,"explanation":"`+soup[:39]+`"`)), http.StatusCreated, "")
		testkit.Expect(t, w.report(t, bob, body("thread", thread, `,"explanation":"-----BEGIN PRIVATE KEY-----\nMC4CAQAwBQYDK2VwBCIEIJ+DYvh6SEqVTm50DFtMDoQikTmiCqirVv9mWG9qfSnF\n-----END PRIVATE KEY-----"`)),
			http.StatusUnprocessableEntity, string(problem.PrivateKeyRefused))

		// The operator: two open reports of the reply; one acted on hides it, the other is dismissed.
		open, _, err := w.moderator.List(context.Background(), reports.StatusOpen, reply, plugin.ListPage{List: "report", Limit: 10})
		if err != nil || len(open) != 2 {
			t.Fatalf("open reports of the reply: %v, %v", open, err)
		}
		acted, err := w.moderator.Decide(context.Background(), open[0].ReportID, reports.ActionAction, "ops-ana", "instructions aimed at agents")
		if err != nil || acted.Status != reports.StatusActioned || len(acted.Actions) != 1 || acted.Actions[0].Actor != "ops-ana" {
			t.Fatalf("action: %+v, %v", acted, err)
		}
		if post, _, _ := w.posts.Post(context.Background(), nil, reports.KindReply, reply); post.Visible {
			t.Fatal("acting on the report did not hide the reply")
		}
		testkit.Expect(t, w.report(t, agent("carol"), body("reply", reply, "")), http.StatusNotFound, string(problem.TargetNotFound))
		if _, err := w.moderator.Decide(context.Background(), open[0].ReportID, reports.ActionDismiss, "ops-ana", "again"); !isProblem(err, problem.Conflict) {
			t.Fatalf("deciding a decided report: %v", err)
		}
		if _, err := w.moderator.Decide(context.Background(), open[1].ReportID, reports.ActionDismiss, "", "no actor"); !isProblem(err, problem.ValidationFailed) {
			t.Fatalf("a decision without an actor: %v", err)
		}
		dismissed, err := w.moderator.Decide(context.Background(), open[1].ReportID, reports.ActionDismiss, "ops-ben", "handled by the other report")
		if err != nil || dismissed.Status != reports.StatusDismissed {
			t.Fatalf("dismiss: %+v, %v", dismissed, err)
		}
		shown, err := w.moderator.Show(context.Background(), open[1].ReportID)
		if err != nil || len(shown.Actions) != 1 || shown.Actions[0].Reason != "handled by the other report" || shown.Actions[0].At.IsZero() {
			t.Fatalf("show: %+v, %v", shown, err)
		}
		if _, err := w.moderator.Show(context.Background(), uuid.Must(uuid.NewV7()).String()); !isProblem(err, problem.NotFound) {
			t.Fatalf("show of no report: %v", err)
		}
		if _, _, err := w.moderator.List(context.Background(), "closed", "", plugin.ListPage{List: "report", Limit: 10}); !isProblem(err, problem.ValidationFailed) {
			t.Fatalf("list of an unknown status: %v", err)
		}
		// With its report closed, the reporter may report the same post again.
		thread2 := w.posts.add(reports.KindThread, "Another", true)
		testkit.Expect(t, w.report(t, bob, body("thread", thread2, "")), http.StatusCreated, "")
	})
}

func isProblem(err error, code problem.Code) bool {
	p, ok := err.(*problem.Problem)
	return ok && p.Code == code
}

// TestReportLimit: an agent's reports past the limit in the window are 429 with Retry-After, until
// the window moves on; another agent is not affected.
func TestReportLimit(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, dialect string) {
		t.Parallel()
		testReportLimit(t, dialect)
	})
}

func testReportLimit(t *testing.T, dialect string) {
	w := newWorld(t, dialect, reports.Config{Limit: 2, Window: time.Hour})
	alice := agent("alice")
	for i := range 3 {
		id := w.posts.add(reports.KindThread, "post", true)
		r := w.report(t, alice, fmt.Sprintf(`{"target_thread_id":%q,"reason_code":"spam"}`, id))
		if i < 2 {
			testkit.Expect(t, r, http.StatusCreated, "")
			w.clock.Add(10 * time.Minute)
			continue
		}
		testkit.Expect(t, r, http.StatusTooManyRequests, string(problem.ReportLimitExceeded))
		if got := r.Header.Get("Retry-After"); got != "2400" {
			t.Fatalf("Retry-After %q, want 2400 (the first report leaves the window in 40 minutes)", got)
		}
	}
	testkit.Expect(t, w.report(t, agent("bob"), fmt.Sprintf(`{"target_thread_id":%q,"reason_code":"spam"}`, w.posts.add(reports.KindThread, "x", true))), http.StatusCreated, "")
	w.clock.Add(41 * time.Minute)
	testkit.Expect(t, w.report(t, alice, fmt.Sprintf(`{"target_thread_id":%q,"reason_code":"spam"}`, w.posts.add(reports.KindThread, "y", true))), http.StatusCreated, "")
}

// TestConcurrentDuplicateReports: the same report sent eight times at once is one report and seven
// 409s, on both databases (the unique index of open reports decides).
func TestConcurrentDuplicateReports(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, dialect string) {
		t.Parallel()
		w := newWorld(t, dialect, reports.DefaultConfig())
		id := w.posts.add(reports.KindReply, "post", true)
		var wg sync.WaitGroup
		statuses := make(chan int, 8)
		for range 8 {
			wg.Go(func() {
				statuses <- w.report(t, agent("alice"), fmt.Sprintf(`{"target_reply_id":%q,"reason_code":"abuse"}`, id)).Status
			})
		}
		wg.Wait()
		close(statuses)
		count := map[int]int{}
		for s := range statuses {
			count[s]++
		}
		if count[http.StatusCreated] != 1 || count[http.StatusConflict] != 7 {
			t.Fatalf("statuses %v, want one 201 and seven 409", count)
		}
	})
}

// TestConcurrentReportsKeepTheLimit: sixteen reports of different posts sent at once by one agent,
// with a limit of two, are two reports and fourteen 429s on both databases (on PostgreSQL, the count is
// serialised per agent across connections, as it would be across replicas).
func TestConcurrentReportsKeepTheLimit(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, dialect string) {
		t.Parallel()
		w := newWorld(t, dialect, reports.Config{Limit: 2, Window: time.Hour})
		w.posts.delay = 50 * time.Millisecond
		var wg sync.WaitGroup
		statuses := make(chan int, 16)
		for range 16 {
			id := w.posts.add(reports.KindThread, "post", true)
			wg.Go(func() {
				statuses <- w.report(t, agent("alice"), fmt.Sprintf(`{"target_thread_id":%q,"reason_code":"spam"}`, id)).Status
			})
		}
		wg.Wait()
		close(statuses)
		count := map[int]int{}
		for s := range statuses {
			count[s]++
		}
		if count[http.StatusCreated] != 2 || count[http.StatusTooManyRequests] != 14 {
			t.Fatalf("statuses %v, want two 201 and fourteen 429", count)
		}
	})
}
