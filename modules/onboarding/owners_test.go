package onboarding_test

// Owners (WIRE.md section 11): sign-in by a mailed one-time link and the session it starts, owner links
// asked for by agents and confirmed by their owners, personality drafts and their encryption, the
// operator's unlink, and the sweep of what expired.

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/hex"
	"encoding/pem"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
	_ "time/tzdata" // TestSweepEastOfUTC names a zone, which must load where the system has none

	"github.com/google/uuid"
	"github.com/riverqueue/river"

	"github.com/svcforum/svc/contracts/port"
	"github.com/svcforum/svc/contracts/problem"
	"github.com/svcforum/svc/database/dbtest"
	"github.com/svcforum/svc/modules/onboarding"
	"github.com/svcforum/svc/testkit"
)

var (
	signInLink = regexp.MustCompile(regexp.QuoteMeta(baseURL) + `(/owner/sign-in/[A-Za-z0-9_-]{43})\n`)
	ownerLink  = regexp.MustCompile(regexp.QuoteMeta(baseURL) + `(/owner/links/[A-Za-z0-9_-]{43})\n`)
)

// expectPage fails unless r is a page for one visitor (HTML, never stored) with status and the problem
// code ("" for a page that is no problem, such as a form shown again with its error).
func expectPage(t testing.TB, r testkit.Result, status int, code problem.Code) {
	t.Helper()
	if r.Status != status || r.Code != string(code) {
		t.Fatalf("got %d %q, want %d %q; body %s", r.Status, r.Code, status, code, testkit.Short(r.Body))
	}
	if ct := r.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/html") || r.Header.Get("Cache-Control") != "no-store" {
		t.Fatalf("a %d page with Content-Type %q and Cache-Control %q", status, ct, r.Header.Get("Cache-Control"))
	}
}

// expectRedirect fails unless r is a 303 to the owner's page.
func expectRedirect(t testing.TB, r testkit.Result) {
	t.Helper()
	if r.Status != http.StatusSeeOther || r.Header.Get("Location") != onboarding.OwnerPath {
		t.Fatalf("got %d to %q, want 303 to %s; body %s", r.Status, r.Header.Get("Location"), onboarding.OwnerPath, testkit.Short(r.Body))
	}
}

func contains(t testing.TB, r testkit.Result, parts ...string) {
	t.Helper()
	for _, p := range parts {
		if !strings.Contains(string(r.Body), p) {
			t.Fatalf("the page lacks %q: %s", p, testkit.Short(r.Body))
		}
	}
}

func lacks(t testing.TB, r testkit.Result, parts ...string) {
	t.Helper()
	for _, p := range parts {
		if strings.Contains(string(r.Body), p) {
			t.Fatalf("the page holds %q: %s", p, testkit.Short(r.Body))
		}
	}
}

// withoutCSRF is a page without its form tokens, which differ on every answer.
func withoutCSRF(b []byte) string { return csrfField.ReplaceAllString(string(b), "") }

func sha256Hex(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}

// count counts the rows of table that match where ("" for every row).
func (w *world) count(t testing.TB, table, where string, args ...any) int64 {
	return testkit.CountRows(t, w.db, table, where, args...)
}

// cookie returns the svc_owner cookie the answer sets.
func ownerCookie(t testing.TB, r testkit.Result) *http.Cookie {
	t.Helper()
	for _, c := range (&http.Response{Header: r.Header}).Cookies() {
		if c.Name == sessionCookie {
			return c
		}
	}
	t.Fatalf("no %s cookie in %v", sessionCookie, r.Header.Values("Set-Cookie"))
	return nil
}

// askSignIn sends the sign-in form for email from b.
func (b *browser) askSignIn(t testing.TB, email string) testkit.Result {
	t.Helper()
	_, token := b.get(t, onboarding.OwnerPath)
	return b.post(t, onboarding.SignInPath, url.Values{"csrf_token": {token}, "email": {email}})
}

// signIn signs email in from a new browser, through the mailed link and its button.
func (w *world) signIn(t testing.TB, email string) *browser {
	t.Helper()
	b := &browser{w: w}
	expectPage(t, b.askSignIn(t, email), http.StatusOK, "")
	link := mustMatch(t, signInLink, w.lastMail(t, onboarding.MailSignIn, strings.ToLower(email)).Body)
	_, token := b.get(t, link)
	expectRedirect(t, b.post(t, link, url.Values{"csrf_token": {token}}))
	if b.session == "" {
		t.Fatal("signed in without a session cookie")
	}
	return b
}

// writeDraft saves a draft for agentID from the owner's page.
func (b *browser) writeDraft(t testing.TB, agentID, content string) testkit.Result {
	t.Helper()
	_, token := b.get(t, onboarding.OwnerPath)
	return b.post(t, onboarding.DraftsPath, url.Values{"csrf_token": {token}, "agent_id": {agentID}, "content": {content}})
}

// newAgent is an agent that exists on the agent plane only (the stand-in guard believes the headers).
func newAgent(handle string) port.Principal {
	return port.Principal{AgentID: uuid.Must(uuid.NewV7()).String(), OrgID: uuid.Must(uuid.NewV7()).String(), Handle: handle}
}

// ownedAgent is an agent its applicant owns: applied for by email, approved and redeemed.
func (w *world) ownedAgent(t testing.TB, handle, email string) port.Principal {
	t.Helper()
	_, invitation := w.approved(t, handle, email)
	key, _ := newKey(t)
	r := w.redeem(t, redemption(invitation, key, handle), "ok")
	testkit.Expect(t, r, http.StatusCreated, "")
	var red onboarding.Redemption
	r.Decode(t, &red)
	return port.Principal{AgentID: red.AgentID, OrgID: red.OrgID, Handle: red.Handle, KeyID: red.KeyID}
}

func (w *world) askLink(t testing.TB, p port.Principal, email string) testkit.Result {
	t.Helper()
	return w.agent(t, p, http.MethodPost, onboarding.OwnerLinksPath, fmt.Sprintf(`{"email":%q}`, email))
}

