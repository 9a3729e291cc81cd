package host

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"html"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/mail"
	"net/url"
	"os/exec"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/google/uuid"
	"go.uber.org/fx"

	"github.com/svcforum/svc/contracts/plugin"
	"github.com/svcforum/svc/contracts/port"
	"github.com/svcforum/svc/database/dbtest"
	"github.com/svcforum/svc/sdk/signer"
	"github.com/svcforum/svc/testkit/mailsink"
)

// The onboarding plane on the assembled service (WIRE.md section 11): the real sigv1 verifies the new
// key's proof and registers the agent, the real job runner sends the mail, and a real SMTP server in
// the test process receives it. Links and invitations are read from the mail as a person reads them,
// never from the database. The service's base URL is discoveryBase: baseClient (and Chromium's host
// rules) reach the public listener under that name, so links are followed exactly as mailed.

// offsetClock is the service's clock moved by a duration the test sets (0 at first): a test can let
// an invitation run out without waiting for it.
type offsetClock struct {
	base   port.Clock
	offset *atomic.Int64
}

func (c offsetClock) Now() time.Time { return c.base.Now().Add(time.Duration(c.offset.Load())) }

// onboardingService is the assembled service with mail going to a sink, and what drives it.
type onboardingService struct {
	cfg    Config
	env    map[string]string // the operator's command line: the same database, mail server and base URL
	sink   *mailsink.Sink
	run    running
	public string // the public listener, http://127.0.0.1:port
	edge   string // the agent edge, http://127.0.0.1:port
	offset *atomic.Int64
}

// startOnboarding starts mods (every module when nil) on a fresh database of dialect, with the
// onboarding mail going to a new sink over SMTP and the service's clock under the test's control.
func startOnboarding(t *testing.T, dialect string, mods []plugin.Descriptor) *onboardingService {
	t.Helper()
	if mods == nil {
		mods = allModules(t)
	}
	s := &onboardingService{sink: mailsink.Start(t), offset: new(atomic.Int64)}
	s.cfg = testConfig(t, dialect)
	s.cfg.BaseURL = discoveryBase
	s.cfg.Settings = settings{testSettings(), map[string]any{"onboarding-smtp-url": s.sink.URL()}}
	s.cfg.Jobs.PollInterval = 50 * time.Millisecond
	s.env = map[string]string{
		"SVC_DATABASE_URL":              s.cfg.DatabaseURL,
		"SVC_BASE_URL":                  discoveryBase,
		"SVC_ONBOARDING_SMTP_URL":       s.sink.URL(),
		"SVC_ONBOARDING_INVITATION_TTL": "168h",
	}
	clock := fx.Decorate(func(c port.Clock) port.Clock { return offsetClock{base: c, offset: s.offset} })
	s.run = start(t, s.cfg, mods, clock)
	s.public = "http://" + s.run.listeners.Addr(ListenerPublic)
	s.edge = "http://" + s.run.listeners.Addr(ListenerAgentEdge)
	return s
}

// now is the service's time.
func (s *onboardingService) now() time.Time { return time.Now().Add(time.Duration(s.offset.Load())) }

// onPublic returns the address of a link under the base URL on the public listener.
func (s *onboardingService) onPublic(t *testing.T, link string) string {
	t.Helper()
	path, ok := strings.CutPrefix(link, discoveryBase+"/")
	if !ok {
		t.Fatalf("%q is not under the base URL %s", link, discoveryBase)
	}
	return s.public + "/" + path
}

// formBrowser is a person's browser without JavaScript: it keeps cookies, reaches the service under its
// base URL, and posts forms from the site's origin.
type formBrowser struct {
	c *http.Client
}

func newFormBrowser(t *testing.T, s *onboardingService) *formBrowser {
	t.Helper()
	c := baseClient(t, s.run.listeners.Addr(ListenerPublic))
	jar, err := cookiejar.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	c.Jar = jar
	return &formBrowser{c: c}
}

var csrfField = regexp.MustCompile(`name="csrf_token" value="([^"]+)"`)

// get loads a page and returns it with the CSRF token of its form ("" without a form).
func (b *formBrowser) get(t *testing.T, link string) (response, string) {
	t.Helper()
	res := fetch(t, b.c, http.MethodGet, link, map[string]string{"Accept": "text/html"})
	token := ""
	if m := csrfField.FindSubmatch(res.body); m != nil {
		token = html.UnescapeString(string(m[1]))
	}
	return res, token
}

// post sends a form to link as the site's own page does.
func (b *formBrowser) post(t *testing.T, link string, form url.Values) response {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, link, strings.NewReader(form.Encode()))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Accept", "text/html")
	req.Header.Set("Origin", discoveryBase)
	res, err := b.c.Do(req)
	if err != nil {
		t.Fatalf("POST %s: %v", link, err)
	}
	defer res.Body.Close()
	body, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	return response{res.StatusCode, res.Header, body}
}

