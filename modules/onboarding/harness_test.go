package onboarding_test

// The onboarding module's own tests: a fresh database of each dialect with the module's migrations, the
// test kit's engine, and test doubles of sigv1's ports (port.Enrolment believes a test header; the
// signed redemption with real keys is tested in host). Mail is received by a real SMTP server (go-smtp)
// in the test process.

import (
	"context"
	"html"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/gin-gonic/gin"
	"gorm.io/gorm"

	"github.com/svcforum/svc/contracts/plugin"
	"github.com/svcforum/svc/contracts/port"
	"github.com/svcforum/svc/contracts/render"
	"github.com/svcforum/svc/contracts/schema"
	"github.com/svcforum/svc/contracts/site"
	"github.com/svcforum/svc/database/dbtest"
	"github.com/svcforum/svc/modules/onboarding"
	"github.com/svcforum/svc/testkit"
	"github.com/svcforum/svc/testkit/mailsink"
)

func TestMain(m *testing.M) {
	dbtest.PrepareDocker()
	dbtest.Main(m)
}

const baseURL = "http://svc.test"

type world struct {
	db      *gorm.DB
	clock   *testkit.Clock
	cfg     onboarding.Config
	apps    *onboarding.Applications
	owners  *onboarding.Owners
	drafts  *onboarding.Drafts
	linker  *onboarding.Linker
	sweeper *onboarding.Sweeper
	outbox  *onboarding.Outbox
	sender  *onboarding.Sender
	engine  *gin.Engine
	limits  *testkit.Limits
	deploy  *plugin.Deployment
	enrolls testkit.Enrolment
	// releases is the release the deployment publishes, as the releases module would name it.
	releases port.ConnectorReleases
}

// testRelease is a published release of svc-connector, as port.ConnectorReleases names it.
type testRelease port.ConnectorRelease

func (r testRelease) ConnectorRelease() (port.ConnectorRelease, bool) {
	return port.ConnectorRelease(r), true
}

// theRelease is the release the tests' deployment publishes.
var theRelease = testRelease{Version: "v0.3.1", InstallScript: baseURL + "/releases/svc-connector/install.sh",
	ReleaseKey: "svc-release+0a1b2c3d+AZxW1/+test=="}

func newWorld(t testing.TB, dialect string, cfg onboarding.Config) *world {
	t.Helper()
	return newWorldOn(t, dbtest.Open(t, dialect, onboarding.Migrations()), cfg)
}

// newWorldOn is newWorld on db, a fresh database with the module's migrations applied.
func newWorldOn(t testing.TB, db *gorm.DB, cfg onboarding.Config) *world {
	t.Helper()
	if err := db.AutoMigrate(&testkit.JobRow{}, &testkit.AgentRow{}); err != nil {
		t.Fatal(err)
	}
	w := &world{db: db, clock: testkit.NewClock(testkit.T0), enrolls: testkit.Enrolment{DB: db},
		deploy: &plugin.Deployment{BaseURL: baseURL, Modules: []string{"onboarding", "sigv1"},
			AgentAPI: map[string]string{"edge": "https://agents.svc.test/agent-api/v1"}}}
	w.limits = &testkit.Limits{Clock: w.clock}
	w.releases = theRelease
	log := slog.New(slog.DiscardHandler)
	if cfg.MailFrom == "" {
		cfg.MailFrom = "noreply@svc.test"
	}
	if cfg.DraftKeys == "" {
		cfg.DraftKeys = testDraftKey
	}
	w.cfg = cfg
	mailer := onboarding.NewMailer(cfg, testkit.Jobs{}, w.clock)
	w.apps = onboarding.NewApplications(db, cfg, w.clock, log, w.deploy, w.enrolls, w.limits, mailer, schema.Published())
	w.owners = onboarding.NewOwners(db, cfg, w.clock, log, w.deploy, w.limits, mailer, schema.Published())
	keys, err := onboarding.NewKeyring(cfg)
	if err != nil {
		t.Fatal(err)
	}
	w.drafts = onboarding.NewDrafts(db, keys, w.clock, log)
	w.linker = onboarding.NewLinker(db, w.clock, w.deploy, onboarding.NewSender(db, cfg, w.clock, log, w.deploy, w.releases))
	w.sweeper = onboarding.NewSweeper(db, cfg, w.clock)
	w.outbox = onboarding.NewOutbox(db)
	w.sender = onboarding.NewSender(db, cfg, w.clock, log, w.deploy, w.releases)
	s := site.New(onboarding.Nav())
	w.engine = testkit.Engine(t)
	w.engine.Use(recordCode)
	owner := onboarding.NewOwnerPages(w.owners, w.drafts, w.apps, onboarding.NewSessions(db, cfg, w.deploy), s)
	routes := onboarding.Routes(onboarding.NewAPI(w.apps, w.enrolls, schema.Published()), onboarding.NewPages(w.apps, s, w.releases), owner, w.deploy, s)
	testkit.MountPublic(t, w.engine, routes)
	agent := onboarding.AgentRoutes(onboarding.NewAgentAPI(db, w.owners, w.drafts, schema.Published()))
	testkit.MountAgent(t, w.engine, plugin.ChannelEdge, []gin.HandlerFunc{testkit.StandInGuard}, agent.Agent)
	return w
}

// testDraftKey encrypts the drafts of the tests (32 bytes, not a secret).
const testDraftKey = "dGVzdCBkcmFmdCBrZXksIDMyIGJ5dGVzLCBwdWJsaWM="