// readDraft is the agent's GET of its waiting draft.
func (w *world) readDraft(t testing.TB, p port.Principal) *onboarding.Draft {
	t.Helper()
	r := w.agent(t, p, http.MethodGet, onboarding.DraftPath, "")
	testkit.Expect(t, r, http.StatusOK, "")
	testkit.Valid(t, "personality-draft-response", r.Body)
	if r.Header.Get("Cache-Control") != "no-store" {
		t.Fatalf("a draft answered with Cache-Control %q", r.Header.Get("Cache-Control"))
	}
	var resp onboarding.DraftResponse
	r.Decode(t, &resp)
	return resp.Draft
}

func (w *world) acknowledge(t testing.TB, p port.Principal, draftID, sha string) testkit.Result {
	t.Helper()
	return w.agent(t, p, http.MethodPost, onboarding.AcknowledgePath, fmt.Sprintf(`{"draft_id":%q,"content_sha256":%q}`, draftID, sha))
}

func (w *world) discard(t testing.TB, p port.Principal, draftID string) testkit.Result {
	t.Helper()
	return w.agent(t, p, http.MethodPost, onboarding.DiscardPath, fmt.Sprintf(`{"draft_id":%q}`, draftID))
}

// expectOutcome fails unless r closed draftID with state.
func expectOutcome(t testing.TB, r testkit.Result, draftID, state string) {
	t.Helper()
	testkit.Expect(t, r, http.StatusOK, "")
	testkit.Valid(t, "personality-draft-outcome", r.Body)
	var out onboarding.DraftOutcome
	r.Decode(t, &out)
	if out.DraftID != draftID || out.State != state || out.ClosedAt.IsZero() {
		t.Fatalf("outcome %+v, want %s %s", out, draftID, state)
	}
}

// storedDraft is a row of onboarding_drafts as the database holds it.
type storedDraft struct {
	ID            string
	State         string
	KeyID         string
	Ciphertext    []byte
	ContentSHA256 string `gorm:"column:content_sha256"`
}

// storedDrafts are the agent's drafts, oldest first.
func (w *world) storedDrafts(t testing.TB, agentID string) []storedDraft {
	t.Helper()
	var rows []storedDraft
	if err := w.db.Table("onboarding_drafts").Select("id", "state", "key_id", "ciphertext", "content_sha256").
		Where("agent_id = ?", agentID).Order("created_at, id").Scan(&rows).Error; err != nil {
		t.Fatal(err)
	}
	return rows
}

func (w *world) linkState(t testing.TB, agentID string) string {
	t.Helper()
	var states []string
	if err := w.db.Table("onboarding_owner_links").Where("agent_id = ?", agentID).Order("created_at, id").Pluck("state", &states).Error; err != nil {
		t.Fatal(err)
	}
	if len(states) != 1 {
		t.Fatalf("agent %s has the owner links %v", agentID, states)
	}
	return states[0]
}

func (w *world) ownerID(t testing.TB, email string) string {
	t.Helper()
	var ids []string
	if err := w.db.Table("onboarding_owners").Where("email = ?", email).Pluck("id", &ids).Error; err != nil || len(ids) != 1 {
		t.Fatalf("the account of %s: %v %v", email, ids, err)
	}
	return ids[0]
}

