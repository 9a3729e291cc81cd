package onboarding_test

import (
	"context"
	"html"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/svcforum/svc/contracts/plugin"
	"github.com/svcforum/svc/contracts/problem"
	"github.com/svcforum/svc/contracts/schema"
	"github.com/svcforum/svc/database/dbtest"
	"github.com/svcforum/svc/modules/onboarding"
	"github.com/svcforum/svc/testkit"
	"github.com/svcforum/svc/testkit/mailsink"
)

// mailLine is the line of text that starts, after its indentation, with prefix.
func mailLine(t testing.TB, text, prefix string) string {
	t.Helper()
	for _, line := range strings.Split(text, "\n") {
		if l := strings.TrimSpace(line); strings.HasPrefix(l, prefix) {
			return l
		}
	}
	t.Fatalf("no line starts with %q in:\n%s", prefix, text)
	return ""
}

// TestInvitationWordedByTheServer: an invitation approved by a process with other settings (an
// operator's shell: the default base URL, no release) is worded by the serving deployment's sender,
// with its base URL and its release's install line and key; the setup page linked from the mail gives
// the same commands, and names no invitation.
func TestInvitationWordedByTheServer(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, dialect string) {
		t.Parallel()
		w, s, cfg := newMailWorld(t, dialect)
		shell := &plugin.Deployment{BaseURL: "http://localhost:8080", AgentAPI: map[string]string{"edge": "http://localhost:8081/agent-api/v1"}}
		w.apps = onboarding.NewApplications(w.db, cfg, w.clock, slog.New(slog.DiscardHandler), shell, w.enrolls, w.limits,
			onboarding.NewMailer(cfg, testkit.Jobs{}, w.clock), schema.Published())
		_, invitation := w.approvedQueued(t, s, "dal-bot", "ana@example.org")
		w.sendAll(t, 1)
		var text string
		for _, m := range s.Messages() {
			if m.Subject == "Your svc invitation for dal-bot" {
				text = m.Text
			}
		}
		if !strings.Contains(text, invitation) || strings.Contains(text, "localhost") {
			t.Fatalf("the invitation's mail:\n%s", text)
		}
		install := "curl -fsSL " + baseURL + "/releases/svc-connector/install.sh | sh -s -- --base-url " + baseURL + " --release-key " + theRelease.ReleaseKey
		flags := " --base-url " + baseURL + " --profile dal-bot --handle dal-bot --setup-scope forum"
		want := map[string]string{"curl ": install, "svc-connector setup --plan": "svc-connector setup --plan" + flags,
			"svc-connector setup --base-url": "svc-connector setup" + flags}
		for prefix, line := range want {
			if got := mailLine(t, text, prefix); got != line {
				t.Errorf("mail line %q\n got %s\nwant %s", prefix, got, line)
			}
		}
		if !strings.Contains(text, "svc-connector runtimes") || !strings.Contains(text, "v0.3.1") {
			t.Errorf("the mail does not say how to choose the runtime, or which release:\n%s", text)
		}
		// The setup page, at the mail's link.
		link := mailLine(t, text, "anyone. The same steps are on ")
		link = strings.TrimPrefix(link, "anyone. The same steps are on ")
		u, err := url.Parse(link)
		if err != nil || !strings.HasPrefix(link, baseURL+onboarding.SetupPath+"?") {
			t.Fatalf("the setup link %q: %v", link, err)
		}
		page := w.do(t, http.MethodGet, u.RequestURI(), "", "", http.Header{"Accept": {"text/html"}})
		body := html.UnescapeString(string(page.Body))
		if page.Status != http.StatusOK || strings.Contains(body, invitation) {
			t.Fatalf("the setup page: %d\n%s", page.Status, body)
		}
		for _, line := range want {
			if !strings.Contains(body, line) {
				t.Errorf("the setup page lacks %q", line)
			}
		}
		for _, q := range []string{"?handle=dal-bot", "?handle=dal-bot&setup_scope=all", "?handle=-x&setup_scope=forum", "?handle=" + url.QueryEscape("a b<c>") + "&setup_scope=forum"} {
			r := w.do(t, http.MethodGet, onboarding.SetupPath+q, "", "", http.Header{"Accept": {"text/html"}})
			if r.Status != http.StatusNotFound || r.Code != string(problem.NotFound) {
				t.Errorf("the setup page %s: %d %s", q, r.Status, r.Code)
			}
		}
	})
}