// codeSlot is where recordCode leaves the problem code a request was answered with.
type codeSlot struct{}

// recordCode gives the test the problem code of a page too (the host's access log records it; a page's
// body is HTML, so testkit.Serve cannot read it there).
func recordCode(c *gin.Context) {
	slot, _ := c.Request.Context().Value(codeSlot{}).(*string)
	c.Next()
	if slot != nil {
		*slot = render.ProblemCode(c)
	}
}

// do serves one request; a form post carries the site's Origin, as a browser's does. The result's Code
// is the problem's code, of a page as of a JSON problem.
func (w *world) do(t testing.TB, method, path, contentType, body string, header http.Header) testkit.Result {
	t.Helper()
	req := httptest.NewRequest(method, path, strings.NewReader(body))
	req.Host = "svc.test"
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	for k, vs := range header {
		req.Header[k] = vs
	}
	var code string
	req = req.WithContext(context.WithValue(req.Context(), codeSlot{}, &code))
	r := testkit.Serve(w.engine, req)
	if r.Code == "" {
		r.Code = code
	}
	return r
}

// agent sends a JSON request on the agent plane as p (the stand-in guard believes the test headers).
func (w *world) agent(t testing.TB, p port.Principal, method, path, body string) testkit.Result {
	t.Helper()
	req := httptest.NewRequest(method, plugin.AgentPrefix+path, strings.NewReader(body))
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	return testkit.Serve(w.engine, testkit.As(req, p))
}

func (w *world) apply(t testing.TB, body string) testkit.Result {
	t.Helper()
	return w.do(t, http.MethodPost, onboarding.APIPrefix+"/applications", "application/json", body, nil)
}

// browser is a person's browser: it keeps the CSRF cookie and the owner's session cookie (sent to
// /owner only, its path), and sends the form's token back.
type browser struct {
	w       *world
	cookie  string // "csrf_token=..."
	session string // the svc_owner cookie's value, "" when none
}

const sessionCookie = "svc_owner"

// header is what the browser sends to any path of the site.
func (b *browser) header(string) http.Header {
	h := http.Header{}
	var cookies []string
	if b.cookie != "" {
		cookies = append(cookies, b.cookie)
	}
	if b.session != "" { // the cookie's Path is /: every path of the site
		cookies = append(cookies, sessionCookie+"="+b.session)
	}
	if len(cookies) > 0 {
		h.Set("Cookie", strings.Join(cookies, "; "))
	}
	return h
}

// keep stores the cookies an answer sets, and forgets those it clears.
func (b *browser) keep(r testkit.Result) {
	for _, c := range (&http.Response{Header: r.Header}).Cookies() {
		switch c.Name {
		case "csrf_token":
			b.cookie = c.Name + "=" + c.Value
		case sessionCookie:
			b.session = c.Value
			if c.MaxAge < 0 {
				b.session = ""
			}
		}
	}
}

var csrfField = regexp.MustCompile(`name="csrf_token" value="([^"]+)"`)

// get loads a page and keeps its cookie and form token.
func (b *browser) get(t testing.TB, path string) (testkit.Result, string) {
	t.Helper()
	r := b.w.do(t, http.MethodGet, path, "", "", b.header(path))
	b.keep(r)
	token := ""
	if m := csrfField.FindStringSubmatch(string(r.Body)); m != nil {
		token = html.UnescapeString(m[1])
	}
	return r, token
}

// post sends a form from the site's origin with the cookies, and keeps those the answer sets.
func (b *browser) post(t testing.TB, path string, form url.Values) testkit.Result {
	t.Helper()
	h := b.header(path)
	h.Set("Origin", baseURL)
	r := b.w.do(t, http.MethodPost, path, "application/x-www-form-urlencoded", form.Encode(), h)
	b.keep(r)
	return r
}

// sendAll runs the sender on every recorded job once, at attempt.
func (w *world) sendAll(t testing.TB, attempt int) []error {
	t.Helper()
	var rows []testkit.JobRow
	if err := w.db.Where("kind = ?", onboarding.SendArgs{}.Kind()).Order("id").Find(&rows).Error; err != nil {
		t.Fatal(err)
	}
	var errs []error
	for _, row := range rows {
		job, err := testkit.Job[onboarding.SendArgs](row, attempt)
		if err != nil {
			t.Fatal(err)
		}
		errs = append(errs, w.sender.Work(context.Background(), job))
	}
	return errs
}

// runLinks runs the owner-link decider on every recorded onboarding_owner_link job once (a decided
// link is left alone, as when River runs a job again).
func (w *world) runLinks(t testing.TB) {
	t.Helper()
	var rows []testkit.JobRow
	if err := w.db.Where("kind = ?", onboarding.LinkArgs{}.Kind()).Order("id").Find(&rows).Error; err != nil {
		t.Fatal(err)
	}
	for _, row := range rows {
		job, err := testkit.Job[onboarding.LinkArgs](row, 1)
		if err != nil {
			t.Fatal(err)
		}
		if err := w.linker.Work(context.Background(), job); err != nil {
			t.Fatal(err)
		}
	}
}

// newMailWorld is a world of dialect whose mail goes over SMTP to a new sink, with the default
// configuration it was made with.
func newMailWorld(t *testing.T, dialect string) (*world, *mailsink.Sink, onboarding.Config) {
	t.Helper()
	s := mailsink.Start(t)
	cfg := onboarding.DefaultConfig()
	cfg.SMTPURL = s.URL()
	return newWorld(t, dialect, cfg), s, cfg
}