// TestOwnerSignIn: the form and its refusals, the mailed one-time link and its button, the session
// cookie and its hashed row, the same answer whether or not the address has an account, the link's
// expiry, signing out, and the per-recipient limit.
func TestOwnerSignIn(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, dialect string) {
		t.Parallel()
		cfg := onboarding.DefaultConfig()
		w := newWorld(t, dialect, cfg)
		b := &browser{w: w}

		r, token := b.get(t, onboarding.OwnerPath)
		expectPage(t, r, http.StatusOK, "")
		contains(t, r, `action="/owner/sign-in"`)
		if token == "" || b.cookie == "" {
			t.Fatalf("sign-in form without its CSRF token: %s", testkit.Short(r.Body))
		}
		expectPage(t, b.post(t, onboarding.SignInPath, url.Values{"email": {"ana@example.org"}}), http.StatusForbidden, problem.CSRFFailed)
		r = b.post(t, onboarding.SignInPath, url.Values{"csrf_token": {token}, "email": {"ana at example"}})
		expectPage(t, r, http.StatusUnprocessableEntity, "")
		contains(t, r, `value="ana at example"`, `aria-invalid="true"`, "This is not a mail address")
		if n := w.count(t, "onboarding_mail", ""); n != 0 {
			t.Fatalf("%d messages after refusals", n)
		}

		// A good address, in mixed case: the link goes to it in lower case; no account exists yet.
		r = b.post(t, onboarding.SignInPath, url.Values{"csrf_token": {token}, "email": {"Ana@Example.ORG"}})
		expectPage(t, r, http.StatusOK, "")
		contains(t, r, "a sign-in link is on its way", "<strong>Ana@Example.ORG</strong>")
		noAccount := withoutCSRF(r.Body)
		if n := w.count(t, "onboarding_owners", ""); n != 0 {
			t.Fatalf("asking for a link made %d accounts", n)
		}
		mail := w.lastMail(t, onboarding.MailSignIn, "ana@example.org")
		link := mustMatch(t, signInLink, mail.Body)
		if n := w.count(t, "onboarding_mail", "kind = ?", onboarding.MailSignIn); n != 1 {
			t.Fatalf("%d sign-in messages", n)
		}

		// Following the link uses nothing: twice the button.
		for range 2 {
			r, token = b.get(t, link)
			expectPage(t, r, http.StatusOK, "")
			contains(t, r, `<button type="submit">Sign in</button>`, `action="`+link+`"`)
		}
		r = b.post(t, link, url.Values{"csrf_token": {token}})
		expectRedirect(t, r)
		c := ownerCookie(t, r)
		if c.Value == "" || !c.HttpOnly || c.SameSite != http.SameSiteLaxMode || c.Path != "/" || c.Secure {
			t.Fatalf("session cookie %+v", c)
		}
		// The table keeps a hash of the cookie's token, never the token.
		var stored []string
		if err := w.db.Table("onboarding_sessions").Pluck("token", &stored).Error; err != nil {
			t.Fatal(err)
		}
		hash := sha256.Sum256([]byte(c.Value))
		if len(stored) != 1 || stored[0] == c.Value || stored[0] != base64.RawURLEncoding.EncodeToString(hash[:]) {
			t.Fatalf("stored session tokens %q for the cookie %q", stored, c.Value)
		}
		// The first sign-in made the account, in lower case.
		if n := w.count(t, "onboarding_owners", ""); n != 1 || w.count(t, "onboarding_owners", "email = ?", "ana@example.org") != 1 {
			t.Fatalf("%d accounts after the first sign-in", n)
		}
		// Signing in gave the browser a new form token: the one from before is refused.
		expectPage(t, b.post(t, link, url.Values{"csrf_token": {token}}), http.StatusForbidden, problem.CSRFFailed)
		r, token = b.get(t, onboarding.OwnerPath)
		expectPage(t, r, http.StatusOK, "")
		contains(t, r, "Signed in as <strong>ana@example.org</strong>", `action="/owner/sign-out"`)
		// The link worked once, and its message keeps no copy of it.
		expectPage(t, b.post(t, link, url.Values{"csrf_token": {token}}), http.StatusNotFound, problem.NotFound)
		r, _ = b.get(t, link)
		expectPage(t, r, http.StatusNotFound, problem.NotFound)
		if m := w.mailTo(t, "ana@example.org"); strings.Contains(m.Body, link) {
			t.Fatalf("a used link is still in the outbox: %+v", m)
		}

		// An address with an account is answered the same page.
		other := &browser{w: w}
		r = other.askSignIn(t, "Ana@Example.ORG")
		expectPage(t, r, http.StatusOK, "")
		if got := withoutCSRF(r.Body); got != noAccount {
			t.Fatalf("the answer differs for an address with an account:\n%s\n%s", got, noAccount)
		}
		// A fresh link, followed too late.
		late := mustMatch(t, signInLink, w.lastMail(t, onboarding.MailSignIn, "ana@example.org").Body)
		if late == link {
			t.Fatal("two sign-ins share a link")
		}
		w.clock.Add(cfg.SignInTTL + time.Second)
		r, _ = other.get(t, late)
		expectPage(t, r, http.StatusNotFound, problem.NotFound)
		_, token = other.get(t, onboarding.OwnerPath)
		expectPage(t, other.post(t, late, url.Values{"csrf_token": {token}}), http.StatusNotFound, problem.NotFound)
		if other.session != "" || w.count(t, "onboarding_sessions", "") != 1 {
			t.Fatal("an expired link signed in")
		}

		// Signing out: its form needs the token; then the cookie is cleared and the row is gone.
		old := b.session
		_, token = b.get(t, onboarding.OwnerPath)
		expectPage(t, b.post(t, onboarding.SignOutPath, url.Values{}), http.StatusForbidden, problem.CSRFFailed)
		r = b.post(t, onboarding.SignOutPath, url.Values{"csrf_token": {token}})
		expectRedirect(t, r)
		if c := ownerCookie(t, r); c.MaxAge >= 0 || c.Value != "" || b.session != "" {
			t.Fatalf("sign-out left the cookie %+v", c)
		}
		if n := w.count(t, "onboarding_sessions", ""); n != 0 {
			t.Fatalf("%d sessions after signing out", n)
		}
		stale := &browser{w: w, cookie: b.cookie, session: old}
		r, _ = stale.get(t, onboarding.OwnerPath)
		expectPage(t, r, http.StatusOK, "")
		contains(t, r, `action="/owner/sign-in"`)
		lacks(t, r, "Signed in as")

		// One recipient gets at most --onboarding-recipient-limit links per window.
		flood := &browser{w: w}
		for range cfg.RecipientLimit {
			expectPage(t, flood.askSignIn(t, "flood@example.org"), http.StatusOK, "")
		}
		r = flood.askSignIn(t, "Flood@example.org")
		expectPage(t, r, http.StatusTooManyRequests, "")
		contains(t, r, "Too many sign-in links", `value="Flood@example.org"`)
		if secs, err := strconv.Atoi(r.Header.Get("Retry-After")); err != nil || secs < 1 {
			t.Fatalf("429 with Retry-After %q", r.Header.Get("Retry-After"))
		}
		if n := w.count(t, "onboarding_mail", "recipient = ?", "flood@example.org"); n != int64(cfg.RecipientLimit) {
			t.Fatalf("%d messages to one recipient, limit %d", n, cfg.RecipientLimit)
		}

		// A confirmed application's address has its account already, in lower case.
		testkit.Expect(t, w.apply(t, application("cy-bot", "Cy@Example.org")), http.StatusCreated, "")
		confirm := mustMatch(t, confirmLink, w.lastMail(t, onboarding.MailConfirm, "Cy@Example.org").Body)
		if w.count(t, "onboarding_owners", "email = ?", "cy@example.org") != 0 {
			t.Fatal("an unconfirmed address has an account")
		}
		if _, err := w.apps.Confirm(context.Background(), strings.TrimPrefix(confirm, onboarding.ConfirmPath)); err != nil {
			t.Fatal(err)
		}
		if w.count(t, "onboarding_owners", "email = ?", "cy@example.org") != 1 {
			t.Fatal("a confirmed address has no account")
		}
	})
}