var (
	confirmLinkInMail = regexp.MustCompile(regexp.QuoteMeta(discoveryBase) + `/onboarding/confirm/[A-Za-z0-9_-]{43}`)
	invitationInMail  = regexp.MustCompile(`svcinv_[A-Za-z0-9_-]{22}`)
	statusLinkOnPage  = regexp.MustCompile(`id="status-link" href="([^"]+)"`)
)

func mustFind(t *testing.T, re *regexp.Regexp, text string) string {
	t.Helper()
	m := re.FindStringSubmatch(text)
	if m == nil {
		t.Fatalf("%s not found in %q", re, text)
	}
	return m[len(m)-1]
}

// applicationBody is an application through the onboarding API.
func applicationBody(handle, email string) string {
	return fmt.Sprintf(`{"handle":%q,"organisation_name":"Lentil Lab","email":%q,"setup_scope":"forum","intended_use":"Answer questions about dal."}`, handle, email)
}

// apply sends an application through the onboarding API and returns its answer (201).
func (s *onboardingService) apply(t *testing.T, handle, email string) map[string]any {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, s.public+"/onboarding/api/v1/applications", strings.NewReader(applicationBody(handle, email)))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	return decodeBody(t, send(t, req), http.StatusCreated, "application-created")
}

// confirmByMail follows the confirmation link mailed to the address and presses the page's button.
func (s *onboardingService) confirmByMail(t *testing.T, email string) {
	t.Helper()
	link := mustFind(t, confirmLinkInMail, s.sink.Wait(t, email, "Confirm your address", time.Minute).Text)
	b := newFormBrowser(t, s)
	page, token := b.get(t, link)
	if page.status != http.StatusOK || token == "" {
		t.Fatalf("confirmation page: %d %.300s", page.status, page.body)
	}
	if res := b.post(t, link, url.Values{"csrf_token": {token}}); res.status != http.StatusOK || !strings.Contains(string(res.body), "your address is confirmed") {
		t.Fatalf("confirm: %d %.500s", res.status, res.body)
	}
}

// approve runs `svc admin application approve` (with more flags) and returns what it printed.
func (s *onboardingService) approve(t *testing.T, env map[string]string, applicationID string, flags ...string) map[string]any {
	t.Helper()
	if env == nil {
		env = s.env
	}
	return admin(t, env, append([]string{"application", "approve", "--application", applicationID}, flags...)...)
}

// invitation applies for handle, confirms the address, has the operator approve (with env: the
// operator's settings, nil for s.env) and returns the answer to the application (its id and status
// link) and the invitation as mailed.
func (s *onboardingService) invitation(t *testing.T, env map[string]string, handle string) (created map[string]any, invitation string) {
	t.Helper()
	email := handle + "@example.org"
	created = s.apply(t, handle, email)
	s.confirmByMail(t, email)
	s.approve(t, env, created["application_id"].(string))
	return created, mustFind(t, invitationInMail, s.sink.Wait(t, email, "invitation", time.Minute).Text)
}

// statusOf reads an application's status through the onboarding API, with the token of its status
// link.
func (s *onboardingService) statusOf(t *testing.T, statusURL string) map[string]any {
	t.Helper()
	token, ok := strings.CutPrefix(statusURL, discoveryBase+"/onboarding/status/")
	if !ok {
		t.Fatalf("%q is not a status link", statusURL)
	}
	return decodeBody(t, do(t, http.MethodGet, s.public+"/onboarding/api/v1/status/"+token, nil), http.StatusOK, "application-status")
}

// newKey is a new agent's key, made where the agent runs.
func newKey(t *testing.T) (ed25519.PrivateKey, string) {
	t.Helper()
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return priv, base64.StdEncoding.EncodeToString(pub)
}

// enrolling is the signer of a new agent's own request: the all-zero agent id and the key id "new".
func enrolling(key ed25519.PrivateKey, opts ...signer.Option) *signer.Signer {
	return signer.New(port.NewAgentID, port.NewKeyID, key, opts...)
}

// redemptionBody is the body of a redemption.
func redemptionBody(invitation, publicKey, handle string) string {
	return fmt.Sprintf(`{"invitation":%q,"public_key":%q,"handle":%q}`, invitation, publicKey, handle)
}

// redemption builds a redemption of body signed by sg, with idemKey as its Idempotency-Key.
func (s *onboardingService) redemption(t *testing.T, sg *signer.Signer, idemKey, body string) *http.Request {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, s.public+"/onboarding/api/v1/redemptions", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Idempotency-Key", idemKey)
	if err := sg.Sign(req); err != nil {
		t.Fatal(err)
	}
	return req
}

// redeem signs and sends a redemption.
func (s *onboardingService) redeem(t *testing.T, sg *signer.Signer, idemKey, body string) response {
	t.Helper()
	return send(t, s.redemption(t, sg, idemKey, body))
}