// TestInvitationWithoutReleaseOrSMTP: a deployment without a release says so instead of an install
// line; without SMTP the worded mail waits in the outbox for the operator, whole.
func TestInvitationWithoutReleaseOrSMTP(t *testing.T) {
	w := newWorld(t, "sqlite", onboarding.DefaultConfig())
	w.sender = onboarding.NewSender(w.db, w.cfg, w.clock, slog.New(slog.DiscardHandler), w.deploy, nil)
	_, invitation := w.approved(t, "dal-bot", "ana@example.org")
	m := w.lastMail(t, onboarding.MailInvitation, "ana@example.org")
	if m.State != onboarding.MailOutbox || !strings.Contains(m.Body, invitation) || strings.Contains(m.Body, "curl") ||
		!strings.Contains(m.Body, "publishes no release") || mailLine(t, m.Body, "svc-connector setup --plan") == "" {
		t.Fatalf("the invitation in the outbox: %+v", m)
	}
}

// gauge reads svc_onboarding_applications by state.
func gauge(t testing.TB, m plugin.Metrics) map[string]float64 {
	t.Helper()
	reg := prometheus.NewRegistry()
	reg.MustRegister(m.Collectors...)
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]float64{}
	for _, f := range families {
		if f.GetName() != "svc_onboarding_applications" {
			continue
		}
		for _, s := range f.GetMetric() {
			out[s.GetLabel()[0].GetValue()] = s.GetGauge().GetValue()
		}
	}
	return out
}

// TestApplicationsGaugeAndOperatorMail: svc_onboarding_applications counts the applications by state,
// an application awaiting approval apart from one awaiting its address's confirmation; with
// --operator-email the operator gets one mail per application when it starts to await approval,
// worded by the sender, and none without it.
func TestApplicationsGaugeAndOperatorMail(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, dialect string) {
		t.Parallel()
		w, s, cfg := newMailWorld(t, dialect)
		w.deploy.OperatorEmail = "ops@svc.test"
		ctx := context.Background()
		want := map[string]float64{"awaiting_confirmation": 0, "awaiting_approval": 0, "approved": 0, "rejected": 0, "redeemed": 0, "expired": 0}
		check := func(step string) {
			t.Helper()
			got := gauge(t, w.apps.Metrics())
			for k, v := range want {
				if got[k] != v {
					t.Fatalf("%s: gauge %v, want %v", step, got, want)
				}
			}
		}
		check("empty")
		w.approvedQueued(t, s, "dal-bot", "ana@example.org")
		want["approved"] = 1
		check("approved")
		r := w.apply(t, application("dal-two", "ben@example.org"))
		testkit.Expect(t, r, http.StatusCreated, "")
		two := r.JSON(t)["application_id"].(string)
		want["awaiting_confirmation"] = 1
		check("applied")
		w.sendAll(t, 1)
		var token string
		for _, m := range s.Messages() {
			if m.To == "ben@example.org" {
				token = strings.TrimPrefix(mustMatch(t, confirmLink, m.Text), onboarding.ConfirmPath)
			}
		}
		for range 2 { // confirming twice tells the operator once
			if _, err := w.apps.Confirm(ctx, token); err != nil {
				t.Fatal(err)
			}
		}
		want["awaiting_confirmation"], want["awaiting_approval"] = 0, 1
		check("confirmed")
		w.sendAll(t, 1)
		var notices []mailsink.Mail
		for _, m := range s.Messages() {
			if m.To == "ops@svc.test" {
				notices = append(notices, m)
			}
		}
		// dal-bot was confirmed too (approvedQueued): a notice each, no more.
		if len(notices) != 2 {
			t.Fatalf("the operator got %d notices: %+v", len(notices), notices)
		}
		last := notices[1]
		if last.Subject != "svc: the application for dal-two waits for approval" ||
			mailLine(t, last.Text, "Approve it:") != "Approve it:  svc admin application approve --application "+two ||
			!strings.Contains(last.Text, baseURL) {
			t.Fatalf("the operator's notice: %+v", last)
		}
		if _, err := w.apps.Reject(ctx, two, "ops", "no"); err != nil {
			t.Fatal(err)
		}
		want["awaiting_approval"], want["rejected"] = 0, 1
		check("rejected")
		w.clock.Add(cfg.InvitationTTL)
		want["approved"], want["expired"] = 0, 1
		check("expired")

		// Without --operator-email nobody is told.
		w.deploy.OperatorEmail = ""
		before := len(s.Messages())
		w.approvedQueued(t, s, "dal-three", "cy@example.org")
		w.sendAll(t, 1)
		for _, m := range s.Messages()[before:] {
			if m.To == "ops@svc.test" {
				t.Fatalf("a notice without --operator-email: %+v", m)
			}
		}
	})
}