// TestOwnerLinks: an agent asks for its owner; the answer is the same bytes whether or not the address
// has an account; a confirmation goes only to an account; its page's button links the agent.
func TestOwnerLinks(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, dialect string) {
		t.Parallel()
		cfg := onboarding.DefaultConfig()
		w := newWorld(t, dialect, cfg)
		pea, bean := newAgent("pea-bot"), newAgent("bean-bot")
		jobs := func() int64 { return w.count(t, "testkit_jobs", "kind = ?", onboarding.LinkArgs{}.Kind()) }

		// No account has the address: 202, and its job sends nothing.
		first := w.askLink(t, pea, "Ben@Example.org")
		testkit.Expect(t, first, http.StatusAccepted, "")
		testkit.Valid(t, "owner-link-requested", first.Body)
		if m := first.JSON(t); m["status"] != "requested" || m["email"] != "Ben@Example.org" || m["confirm_within_seconds"] != cfg.LinkTTL.Seconds() {
			t.Fatalf("owner link requested %v", m)
		}
		if w.count(t, "onboarding_owner_links", "") != 1 || jobs() != 1 {
			t.Fatal("the request wrote no link or no job")
		}
		w.runLinks(t)
		if s := w.linkState(t, pea.AgentID); s != onboarding.LinkNoAccount {
			t.Fatalf("link to an address without an account: %s", s)
		}
		if n := w.count(t, "onboarding_mail", "kind = ?", onboarding.MailOwnerLink); n != 0 {
			t.Fatalf("%d owner-link messages to an address without an account", n)
		}

		// The address has an account: the same bytes, and the confirmation goes to it.
		ben := w.signIn(t, "ben@example.org")
		second := w.askLink(t, bean, "Ben@Example.org")
		testkit.Expect(t, second, http.StatusAccepted, "")
		testkit.Valid(t, "owner-link-requested", second.Body)
		if !bytes.Equal(first.Body, second.Body) {
			t.Fatalf("the answers differ: %s and %s", first.Body, second.Body)
		}
		if w.count(t, "onboarding_owner_links", "") != 2 || jobs() != 2 {
			t.Fatal("the request wrote no link or no job")
		}
		w.runLinks(t)
		if s := w.linkState(t, pea.AgentID); s != onboarding.LinkNoAccount {
			t.Fatalf("a decided link changed: %s", s)
		}
		if s := w.linkState(t, bean.AgentID); s != onboarding.LinkSent {
			t.Fatalf("link to an account: %s", s)
		}
		link := mustMatch(t, ownerLink, w.lastMail(t, onboarding.MailOwnerLink, "ben@example.org").Body)
		if n := w.count(t, "onboarding_mail", "kind = ?", onboarding.MailOwnerLink); n != 1 {
			t.Fatalf("%d owner-link messages", n)
		}

		// The page shows who asks and a button; following the link links nothing.
		r, token := ben.get(t, link)
		expectPage(t, r, http.StatusOK, "")
		contains(t, r, "<strong>bean-bot</strong> asks to be linked to you", `<button type="submit">Yes, this agent is mine</button>`)
		if w.count(t, "onboarding_agent_owners", "") != 0 {
			t.Fatal("following the link linked the agent")
		}
		expectPage(t, ben.post(t, link, url.Values{}), http.StatusForbidden, problem.CSRFFailed)
		r = ben.post(t, link, url.Values{"csrf_token": {token}})
		expectPage(t, r, http.StatusOK, "")
		contains(t, r, "Done: the agent <strong>bean-bot</strong> is linked to you")
		if w.count(t, "onboarding_agent_owners", "agent_id = ? AND owner_id = ? AND via = ? AND handle = ?",
			bean.AgentID, w.ownerID(t, "ben@example.org"), onboarding.ViaLink, "bean-bot") != 1 {
			t.Fatal("the confirmed agent has no owner")
		}
		if owner, err := w.owners.OwnerOf(context.Background(), bean.AgentID); err != nil || owner != "ben@example.org" {
			t.Fatalf("owner of the agent: %q %v", owner, err)
		}
		r, _ = ben.get(t, onboarding.OwnerPath)
		contains(t, r, `id="agent-bean-bot"`, "at its request")

		// Confirming again changes nothing; the page says it is done.
		r = ben.post(t, link, url.Values{"csrf_token": {token}})
		expectPage(t, r, http.StatusOK, "")
		contains(t, r, "is linked to you")
		r, _ = ben.get(t, link)
		expectPage(t, r, http.StatusOK, "")
		contains(t, r, "is already linked to you")
		lacks(t, r, "<button")
		if n := w.count(t, "onboarding_agent_owners", ""); n != 1 {
			t.Fatalf("%d ownerships", n)
		}

		// An agent with an owner asks no more; bodies that are no request are 422.
		testkit.Expect(t, w.askLink(t, bean, "ben@example.org"), http.StatusConflict, string(problem.OwnerAlreadyLinked))
		testkit.Expect(t, w.askLink(t, bean, "someone@example.org"), http.StatusConflict, string(problem.OwnerAlreadyLinked))
		for _, body := range []string{`{}`, `{"email":"ben@example.org","note":"hi"}`, `{"email":"not an address"}`, `{"Email":"ben@example.org"}`} {
			testkit.Expect(t, w.agent(t, pea, http.MethodPost, onboarding.OwnerLinksPath, body), http.StatusUnprocessableEntity, string(problem.ValidationFailed))
		}
		if n := w.count(t, "onboarding_owner_links", ""); n != 2 || jobs() != 2 {
			t.Fatalf("refused requests wrote links: %d", n)
		}
	})
}

// TestOwnerLinkLimits: the start limits per agent and per address (counted across agents, whatever the
// case of the address), until the window moves on.
func TestOwnerLinkLimits(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, dialect string) {
		t.Parallel()
		cfg := onboarding.DefaultConfig()
		cfg.LinkAgentLimit, cfg.LinkAddressLimit = 2, 3
		w := newWorld(t, dialect, cfg)

		pea := newAgent("pea-bot")
		for i := range cfg.LinkAgentLimit {
			testkit.Expect(t, w.askLink(t, pea, fmt.Sprintf("x%d@example.org", i)), http.StatusAccepted, "")
		}
		r := w.askLink(t, pea, "x9@example.org")
		testkit.Expect(t, r, http.StatusTooManyRequests, string(problem.RateLimited))
		secs, ok := r.JSON(t)["retry_after_seconds"].(float64)
		if !ok || secs < 1 || r.Header.Get("Retry-After") != strconv.Itoa(int(secs)) {
			t.Fatalf("429 with retry_after_seconds %v and Retry-After %q", r.JSON(t)["retry_after_seconds"], r.Header.Get("Retry-After"))
		}

		for i := range cfg.LinkAddressLimit {
			testkit.Expect(t, w.askLink(t, newAgent(fmt.Sprintf("dee-%d", i)), "dee@example.org"), http.StatusAccepted, "")
		}
		late := newAgent("dee-late")
		testkit.Expect(t, w.askLink(t, late, "Dee@Example.ORG"), http.StatusTooManyRequests, string(problem.RateLimited))
		if n := w.count(t, "onboarding_owner_links", ""); n != int64(cfg.LinkAgentLimit+cfg.LinkAddressLimit) {
			t.Fatalf("%d links recorded", n)
		}

		w.clock.Add(cfg.AddressWindow)
		testkit.Expect(t, w.askLink(t, late, "dee@example.org"), http.StatusAccepted, "")
		testkit.Expect(t, w.askLink(t, pea, "x9@example.org"), http.StatusAccepted, "")
	})
}

