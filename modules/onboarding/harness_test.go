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
	"github.com/svcforum/svc/contracts/schema"
	"github.com/svcforum/svc/contracts/site"
	"github.com/svcforum/svc/database/dbtest"
	"github.com/svcforum/svc/modules/onboarding"
	"github.com/svcforum/svc/testkit"
)

func TestMain(m *testing.M) {
	dbtest.PrepareDocker()
	dbtest.Main(m)
}

const baseURL = "http://svc.test"

type world struct {
	db      *gorm.DB
	clock   *testkit.Clock
	apps    *onboarding.Applications
	outbox  *onboarding.Outbox
	sender  *onboarding.Sender
	engine  *gin.Engine
	limits  *testkit.Limits
	deploy  *plugin.Deployment
	enrolls testkit.Enrolment
}

func newWorld(t testing.TB, dialect string, cfg onboarding.Config) *world {
	t.Helper()
	db := dbtest.Open(t, dialect, onboarding.Migrations())
	if err := db.AutoMigrate(&testkit.JobRow{}, &testkit.AgentRow{}); err != nil {
		t.Fatal(err)
	}
	w := &world{db: db, clock: testkit.NewClock(testkit.T0), enrolls: testkit.Enrolment{DB: db},
		deploy: &plugin.Deployment{BaseURL: baseURL, Modules: []string{"onboarding", "sigv1"},
			AgentAPI: map[string]string{"edge": "https://agents.svc.test/agent-api/v1"}}}
	w.limits = &testkit.Limits{Clock: w.clock}
	log := slog.New(slog.DiscardHandler)
	if cfg.MailFrom == "" {
		cfg.MailFrom = "noreply@svc.test"
	}
	mailer := onboarding.NewMailer(cfg, testkit.Jobs{}, w.clock)
	w.apps = onboarding.NewApplications(db, cfg, w.clock, log, w.deploy, w.enrolls, w.limits, mailer, schema.Published())
	w.outbox = onboarding.NewOutbox(db)
	w.sender = onboarding.NewSender(db, cfg, w.clock, log)
	s := site.New(onboarding.Nav())
	w.engine = testkit.Engine(t)
	routes := onboarding.Routes(onboarding.NewAPI(w.apps, w.enrolls, schema.Published()), onboarding.NewPages(w.apps, s), w.deploy, s)
	testkit.MountPublic(t, w.engine, routes)
	return w
}

// do serves one request; a form post carries the site's Origin, as a browser's does.
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
	return testkit.Serve(w.engine, req)
}

func (w *world) apply(t testing.TB, body string) testkit.Result {
	t.Helper()
	return w.do(t, http.MethodPost, onboarding.APIPrefix+"/applications", "application/json", body, nil)
}

// browser is a person's browser: it keeps the CSRF cookie and sends the form's token back.
type browser struct {
	w      *world
	cookie string
}

var csrfField = regexp.MustCompile(`name="csrf_token" value="([^"]+)"`)

// get loads a page and keeps its cookie and form token.
func (b *browser) get(t testing.TB, path string) (testkit.Result, string) {
	t.Helper()
	h := http.Header{}
	if b.cookie != "" {
		h.Set("Cookie", b.cookie)
	}
	r := b.w.do(t, http.MethodGet, path, "", "", h)
	for _, c := range (&http.Response{Header: r.Header}).Cookies() {
		if c.Name == "csrf_token" {
			b.cookie = c.Name + "=" + c.Value
		}
	}
	token := ""
	if m := csrfField.FindStringSubmatch(string(r.Body)); m != nil {
		token = html.UnescapeString(m[1])
	}
	return r, token
}

// post sends a form from the site's origin with the cookie.
func (b *browser) post(t testing.TB, path string, form url.Values) testkit.Result {
	t.Helper()
	h := http.Header{"Origin": {baseURL}}
	if b.cookie != "" {
		h.Set("Cookie", b.cookie)
	}
	return b.w.do(t, http.MethodPost, path, "application/x-www-form-urlencoded", form.Encode(), h)
}

// sendAll runs the sender on every recorded job once, at attempt.
func (w *world) sendAll(t testing.TB, attempt int) []error {
	t.Helper()
	var rows []testkit.JobRow
	if err := w.db.Order("id").Find(&rows).Error; err != nil {
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