// chromium starts a headless Chromium for t in which discoveryBase's host is the public listener and
// every other name but 127.0.0.1 resolves nowhere. The returned context has run once: derive timeouts
// from it.
func chromium(t *testing.T, publicAddr string) context.Context {
	t.Helper()
	path, err := exec.LookPath("chromium")
	if err != nil {
		t.Fatalf("chromium is not installed (%v): `make tools` installs it", err)
	}
	host := strings.TrimPrefix(discoveryBase, "http://")
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(path), chromedp.Headless, chromedp.NoSandbox,
		chromedp.DisableGPU, chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.Flag("host-resolver-rules", "MAP "+host+" "+publicAddr+", MAP * ~NOTFOUND, EXCLUDE 127.0.0.1"))
	alloc, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(alloc)
	t.Cleanup(cancelAlloc)
	t.Cleanup(cancel)
	if err := chromedp.Do(ctx); err != nil {
		t.Fatalf("chromium: %v", err)
	}
	return ctx
}

// pageText is where Chromium is and the text it shows, for a failure's message.
func pageText(root context.Context) string {
	ctx, cancel := context.WithTimeout(root, 5*time.Second)
	defer cancel()
	loc, _ := chromedp.Run(ctx, chromedp.Location())
	text, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.body ? document.body.innerText : ""`))
	if err != nil {
		return fmt.Sprintf("%s: %v", loc, err)
	}
	return loc + ":\n" + text
}

// The whole path of a person and an agent, on both databases: the owner applies in Chromium and
// confirms the address through the link mailed over SMTP; the operator approves from the command line
// and the invitation is mailed; the agent's own new key redeems it with a signed request and its very
// first signed request on the agent plane proves the new identity.
func TestOnboardingFlow(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, dialect string) {
		s := startOnboarding(t, dialect, nil)
		handle, email := "dal-bot-"+dialect, "ana-"+dialect+"@example.org"
		var statusURL, applicationID, invitation string

		ok := t.Run("apply and confirm in Chromium", func(t *testing.T) {
			root := chromium(t, s.run.listeners.Addr(ListenerPublic))
			ctx, cancel := context.WithTimeout(root, 2*time.Minute)
			defer cancel()
			res, err := chromedp.RunResponse(ctx, chromedp.Navigate(discoveryBase+"/onboarding"))
			if err != nil || res.Status != http.StatusOK {
				t.Fatalf("the form: %v %v", res, err)
			}
			if err := chromedp.Do(ctx,
				chromedp.WaitVisible(chromedp.ID("handle")),
				chromedp.SendKeys(chromedp.ID("handle"), handle),
				chromedp.SendKeys(chromedp.ID("organisation_name"), "Lentil Lab"),
				chromedp.SendKeys(chromedp.ID("email"), email),
				chromedp.Click(chromedp.CSS(`input[name="setup_scope"][value="forum_arena"]`)),
				chromedp.SendKeys(chromedp.ID("intended_use"), "Answer questions\nabout dal."),
			); err != nil {
				t.Fatalf("filling the form: %v", err)
			}
			res, err = chromedp.RunResponse(ctx, chromedp.Click(chromedp.CSS(`form[action="/onboarding"] button[type="submit"]`)))
			if err != nil || res.Status != http.StatusOK {
				t.Fatalf("sending the form: %v %v", res, err)
			}
			link, err := chromedp.Run(ctx, chromedp.AttributeValue(chromedp.ID("status-link"), "href", chromedp.AtLeast(0)))
			if err != nil || !link.Exists {
				t.Fatalf("the answer has no status link: %v\n%s", err, pageText(root))
			}
			statusURL = link.Value
			if !strings.HasPrefix(statusURL, discoveryBase+"/onboarding/status/") {
				t.Fatalf("status link %q", statusURL)
			}

			// Following the mailed link shows a button and confirms nothing by itself (a mail scanner
			// opens links too).
			m := s.sink.Wait(t, email, "Confirm your address", time.Minute)
			if from, err := mail.ParseAddress(m.Header.Get("From")); err != nil || from.Address != "noreply@svc.test" || !strings.Contains(m.Text, "the handle "+handle+",") || strings.Contains(m.Text, "Lentil Lab") {
				t.Errorf("confirmation mail from %q: %q", m.Header.Get("From"), m.Text)
			}
			confirm := mustFind(t, confirmLinkInMail, m.Text)
			confirmButton := `form[action="` + strings.TrimPrefix(confirm, discoveryBase) + `"] button[type="submit"]`
			if err := chromedp.Do(ctx, chromedp.Navigate(confirm), chromedp.WaitVisible(chromedp.CSS(confirmButton))); err != nil {
				t.Fatalf("the confirmation page: %v", err)
			}
			if st := s.statusOf(t, statusURL); st["email_confirmed"] != false {
				t.Fatalf("opening the link confirmed the address: %v", st)
			}
			res, err = chromedp.RunResponse(ctx, chromedp.Click(chromedp.CSS(confirmButton)))
			if err != nil || res.Status != http.StatusOK {
				t.Fatalf("pressing the button: %v %v", res, err)
			}
			said, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(`p[role="status"]`)))
			if err != nil || !strings.Contains(said, "your address is confirmed") {
				t.Fatalf("after the button: %q %v", said, err)
			}

			if err := chromedp.Do(ctx, chromedp.Navigate(statusURL), chromedp.WaitVisible(chromedp.ID("next-step"))); err != nil {
				t.Fatalf("the status page: %v", err)
			}
			next, err := chromedp.Run(ctx, chromedp.Text(chromedp.ID("next-step")))
			if err != nil || !strings.HasPrefix(next, "Your address is confirmed.") {
				t.Fatalf("the status page's next step: %q %v", next, err)
			}
			if state, err := chromedp.Run(ctx, chromedp.Text(chromedp.ID("state"))); err != nil || state != "Waiting" {
				t.Fatalf("the status page's state: %q %v", state, err)
			}
		})
		if !ok {
			return
		}

		ok = t.Run("approve from the command line", func(t *testing.T) {
			pending := admin(t, s.env, "application", "list", "--status", "pending")["applications"].([]any)
			if len(pending) != 1 {
				t.Fatalf("pending applications: %v", pending)
			}
			app := pending[0].(map[string]any)
			if app["handle"] != handle || app["email"] != email || app["email_confirmed"] != true || app["setup_scope"] != "forum_arena" ||
				app["organisation_name"] != "Lentil Lab" || app["intended_use"] != "Answer questions\nabout dal." {
				t.Fatalf("the application as the operator sees it: %v", app)
			}
			applicationID = app["application_id"].(string)
			code, stdout, stderr := runMain(t, s.env, "admin", "--json", "application", "approve", "--application", applicationID)
			if code != 0 {
				t.Fatalf("approve: exit %d: %s", code, stderr)
			}
			var approved map[string]any
			if err := json.Unmarshal([]byte(stdout), &approved); err != nil {
				t.Fatalf("approve printed %q: %v", stdout, err)
			}
			if approved["status"] != "approved" || approved["decided_by"] != "operator" || approved["invitation_expires_at"] == nil {
				t.Fatalf("approved: %v", approved)
			}
			if strings.Contains(stdout, "svcinv_") || approved["invitation"] != nil {
				t.Fatalf("approve printed the invitation without --show-invitation: %s", stdout)
			}

			m := s.sink.Wait(t, email, "Your svc invitation for "+handle, time.Minute)
			invitation = mustFind(t, invitationInMail, m.Text)
			if n := strings.Count(m.Text, "svcinv_"); n != 1 {
				t.Fatalf("the mail holds %d invitations: %q", n, m.Text)
			}
			// The status page says that the invitation was sent, never the invitation itself.
			for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(20 * time.Millisecond) {
				st := s.statusOf(t, statusURL)
				if st["status"] != "approved" {
					t.Fatalf("status after approval: %v", st)
				}
				if st["invitation_sent_at"] != nil {
					if !strings.Contains(st["next_step"].(string), "was sent") || strings.Contains(mustJSONText(t, st), "svcinv_") {
						t.Fatalf("status after the invitation was sent: %v", st)
					}
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("the status never says that the invitation was sent: %v", st)
				}
			}
			page := do(t, http.MethodGet, s.onPublic(t, statusURL), nil)
			if page.status != 200 || strings.Contains(string(page.body), "svcinv_") || !strings.Contains(string(page.body), "Invitation sent") {
				t.Fatalf("status page: %d %s", page.status, page.body)
			}
			if n := len(admin(t, s.env, "application", "list", "--status", "pending")["applications"].([]any)); n != 0 {
				t.Fatalf("%d applications still pending", n)
			}
			if n := len(admin(t, s.env, "application", "list", "--status", "approved")["applications"].([]any)); n != 1 {
				t.Fatalf("%d applications approved, want 1", n)
			}
		})
		if !ok {
			return
		}

		t.Run("redeem with the agent's own key", func(t *testing.T) {
			key, pub := newKey(t)
			body := redemptionBody(invitation, pub, handle)
			first := s.redemption(t, enrolling(key), "redeem-1", body)
			got := decodeBody(t, send(t, first), http.StatusCreated, "redemption-response")
			if got["handle"] != handle || got["agent_id"] == "" || got["key_id"] == "" || got["org_id"] == "" {
				t.Fatalf("redemption: %v", got)
			}
			// No URL is set: each channel's address is its bound listener's.
			private := "http://" + s.run.listeners.Addr(ListenerAgentPrivate)
			if api, _ := got["agent_api"].(map[string]any); len(api) != 2 || api["edge"] != s.edge+plugin.AgentPrefix || api["private"] != private+plugin.AgentPrefix {
				t.Fatalf("agent_api %v, want the edge %s and the private channel %s", got["agent_api"], s.edge+plugin.AgentPrefix, private+plugin.AgentPrefix)
			}
			id := identity{orgID: got["org_id"].(string), agentID: got["agent_id"].(string), keyID: got["key_id"].(string)}
			id.signer = signer.New(id.agentID, id.keyID, key)

			// The key's first signed request on the agent plane proves the new identity.
			_, res := conformance(t, id, s.edge, "first words")
			proved := decodeBody(t, res, http.StatusOK, "conformance-response")
			if proved["agent_id"] != id.agentID || proved["key_id"] != id.keyID || proved["org_id"] != id.orgID || proved["handle"] != handle {
				t.Fatalf("conformance: %v, want %v", proved, got)
			}

			// A connector resuming after an uncertain answer: the same key, a new nonce, the same identity.
			again := decodeBody(t, s.redeem(t, enrolling(key), "redeem-1", body), http.StatusCreated, "redemption-response")
			if again["agent_id"] != id.agentID || again["key_id"] != id.keyID || again["org_id"] != id.orgID || again["handle"] != handle {
				t.Fatalf("redeemed again: %v, want %v", again, got)
			}
			// The very same signed request again is a replay.
			checkProblem(t, resend(t, first, body), http.StatusConflict, "nonce_replayed")
			// Another key cannot take the invitation over.
			other, otherPub := newKey(t)
			checkProblem(t, s.redeem(t, enrolling(other), "redeem-2", redemptionBody(invitation, otherPub, handle)), http.StatusConflict, "invitation_redeemed")

			if st := s.statusOf(t, statusURL); st["status"] != "redeemed" || !strings.HasPrefix(st["next_step"].(string), "Done") {
				t.Fatalf("status after redemption: %v", st)
			}
			shown := admin(t, s.env, "application", "show", "--application", applicationID)
			if shown["status"] != "redeemed" || shown["agent_id"] != id.agentID || shown["org_id"] != id.orgID || shown["redeemed_at"] == nil {
				t.Fatalf("the application after redemption: %v", shown)
			}
			// One agent and one key were made, in a new organisation named by the application.
			db := openDB(t, s.cfg.DatabaseURL)
			if n := countRows(t, db, "sigv1_agents", "handle = ? AND id = ? AND org_id = ?", handle, id.agentID, id.orgID); n != 1 {
				t.Fatalf("%d agents %s", n, handle)
			}
			if n := countRows(t, db, "sigv1_keys", "agent_id = ?", id.agentID); n != 1 {
				t.Fatalf("%d keys of the new agent, want 1", n)
			}
			if n := countRows(t, db, "sigv1_orgs", "id = ? AND name = ?", id.orgID, "Lentil Lab"); n != 1 {
				t.Fatalf("the new organisation is not Lentil Lab")
			}
		})

		t.Run("approve --show-invitation", func(t *testing.T) {
			h, e := "courier-"+dialect, "bo-"+dialect+"@example.org"
			created := s.apply(t, h, e)
			s.confirmByMail(t, e)
			out := s.approve(t, nil, created["application_id"].(string), "--show-invitation", "--actor", "ops-ana", "--reason", "known lab")
			printed, _ := out["invitation"].(string)
			if !invitationInMail.MatchString(printed) || len(printed) != len("svcinv_")+22 {
				t.Fatalf("--show-invitation printed %v", out)
			}
			app, _ := out["application"].(map[string]any)
			if app["application_id"] != created["application_id"] || app["status"] != "approved" || app["decided_by"] != "ops-ana" || app["decision_reason"] != "known lab" {
				t.Fatalf("--show-invitation: application %v", out["application"])
			}
			// It is the very invitation that is mailed, and it redeems.
			if mailed := mustFind(t, invitationInMail, s.sink.Wait(t, e, "invitation", time.Minute).Text); mailed != printed {
				t.Fatalf("printed %s, mailed %s", printed, mailed)
			}
			key, pub := newKey(t)
			decodeBody(t, s.redeem(t, enrolling(key), "show-1", redemptionBody(printed, pub, h)), http.StatusCreated, "redemption-response")
		})
	})
}

// A redemption that is not proved by the key it registers, or that carries a private key, or whose
// invitation is unknown, expired or withdrawn, registers nothing; on both databases.
func TestOnboardingRedemptionRefusals(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, dialect string) {
		s := startOnboarding(t, dialect, nil)
		db := openDB(t, s.cfg.DatabaseURL)
		handle := "keeper-" + dialect
		created, invitation := s.invitation(t, nil, handle)
		applicationID := created["application_id"].(string)
		key, pub := newKey(t)
		body := redemptionBody(invitation, pub, handle)

		nothingCreated := func(t *testing.T) {
			t.Helper()
			if app := admin(t, s.env, "application", "show", "--application", applicationID); app["status"] != "approved" || app["agent_id"] != nil {
				t.Fatalf("the application after a refused redemption: %v", app)
			}
			if n := countRows(t, db, "sigv1_agents", "handle = ?", handle); n != 0 {
				t.Fatalf("a refused redemption registered %d agents", n)
			}
			if n := countRows(t, db, "sigv1_keys", "1 = 1"); n != 0 {
				t.Fatalf("a refused redemption registered %d keys", n)
			}
		}

		t.Run("private key in the body", func(t *testing.T) {
			der, err := x509.MarshalPKCS8PrivateKey(key)
			if err != nil {
				t.Fatal(err)
			}
			for name, private := range map[string]string{
				"PKCS#8 PEM": string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der})),
				"seed+key":   base64.StdEncoding.EncodeToString(key),
			} {
				res := s.redeem(t, enrolling(key), "private-"+strings.ReplaceAll(name, " ", "-"), redemptionBody(invitation, private, handle))
				p := checkProblem(t, res, http.StatusUnprocessableEntity, "private_key_refused")
				if p["pointer"] != "/public_key" {
					t.Errorf("%s: pointer %v", name, p["pointer"])
				}
				if strings.Contains(string(res.body), base64.StdEncoding.EncodeToString(key)) || strings.Contains(string(res.body), "PRIVATE KEY") {
					t.Fatalf("%s: the refusal echoes the key: %s", name, res.body)
				}
			}
			nothingCreated(t)
		})
		t.Run("signed by another key", func(t *testing.T) {
			other, _ := newKey(t)
			checkProblem(t, s.redeem(t, enrolling(other), "other-key", body), http.StatusUnauthorized, "signature_mismatch")
			nothingCreated(t)
		})
		t.Run("agent id not all-zero", func(t *testing.T) {
			sg := signer.New(uuid.Must(uuid.NewV7()).String(), port.NewKeyID, key)
			p := checkProblem(t, s.redeem(t, sg, "agent-id", body), http.StatusBadRequest, "malformed_signature_headers")
			if p["header"] != "Svc-Agent-Id" {
				t.Errorf("the refusal names the header %v, want Svc-Agent-Id (WIRE.md section 1)", p["header"])
			}
			sg = signer.New(port.NewAgentID, "k-1", key)
			if p := checkProblem(t, s.redeem(t, sg, "key-id", body), http.StatusBadRequest, "malformed_signature_headers"); p["header"] != "Svc-Key-Id" {
				t.Errorf("the refusal names the header %v, want Svc-Key-Id", p["header"])
			}
			nothingCreated(t)
		})
		t.Run("stale timestamp", func(t *testing.T) {
			stale := enrolling(key, signer.WithClock(func() time.Time { return s.now().Add(-6 * time.Minute) }))
			checkProblem(t, s.redeem(t, stale, "stale", body), http.StatusUnauthorized, "stale_timestamp")
			nothingCreated(t)
		})
		t.Run("unsigned", func(t *testing.T) {
			req, err := http.NewRequest(http.MethodPost, s.public+"/onboarding/api/v1/redemptions", strings.NewReader(body))
			if err != nil {
				t.Fatal(err)
			}
			req.Header.Set("Content-Type", "application/json")
			checkProblem(t, send(t, req), http.StatusBadRequest, "malformed_signature_headers")
			nothingCreated(t)
		})
		t.Run("another handle", func(t *testing.T) {
			checkProblem(t, s.redeem(t, enrolling(key), "handle", redemptionBody(invitation, pub, "someone-else")), http.StatusUnprocessableEntity, "handle_mismatch")
			nothingCreated(t)
		})
		t.Run("unknown invitation", func(t *testing.T) {
			unknown := "svcinv_" + base64.RawURLEncoding.EncodeToString(make([]byte, 16))
			checkProblem(t, s.redeem(t, enrolling(key), "unknown", redemptionBody(unknown, pub, handle)), http.StatusForbidden, "invitation_invalid")
			nothingCreated(t)
		})
		// A redemption creates an agent: the operator's pause and service-wide freeze stop it as they
		// stop every signed write (WIRE.md sections 4 and 8), before the invitation is looked at.
		t.Run("writes paused", func(t *testing.T) {
			admin(t, s.env, "writes", "pause")
			t.Cleanup(func() { admin(t, s.env, "writes", "resume") })
			res := s.redeem(t, enrolling(key), "paused", body)
			p := checkProblem(t, res, http.StatusServiceUnavailable, "writes_unavailable")
			if res.header.Get("Retry-After") != "30" || p["retry_after_seconds"] != float64(30) {
				t.Errorf("Retry-After %q, retry_after_seconds %v: want 30, as every other write gets", res.header.Get("Retry-After"), p["retry_after_seconds"])
			}
			nothingCreated(t)
		})
		t.Run("writes frozen", func(t *testing.T) {
			admin(t, s.env, "writes", "freeze")
			t.Cleanup(func() { admin(t, s.env, "writes", "unfreeze") })
			if p := checkProblem(t, s.redeem(t, enrolling(key), "frozen", body), http.StatusForbidden, "writes_frozen"); p["scope"] != "all" {
				t.Errorf("scope %v, want all", p["scope"])
			}
			nothingCreated(t)
		})
		// After every refusal, the invitation still redeems: they consumed nothing.
		t.Run("the invitation still redeems", func(t *testing.T) {
			got := decodeBody(t, s.redeem(t, enrolling(key), "keeper", body), http.StatusCreated, "redemption-response")
			if got["handle"] != handle {
				t.Fatalf("redemption: %v", got)
			}
		})

		t.Run("expired invitation", func(t *testing.T) {
			short := map[string]string{}
			for k, v := range s.env {
				short[k] = v
			}
			short["SVC_ONBOARDING_INVITATION_TTL"] = "1m"
			h := "lapsed-" + dialect
			app, inv := s.invitation(t, short, h)
			k, p := newKey(t)
			// Two minutes on, by the service's clock, the one-minute invitation has run out.
			s.offset.Store(int64(2 * time.Minute))
			defer s.offset.Store(0)
			res := s.redeem(t, enrolling(k, signer.WithClock(s.now)), "lapsed", redemptionBody(inv, p, h))
			checkProblem(t, res, http.StatusForbidden, "invitation_invalid")
			if st := s.statusOf(t, app["status_url"].(string)); st["status"] != "expired" {
				t.Fatalf("the status of an expired invitation: %v", st)
			}
			if n := countRows(t, db, "sigv1_agents", "handle = ?", h); n != 0 {
				t.Fatalf("an expired invitation registered %d agents", n)
			}
		})
		t.Run("rejected application", func(t *testing.T) {
			h := "refused-" + dialect
			app, inv := s.invitation(t, nil, h)
			if out := admin(t, s.env, "application", "reject", "--application", app["application_id"].(string), "--reason", "not a lab"); out["status"] != "rejected" {
				t.Fatalf("reject: %v", out)
			}
			k, p := newKey(t)
			checkProblem(t, s.redeem(t, enrolling(k), "refused", redemptionBody(inv, p, h)), http.StatusForbidden, "invitation_invalid")
			if n := countRows(t, db, "sigv1_agents", "handle = ?", h); n != 0 {
				t.Fatalf("a rejected application's invitation registered %d agents", n)
			}
		})
	})
}

// The form's refusals on the assembled service, on both databases: a form posted without its CSRF
// token is 403 and stores nothing; a handle an agent holds is refused beside the field, with what was
// typed kept.
func TestOnboardingFormRefusals(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, dialect string) {
		s := startOnboarding(t, dialect, nil)
		taken := "held-" + dialect
		provision(t, s.env, taken)
		b := newFormBrowser(t, s)
		page, token := b.get(t, discoveryBase+"/onboarding")
		if page.status != http.StatusOK || token == "" {
			t.Fatalf("the form: %d, token %q", page.status, token)
		}
		form := url.Values{"handle": {"fresh-" + dialect}, "organisation_name": {"Lentil Lab"}, "email": {"cy@example.org"},
			"setup_scope": {"forum"}, "intended_use": {"Answer questions about dal."}}

		t.Run("without the CSRF token", func(t *testing.T) {
			res := b.post(t, discoveryBase+"/onboarding", form)
			if res.status != http.StatusForbidden || !strings.HasPrefix(res.header.Get("Content-Type"), "text/html") || !strings.Contains(string(res.body), "security token") {
				t.Fatalf("a form without its token: %d %s", res.status, res.body)
			}
			forged := url.Values{"csrf_token": {base64.StdEncoding.EncodeToString(make([]byte, 64))}}
			for k, v := range form {
				forged[k] = v
			}
			if res := b.post(t, discoveryBase+"/onboarding", forged); res.status != http.StatusForbidden {
				t.Fatalf("a form with a forged token: %d", res.status)
			}
			if n := len(admin(t, s.env, "application", "list")["applications"].([]any)); n != 0 {
				t.Fatalf("a refused form stored %d applications", n)
			}
			if n := s.sink.Count("cy@example.org"); n != 0 {
				t.Fatalf("a refused form sent %d messages", n)
			}
		})
		t.Run("a handle an agent holds", func(t *testing.T) {
			sent := url.Values{"csrf_token": {token}}
			for k, v := range form {
				sent[k] = v
			}
			sent.Set("handle", taken)
			res := b.post(t, discoveryBase+"/onboarding", sent)
			body := string(res.body)
			if res.status != http.StatusConflict {
				t.Fatalf("a taken handle: %d %s", res.status, body)
			}
			field := regexp.MustCompile(`<input id="handle" name="handle" value="` + taken + `"[^>]*aria-invalid="true" aria-describedby="handle-error"`)
			beside := regexp.MustCompile(`<strong id="handle-error" class="error">This handle is taken[^<]*</strong>`)
			if !field.MatchString(body) || !beside.MatchString(body) || !strings.Contains(body, `value="cy@example.org"`) ||
				strings.Contains(body, `id="email-error"`) || !strings.Contains(body, `role="alert"`) {
				t.Fatalf("the refused form: %s", body)
			}
			if n := len(admin(t, s.env, "application", "list")["applications"].([]any)); n != 0 {
				t.Fatalf("a refused form stored %d applications", n)
			}
			// The API says the same as a problem.
			req, err := http.NewRequest(http.MethodPost, s.public+"/onboarding/api/v1/applications", strings.NewReader(applicationBody(taken, "cy@example.org")))
			if err != nil {
				t.Fatal(err)
			}
			req.Header.Set("Content-Type", "application/json")
			checkProblem(t, send(t, req), http.StatusConflict, "handle_taken")
			// With another handle, the same form goes through.
			sent.Set("handle", "fresh-"+dialect)
			if res := b.post(t, discoveryBase+"/onboarding", sent); res.status != http.StatusOK || !statusLinkOnPage.Match(res.body) {
				t.Fatalf("the corrected form: %d %s", res.status, res.body)
			}
		})
	})
}

// A deployment without onboarding has none of its pages, API or publications; one with it (the
// "onboarding" profile: no forum, no billing) publishes its OpenAPI document and schemas in discovery.
func TestOnboardingSubsetDeployments(t *testing.T) {
	mods := func(ids ...string) []plugin.Descriptor {
		m, err := Select(Catalog(), ids)
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	discover := func(t *testing.T, s *onboardingService) map[string]string {
		t.Helper()
		res := fetch(t, baseClient(t, s.run.listeners.Addr(ListenerPublic)), http.MethodGet, discoveryBase+"/.well-known/svc", nil)
		validatePublished(t, "discovery", res.body)
		var doc discoveryDocument
		if err := json.Unmarshal(res.body, &doc); err != nil {
			t.Fatal(err)
		}
		return doc.named(t)
	}
	t.Run("without onboarding", func(t *testing.T) {
		s := startOnboarding(t, dbtest.Dialects[0], mods("billing", "discovery", "forum", "sigv1"))
		if res := do(t, http.MethodGet, s.public+"/onboarding", map[string]string{"Accept": "text/html"}); res.status != http.StatusNotFound {
			t.Fatalf("GET /onboarding: %d", res.status)
		}
		checkProblem(t, do(t, http.MethodGet, s.public+"/onboarding", nil), http.StatusNotFound, "not_found")
		req, err := http.NewRequest(http.MethodPost, s.public+"/onboarding/api/v1/applications", strings.NewReader(applicationBody("nobody", "no@example.org")))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/json")
		checkProblem(t, send(t, req), http.StatusNotFound, "not_found")
		named := discover(t, s)
		for name := range named {
			if name == "onboarding_api" || name == "schemas/onboarding" || name == "schemas/redemption-request" {
				t.Errorf("discovery names %s without onboarding", name)
			}
		}
		if named["public_api"] == "" {
			t.Fatalf("discovery: %v", named)
		}
		if front := do(t, http.MethodGet, s.public+"/", map[string]string{"Accept": "text/html"}); strings.Contains(string(front.body), `href="/onboarding"`) {
			t.Error("the front door links the missing form")
		}
	})
	t.Run("with onboarding", func(t *testing.T) {
		s := startOnboarding(t, dbtest.Dialects[0], mods("discovery", "onboarding", "sigv1"))
		named := discover(t, s)
		if named["onboarding_api"] != discoveryBase+"/contracts/openapi/onboarding.json" ||
			named["schemas/onboarding"] != discoveryBase+"/contracts/schemas/onboarding.schema.json" {
			t.Fatalf("discovery: %v", named)
		}
		client := baseClient(t, s.run.listeners.Addr(ListenerPublic))
		for _, name := range []string{"onboarding_api", "schemas/onboarding", "schemas/application-request", "schemas/redemption-response"} {
			if res := fetch(t, client, http.MethodGet, named[name], nil); res.status != http.StatusOK {
				t.Errorf("GET %s: %d", named[name], res.status)
			}
		}
		if res := do(t, http.MethodGet, s.public+"/onboarding", map[string]string{"Accept": "text/html"}); res.status != http.StatusOK {
			t.Fatalf("GET /onboarding: %d", res.status)
		}
		// The plane works without the forum: an application, confirmed, approved and redeemed.
		_, inv := s.invitation(t, nil, "lone-bot")
		key, pub := newKey(t)
		decodeBody(t, s.redeem(t, enrolling(key), "lone", redemptionBody(inv, pub, "lone-bot")), http.StatusCreated, "redemption-response")
	})
}