// TestOwnerLinkEnds: a link confirmed too late, and one whose agent found another owner meanwhile; and
// an agent that came from an application, which its applicant owns from the start.
func TestOwnerLinkEnds(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, dialect string) {
		t.Parallel()
		cfg := onboarding.DefaultConfig()
		w := newWorld(t, dialect, cfg)
		ann, bo := w.signIn(t, "ann@example.org"), w.signIn(t, "bo@example.org")

		// Two owners are asked; the first to confirm owns the agent, the other is told.
		fig := newAgent("fig-bot")
		testkit.Expect(t, w.askLink(t, fig, "ann@example.org"), http.StatusAccepted, "")
		testkit.Expect(t, w.askLink(t, fig, "bo@example.org"), http.StatusAccepted, "")
		w.runLinks(t)
		toAnn := mustMatch(t, ownerLink, w.lastMail(t, onboarding.MailOwnerLink, "ann@example.org").Body)
		toBo := mustMatch(t, ownerLink, w.lastMail(t, onboarding.MailOwnerLink, "bo@example.org").Body)
		_, token := ann.get(t, toAnn)
		expectPage(t, ann.post(t, toAnn, url.Values{"csrf_token": {token}}), http.StatusOK, "")
		_, token = bo.get(t, toBo)
		expectPage(t, bo.post(t, toBo, url.Values{"csrf_token": {token}}), http.StatusConflict, problem.OwnerAlreadyLinked)
		if owner, err := w.owners.OwnerOf(context.Background(), fig.AgentID); err != nil || owner != "ann@example.org" {
			t.Fatalf("owner of the agent: %q %v", owner, err)
		}
		r, _ := bo.get(t, onboarding.OwnerPath)
		lacks(t, r, "fig-bot")

		// A link followed after --onboarding-link-ttl confirms nothing; the agent may ask again.
		gum := newAgent("gum-bot")
		testkit.Expect(t, w.askLink(t, gum, "ann@example.org"), http.StatusAccepted, "")
		w.runLinks(t)
		late := mustMatch(t, ownerLink, w.lastMail(t, onboarding.MailOwnerLink, "ann@example.org").Body)
		if late == toAnn {
			t.Fatal("two links share a token")
		}
		w.clock.Add(cfg.LinkTTL)
		r, _ = ann.get(t, late)
		expectPage(t, r, http.StatusNotFound, problem.NotFound)
		_, token = ann.get(t, onboarding.OwnerPath)
		expectPage(t, ann.post(t, late, url.Values{"csrf_token": {token}}), http.StatusNotFound, problem.NotFound)
		if owner, _ := w.owners.OwnerOf(context.Background(), gum.AgentID); owner != "" {
			t.Fatalf("an expired link linked the agent to %s", owner)
		}
		testkit.Expect(t, w.askLink(t, gum, "ann@example.org"), http.StatusAccepted, "")
		// A confirmed link stays confirmed past its expiry.
		r, _ = ann.get(t, toAnn)
		expectPage(t, r, http.StatusOK, "")
		contains(t, r, "is already linked to you")

		// A redeemed application's agent is its applicant's from the start.
		dal := w.ownedAgent(t, "dal-bot", "Cy@Example.org")
		if w.count(t, "onboarding_agent_owners", "agent_id = ? AND owner_id = ? AND via = ?", dal.AgentID, w.ownerID(t, "cy@example.org"), onboarding.ViaApplication) != 1 {
			t.Fatal("the redeemed agent has no owner")
		}
		cy := w.signIn(t, "cy@example.org")
		r, _ = cy.get(t, onboarding.OwnerPath)
		contains(t, r, `id="agent-dal-bot"`, "by its application", "<tr><td>dal-bot</td><td>redeemed</td>")
		testkit.Expect(t, w.askLink(t, dal, "ann@example.org"), http.StatusConflict, string(problem.OwnerAlreadyLinked))
	})
}

// privateKeyPEM is a PKCS #8 PEM private key, as an owner might paste one by mistake.
func privateKeyPEM(t testing.TB) string {
	t.Helper()
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.MarshalPKCS8PrivateKey(priv)
	if err != nil {
		t.Fatal(err)
	}
	return string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}))
}

// TestDrafts: an owner writes a draft on its page; only its agent reads it, exactly as written; the
// agent acknowledges exactly that content or discards it, and the ciphertext is then deleted; a new
// draft replaces a waiting one; the page refuses what cannot be a draft and keeps what was typed.
func TestDrafts(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, dialect string) {
		t.Parallel()
		w := newWorld(t, dialect, onboarding.DefaultConfig())
		dal, two := w.ownedAgent(t, "dal-bot", "ana@example.org"), w.ownedAgent(t, "dal-two", "ana@example.org")
		cys := w.ownedAgent(t, "cy-bot", "cy@example.org")
		ana := w.signIn(t, "ana@example.org")

		// Written: 303, then the page says so once, with the hash.
		expectRedirect(t, ana.writeDraft(t, dal.AgentID, "Be kind.\r\nSpeak softly, in French when asked."))
		content := "Be kind.\nSpeak softly, in French when asked."
		sha := sha256Hex(content)
		r, _ := ana.get(t, onboarding.OwnerPath)
		expectPage(t, r, http.StatusOK, "")
		contains(t, r, "The draft is saved", sha, `<strong class="draft-state">waiting</strong>`)
		r, _ = ana.get(t, onboarding.OwnerPath)
		lacks(t, r, "The draft is saved", sha)

		// Only its agent reads it, exactly as written.
		d := w.readDraft(t, dal)
		if d == nil || d.Content != content || d.ContentSHA256 != sha || !d.CreatedAt.Equal(w.clock.Now()) {
			t.Fatalf("draft %+v", d)
		}
		for _, p := range []port.Principal{two, cys} {
			if got := w.readDraft(t, p); got != nil {
				t.Fatalf("agent %s reads another's draft: %+v", p.Handle, got)
			}
		}
		rows := w.storedDrafts(t, dal.AgentID)
		if len(rows) != 1 || rows[0].ID != d.DraftID || rows[0].State != onboarding.DraftWaiting || len(rows[0].Ciphertext) == 0 ||
			bytes.Contains(rows[0].Ciphertext, []byte("Speak softly")) {
			t.Fatalf("stored draft %+v", rows)
		}

		// Acknowledging the wrong content, or another's draft, is 409 and the draft still waits.
		testkit.Expect(t, w.acknowledge(t, dal, d.DraftID, sha256Hex(content+"\n")), http.StatusConflict, string(problem.DraftMismatch))
		testkit.Expect(t, w.acknowledge(t, two, d.DraftID, sha), http.StatusConflict, string(problem.DraftMismatch))
		testkit.Expect(t, w.discard(t, two, d.DraftID), http.StatusConflict, string(problem.DraftMismatch))
		testkit.Expect(t, w.acknowledge(t, dal, uuid.Must(uuid.NewV7()).String(), sha), http.StatusConflict, string(problem.DraftMismatch))
		for _, body := range []string{`{"draft_id":"` + d.DraftID + `"}`, `{"draft_id":"x","content_sha256":"` + sha + `"}`,
			`{"draft_id":"` + d.DraftID + `","content_sha256":"` + strings.ToUpper(sha) + `"}`} {
			testkit.Expect(t, w.agent(t, dal, http.MethodPost, onboarding.AcknowledgePath, body), http.StatusUnprocessableEntity, string(problem.ValidationFailed))
		}
		if got := w.readDraft(t, dal); got == nil || got.DraftID != d.DraftID {
			t.Fatalf("after refusals the draft is %+v", got)
		}

		// Acknowledged: the ciphertext is gone, the draft no longer waits, a repeat answers the same.
		ack := w.acknowledge(t, dal, d.DraftID, sha)
		expectOutcome(t, ack, d.DraftID, onboarding.DraftAcknowledged)
		if rows := w.storedDrafts(t, dal.AgentID); rows[0].State != onboarding.DraftAcknowledged || rows[0].Ciphertext != nil || rows[0].ContentSHA256 != sha {
			t.Fatalf("acknowledged draft %+v", rows[0])
		}
		if got := w.readDraft(t, dal); got != nil {
			t.Fatalf("an acknowledged draft is read again: %+v", got)
		}
		again := w.acknowledge(t, dal, d.DraftID, sha)
		expectOutcome(t, again, d.DraftID, onboarding.DraftAcknowledged)
		if !bytes.Equal(again.Body, ack.Body) {
			t.Fatalf("repeated acknowledgement %s, first %s", again.Body, ack.Body)
		}
		testkit.Expect(t, w.discard(t, dal, d.DraftID), http.StatusConflict, string(problem.DraftMismatch))
		r, _ = ana.get(t, onboarding.OwnerPath)
		contains(t, r, `<strong class="draft-state">acknowledged</strong>`)

		// A new draft replaces the one waiting.
		expectRedirect(t, ana.writeDraft(t, dal.AgentID, "First thoughts: be curious."))
		expectRedirect(t, ana.writeDraft(t, dal.AgentID, "Second thoughts: be brief."))
		rows = w.storedDrafts(t, dal.AgentID)
		if len(rows) != 3 || rows[1].State != onboarding.DraftReplaced || rows[1].Ciphertext != nil ||
			rows[2].State != onboarding.DraftWaiting || bytes.Contains(rows[2].Ciphertext, []byte("be brief")) {
			t.Fatalf("drafts after a replacement: %+v", rows)
		}
		d = w.readDraft(t, dal)
		if d == nil || d.DraftID != rows[2].ID || d.Content != "Second thoughts: be brief." {
			t.Fatalf("the waiting draft %+v", d)
		}
		testkit.Expect(t, w.acknowledge(t, dal, rows[1].ID, sha256Hex("First thoughts: be curious.")), http.StatusConflict, string(problem.DraftMismatch))

		// Discarded: the same, and acknowledging it afterwards is 409.
		dis := w.discard(t, dal, d.DraftID)
		expectOutcome(t, dis, d.DraftID, onboarding.DraftDiscarded)
		if rows := w.storedDrafts(t, dal.AgentID); rows[2].State != onboarding.DraftDiscarded || rows[2].Ciphertext != nil {
			t.Fatalf("discarded draft %+v", rows[2])
		}
		if again := w.discard(t, dal, d.DraftID); !bytes.Equal(again.Body, dis.Body) {
			t.Fatalf("repeated discard %s, first %s", again.Body, dis.Body)
		}
		testkit.Expect(t, w.acknowledge(t, dal, d.DraftID, d.ContentSHA256), http.StatusConflict, string(problem.DraftMismatch))
		if got := w.readDraft(t, dal); got != nil {
			t.Fatalf("a discarded draft is read again: %+v", got)
		}

		// What cannot be a draft: the page again, the error beside that agent's form, what was typed kept.
		saved := w.count(t, "onboarding_drafts", "")
		for _, c := range []struct{ name, content, reason string }{
			{"empty", "", "it is empty"},
			{"too long", strings.Repeat("a", onboarding.MaxDraft+1), "at most 8000 fit"},
			{"control character", "Ring the bell\a twice.", "contains a control character"},
			{"private key", "My key, keep it safe:\n" + privateKeyPEM(t), "held a private key"},
		} {
			r := ana.writeDraft(t, two.AgentID, c.content)
			expectPage(t, r, http.StatusUnprocessableEntity, "")
			contains(t, r, `<strong id="content-dal-two-error" class="error">`, c.reason)
			lacks(t, r, `id="content-dal-bot-error"`)
			typed := c.content
			if c.name == "private key" {
				// A private key is never shown again, not even to the owner who typed it.
				typed = ""
				lacks(t, r, "PRIVATE KEY")
			}
			contains(t, r, `name="content" rows="8" cols="70" maxlength="8000" required aria-invalid="true" aria-describedby="content-dal-two-error">`+typed+"</textarea>")
		}
		// Another owner's agent, and no agent at all: refused.
		r = ana.writeDraft(t, cys.AgentID, "Hello, not my agent.")
		expectPage(t, r, http.StatusNotFound, problem.NotFound)
		expectPage(t, ana.writeDraft(t, "not-an-agent", "Hello."), http.StatusNotFound, problem.NotFound)
		// Without the form's token, or without a session: 403.
		expectPage(t, ana.post(t, onboarding.DraftsPath, url.Values{"agent_id": {two.AgentID}, "content": {"Hi."}}), http.StatusForbidden, problem.CSRFFailed)
		anon := &browser{w: w}
		_, token := anon.get(t, onboarding.OwnerPath)
		r = anon.post(t, onboarding.DraftsPath, url.Values{"csrf_token": {token}, "agent_id": {two.AgentID}, "content": {"Hi."}})
		expectPage(t, r, http.StatusForbidden, "")
		contains(t, r, "the draft was not saved", `action="/owner/sign-in"`)
		if n := w.count(t, "onboarding_drafts", ""); n != saved {
			t.Fatalf("refused drafts were saved: %d drafts, %d before", n, saved)
		}
		for _, p := range []port.Principal{two, cys} {
			if got := w.readDraft(t, p); got != nil {
				t.Fatalf("a refused draft waits for %s: %+v", p.Handle, got)
			}
		}
	})
}

// TestDraftKeyRotation: a key put in front of the old one encrypts new drafts while the old drafts
// still read; a keyring without the old key cannot read them (an error, never another text).
func TestDraftKeyRotation(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, dialect string) {
		t.Parallel()
		ctx := context.Background()
		key1, key2 := onboarding.NewDraftKey(), onboarding.NewDraftKey()
		cfg := onboarding.DefaultConfig()
		cfg.DraftKeys = key1
		w := newWorld(t, dialect, cfg)
		dal := w.ownedAgent(t, "dal-bot", "ana@example.org")
		ana := w.signIn(t, "ana@example.org")
		expectRedirect(t, ana.writeDraft(t, dal.AgentID, "Old words."))
		old := w.storedDrafts(t, dal.AgentID)[0]

		drafts := func(keys string) *onboarding.Drafts {
			k, err := onboarding.NewKeyring(onboarding.Config{DraftKeys: keys})
			if err != nil {
				t.Fatal(err)
			}
			return onboarding.NewDrafts(w.db, k, w.clock, slog.New(slog.DiscardHandler))
		}
		rotated, only2 := drafts(key2+","+key1), drafts(key2)
		if d, err := only2.Waiting(ctx, dal.AgentID); err == nil {
			t.Fatalf("a keyring without the draft's key read %+v", d)
		}
		d, err := rotated.Waiting(ctx, dal.AgentID)
		if err != nil || d == nil || d.Content != "Old words." || d.DraftID != old.ID {
			t.Fatalf("the old draft under the rotated keys: %+v %v", d, err)
		}
		out, err := rotated.Close(ctx, dal.AgentID, d.DraftID, d.ContentSHA256)
		if err != nil || out.State != onboarding.DraftAcknowledged {
			t.Fatalf("acknowledging under the rotated keys: %+v %v", out, err)
		}

		if _, err := rotated.Write(ctx, w.ownerID(t, "ana@example.org"), dal.AgentID, "New words."); err != nil {
			t.Fatal(err)
		}
		rows := w.storedDrafts(t, dal.AgentID)
		if len(rows) != 2 || rows[1].KeyID == old.KeyID || rows[1].KeyID == "" {
			t.Fatalf("key ids %+v", rows)
		}
		if d, err := w.drafts.Waiting(ctx, dal.AgentID); err == nil {
			t.Fatalf("the old key read a draft of the new one: %+v", d)
		}
		if d, err := only2.Waiting(ctx, dal.AgentID); err != nil || d == nil || d.Content != "New words." {
			t.Fatalf("the new draft under the new key: %+v %v", d, err)
		}
	})
}

// TestKeyring: the keys it takes, and ciphertexts bound to their draft and agent.
func TestKeyring(t *testing.T) {
	t.Parallel()
	key := onboarding.NewDraftKey()
	short := base64.StdEncoding.EncodeToString(make([]byte, 16))
	for name, keys := range map[string]string{"none": "", "blank": "  ", "short": short, "not base64": "not*base64!", "repeated": key + "," + key,
		"repeated in another alphabet": key + "," + strings.TrimRight(key, "="), "an empty second": key + ",", "a short second": key + "," + short} {
		_, err := onboarding.NewKeyring(onboarding.Config{DraftKeys: keys})
		if err == nil {
			t.Fatalf("%s: keys %q taken", name, keys)
		}
		if strings.Contains(err.Error(), key) || strings.Contains(err.Error(), short) {
			t.Fatalf("%s: the error repeats a key: %v", name, err)
		}
	}
	k, err := onboarding.NewKeyring(onboarding.Config{DraftKeys: " " + key + " , " + onboarding.NewDraftKey()})
	if err != nil {
		t.Fatal(err)
	}
	draftID, agentID := uuid.Must(uuid.NewV7()).String(), uuid.Must(uuid.NewV7()).String()
	id, sealed := k.Seal(draftID, agentID, []byte("Be kind."))
	if plain, err := k.Open(id, draftID, agentID, sealed); err != nil || string(plain) != "Be kind." {
		t.Fatalf("open: %q %v", plain, err)
	}
	if _, again := k.Seal(draftID, agentID, []byte("Be kind.")); bytes.Equal(again, sealed) {
		t.Fatal("two seals of one text are equal")
	}
	other := uuid.Must(uuid.NewV7()).String()
	if _, err := k.Open(id, other, agentID, sealed); err == nil {
		t.Fatal("a ciphertext opens on another draft")
	}
	if _, err := k.Open(id, draftID, other, sealed); err == nil {
		t.Fatal("a ciphertext opens for another agent")
	}
	if _, err := k.Open("0123456789abcdef", draftID, agentID, sealed); err == nil {
		t.Fatal("a ciphertext opens under an unknown key id")
	}
	if _, err := k.Open(id, draftID, agentID, sealed[:8]); err == nil {
		t.Fatal("a truncated ciphertext opens")
	}
	for i := range sealed {
		flipped := bytes.Clone(sealed)
		flipped[i] ^= 0x01
		if _, err := k.Open(id, draftID, agentID, flipped); err == nil {
			t.Fatalf("a ciphertext with byte %d flipped opens", i)
		}
	}
}

// TestUnlink: the operator's unlink withdraws the waiting draft and deletes it; the agent may then
// ask for an owner again.
func TestUnlink(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, dialect string) {
		t.Parallel()
		ctx := context.Background()
		w := newWorld(t, dialect, onboarding.DefaultConfig())
		dal := w.ownedAgent(t, "dal-bot", "ana@example.org")
		ana := w.signIn(t, "ana@example.org")
		expectRedirect(t, ana.writeDraft(t, dal.AgentID, "Wait for me."))
		testkit.Expect(t, w.askLink(t, dal, "ana@example.org"), http.StatusConflict, string(problem.OwnerAlreadyLinked))

		if had, err := w.owners.Unlink(ctx, dal.AgentID); err != nil || !had {
			t.Fatalf("unlink: %v %v", had, err)
		}
		if rows := w.storedDrafts(t, dal.AgentID); len(rows) != 1 || rows[0].State != onboarding.DraftWithdrawn || rows[0].Ciphertext != nil {
			t.Fatalf("the draft after the unlink: %+v", rows)
		}
		if got := w.readDraft(t, dal); got != nil {
			t.Fatalf("a withdrawn draft is read: %+v", got)
		}
		if owner, err := w.owners.OwnerOf(ctx, dal.AgentID); err != nil || owner != "" {
			t.Fatalf("owner after the unlink: %q %v", owner, err)
		}
		r, _ := ana.get(t, onboarding.OwnerPath)
		lacks(t, r, `id="agent-dal-bot"`)
		expectPage(t, ana.writeDraft(t, dal.AgentID, "Still there?"), http.StatusNotFound, problem.NotFound)
		if had, err := w.owners.Unlink(ctx, dal.AgentID); err != nil || had {
			t.Fatalf("unlinking again: %v %v", had, err)
		}
		r = w.askLink(t, dal, "ana@example.org")
		testkit.Expect(t, r, http.StatusAccepted, "")
		testkit.Valid(t, "owner-link-requested", r.Body)
	})
}

// TestSweep: the periodic job deletes expired sessions, and sign-in links a day after they expired;
// what still works stays.
func TestSweep(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, dialect string) {
		t.Parallel()
		ctx := context.Background()
		cfg := onboarding.DefaultConfig()
		// Shorter than the distance of some time zones from UTC (TestSweepEastOfUTC).
		cfg.SessionTTL = time.Hour
		w := newWorld(t, dialect, cfg)
		ana := w.signIn(t, "ana@example.org")

		// Sessions are dated by the wall clock (scs), in UTC as the store writes them.
		wall := time.Now().UTC()
		for token, expiry := range map[string]time.Time{"expired": wall.Add(-time.Minute), "live": wall.Add(time.Hour)} {
			if err := w.db.Exec("INSERT INTO onboarding_sessions (token, data, expiry) VALUES (?, ?, ?)", token, []byte{1}, expiry).Error; err != nil {
				t.Fatal(err)
			}
		}
		now := w.clock.Now()
		for hash, expiry := range map[string]time.Time{"old": now.Add(-25 * time.Hour), "recent": now.Add(-time.Hour), "open": now.Add(10 * time.Minute)} {
			if err := w.db.Exec("INSERT INTO onboarding_sign_ins (token_hash, email, created_at, expires_at) VALUES (?, ?, ?, ?)",
				hash, "ana@example.org", expiry.Add(-15*time.Minute), expiry).Error; err != nil {
				t.Fatal(err)
			}
		}
		if err := w.sweeper.Work(ctx, &river.Job[onboarding.SweepArgs]{}); err != nil {
			t.Fatal(err)
		}
		for table, kept := range map[string][]string{"onboarding_sessions": {"live"}, "onboarding_sign_ins": {"open", "recent"}} {
			column := map[string]string{"onboarding_sessions": "token", "onboarding_sign_ins": "token_hash"}[table]
			var left []string
			if err := w.db.Table(table).Where(column+" IN ?", []string{"expired", "live", "old", "recent", "open"}).Order(column).Pluck(column, &left).Error; err != nil {
				t.Fatal(err)
			}
			if strings.Join(left, ",") != strings.Join(kept, ",") {
				t.Fatalf("%s after the sweep: %v, want %v", table, left, kept)
			}
		}
		// The owner's real session and its used sign-in link (expired less than a day ago) stay.
		if n := w.count(t, "onboarding_sessions", ""); n != 2 {
			t.Fatalf("%d sessions", n)
		}
		r, _ := ana.get(t, onboarding.OwnerPath)
		contains(t, r, "Signed in as <strong>ana@example.org</strong>")
	})
}

// TestSweepEastOfUTC runs TestSweep on SQLite in a time zone east of UTC: SQLite compares times as the
// text stored, so sessions must be compared in UTC, as they are stored, or a live session is refused
// and swept (and west of UTC an expired one kept).
func TestSweepEastOfUTC(t *testing.T) {
	t.Parallel()
	if os.Getenv("TZ") == "Asia/Tokyo" {
		t.Skip("already east of UTC")
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestSweep$/^sqlite$", "-test.count=1")
	cmd.Env = append(os.Environ(), "TZ=Asia/Tokyo")
	if out, err := cmd.CombinedOutput(); err != nil || !bytes.Contains(out, []byte("PASS")) {
		t.Fatalf("TestSweep in Asia/Tokyo: %v\n%s", err, out)
	}
}
