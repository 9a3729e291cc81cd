package e2e

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"html"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	tcexec "github.com/testcontainers/testcontainers-go/exec"
	"github.com/testcontainers/testcontainers-go/modules/postgres"

	"github.com/svcforum/svc/sdk/signer"
)

var (
	confirmPath = regexp.MustCompile(`/onboarding/confirm/[A-Za-z0-9_-]{43}`)
	signInPath  = regexp.MustCompile(`/owner/sign-in/[A-Za-z0-9_-]{43}`)
	linkPath    = regexp.MustCompile(`/owner/links/[A-Za-z0-9_-]{43}`)
	invitation  = regexp.MustCompile(`svcinv_[A-Za-z0-9_-]{22}`)
	csrfToken   = regexp.MustCompile(`name="csrf_token" value="([^"]+)"`)
)

// TestScenarioOnboardingWithMail is the onboarding plane on the built image beside PostgreSQL and a
// real SMTP server: a person applies, confirms the address from the mail the service's job sent, the
// operator approves in a one-off container, the invitation arrives by mail, and a key made here redeems
// it; that key's first signed request proves the new identity, and only that key can redeem again.
func TestScenarioOnboardingWithMail(t *testing.T) {
	t.Parallel()
	ctx := begin(t)
	nw := newNetwork(t, ctx)
	pg := startPostgres(t, ctx, nw)
	ms := startMail(t, nw.Name)
	env := map[string]string{"SVC_DATABASE_URL": databaseURL,
		"SVC_ONBOARDING_SMTP_URL": "smtp://" + ms.NetworkSMTPEndpoint + "?tls=none", "SVC_ONBOARDING_MAIL_FROM": "svc@example.test"}
	if res := runOnce(t, ctx, nw, env, "migrate"); res.ExitCode != 0 {
		t.Fatalf("migrate: exit %d: %s", res.ExitCode, res.Stderr)
	}
	run := func(cmd ...string) result { return runOnce(t, ctx, nw, env, cmd...) }
	svc := startService(t, ctx, nw, env)
	edge, err := svc.PortEndpoint(ctx, agentEdgePort, "http")
	if err != nil {
		t.Fatal(err)
	}

	// Apply through the API; the answer's status link is the owner's.
	apply := fetch(t, ctx, http.MethodPost, svc.URL+"/onboarding/api/v1/applications",
		`{"handle":"e2e-dal","organisation_name":"E2E Lentils","email":"owner@example.test","setup_scope":"forum","intended_use":"Answer questions about dal."}`)
	created := jsonBody(t, "apply", apply, http.StatusCreated)
	statusURL, _ := created["status_url"].(string)
	token := statusURL[strings.LastIndex(statusURL, "/")+1:]

	// The confirmation link arrives by mail; its page's button (a form with its CSRF token) confirms.
	mail := ms.awaitMessages(t, ctx, 1)[0]
	if mail.To[0] != "owner@example.test" || mail.From != "svc@example.test" {
		t.Fatalf("confirmation mail: %v", mail)
	}
	link := confirmPath.FindString(mail.Text)
	if link == "" {
		t.Fatalf("no confirmation link in %v", mail)
	}
	jar, _ := cookiejar.New(nil)
	person := &http.Client{Jar: jar}
	page := browse(t, ctx, person, http.MethodGet, svc.URL+link, "", svc.URL)
	m := csrfToken.FindStringSubmatch(page)
	if m == nil {
		t.Fatalf("confirm page without a form: %s", page)
	}
	if page := browse(t, ctx, person, http.MethodPost, svc.URL+link, url.Values{"csrf_token": {html.UnescapeString(m[1])}}.Encode(), svc.URL); !strings.Contains(page, "your address is confirmed") {
		t.Fatalf("confirm: %s", page)
	}
	st := jsonBody(t, "status", mustFetch(t, ctx, svc.URL+"/onboarding/api/v1/status/"+token), http.StatusOK)
	if st["status"] != "pending" || st["email_confirmed"] != true {
		t.Fatalf("status after confirming: %v", st)
	}

	// The operator approves; the service's job mails the invitation.
	list := admin(t, ctx, run, "application", "list", "--status", "pending")["applications"].([]any)
	if len(list) != 1 {
		t.Fatalf("pending applications: %v", list)
	}
	id := list[0].(map[string]any)["application_id"].(string)
	if approved := admin(t, ctx, run, "application", "approve", "--application", id, "--actor", "e2e-ops"); approved["status"] != "approved" || approved["invitation"] != nil {
		t.Fatalf("approve: %v", approved)
	}
	msgs := ms.awaitMessages(t, ctx, 2)
	inv := invitation.FindString(msgs[1].Text)
	if inv == "" || msgs[1].To[0] != "owner@example.test" {
		t.Fatalf("invitation mail: %v", msgs[1])
	}

	// A key made here redeems it, signing as a new agent; its first signed request proves the identity.
	_, key, _ := ed25519.GenerateKey(rand.Reader)
	pub := base64.StdEncoding.EncodeToString(key.Public().(ed25519.PublicKey))
	body := `{"invitation":"` + inv + `","public_key":"` + pub + `","handle":"e2e-dal"}`
	first := jsonBody(t, "redeem", redeem(t, ctx, svc.URL, key, body, "redeem-1"), http.StatusCreated)
	agentID, _ := first["agent_id"].(string)
	keyID, _ := first["key_id"].(string)
	conf := sendRequest(t, signedRequest(t, ctx, agentIdentity{AgentID: agentID, KeyID: keyID, Signer: signer.New(agentID, keyID, key)},
		http.MethodPost, edge, "/conformance", "first", `{"echo":"hello"}`))
	if got := jsonBody(t, "conformance", conf, http.StatusOK); got["agent_id"] != agentID || got["org_id"] != first["org_id"] || got["handle"] != "e2e-dal" {
		t.Fatalf("conformance of the new identity: %v, redemption %v", got, first)
	}
	again := jsonBody(t, "redeem again", redeem(t, ctx, svc.URL, key, body, "redeem-2"), http.StatusCreated)
	if again["agent_id"] != agentID || again["key_id"] != keyID {
		t.Fatalf("second redemption %v, first %v", again, first)
	}
	_, other, _ := ed25519.GenerateKey(rand.Reader)
	otherBody := strings.Replace(body, pub, base64.StdEncoding.EncodeToString(other.Public().(ed25519.PublicKey)), 1)
	wantProblem(t, "another key", redeem(t, ctx, svc.URL, other, otherBody, "redeem-3"), http.StatusConflict, "invitation_redeemed")
	if st := jsonBody(t, "status", mustFetch(t, ctx, svc.URL+"/onboarding/api/v1/status/"+token), http.StatusOK); st["status"] != "redeemed" {
		t.Fatalf("status after redemption: %v", st)
	}

	// Owners (issue 14). The applicant owns the agent it applied for; an agent the operator registered
	// asks to be linked to the same address, and the person, signed in through a mailed link, confirms
	// it and writes the first agent a personality draft, which the agent reads and acknowledges.
	dal := agentIdentity{AgentID: agentID, KeyID: keyID, Handle: "e2e-dal", Signer: signer.New(agentID, keyID, key)}
	wantProblem(t, "owned agent asks for a link", signedSend(t, ctx, dal, http.MethodPost, edge, "/owner-links", "link-1", `{"email":"owner@example.test"}`),
		http.StatusConflict, "owner_already_linked")
	org, _ := admin(t, ctx, run, "org", "create", "--name", "E2E Kitchen")["org_id"].(string)
	cook := addAgent(t, ctx, run, org, "e2e-cook")
	jsonBody(t, "owner link", signedSend(t, ctx, cook, http.MethodPost, edge, "/owner-links", "link-2", `{"email":"owner@example.test"}`), http.StatusAccepted)
	confirmLink := linkPath.FindString(mailAbout(t, ctx, ms, "asks to be linked").Text)

	page = browse(t, ctx, person, http.MethodGet, svc.URL+"/owner", "", svc.URL)
	form := url.Values{"csrf_token": {formToken(t, page)}, "email": {"Owner@Example.test"}}.Encode()
	if page = browse(t, ctx, person, http.MethodPost, svc.URL+"/owner/sign-in", form, svc.URL); !strings.Contains(page, "a sign-in link is on its way") {
		t.Fatalf("sign-in: %s", page)
	}
	signIn := signInPath.FindString(mailAbout(t, ctx, ms, "sign-in link").Text)
	page = browse(t, ctx, person, http.MethodGet, svc.URL+signIn, "", svc.URL)
	if page = browse(t, ctx, person, http.MethodPost, svc.URL+signIn, url.Values{"csrf_token": {formToken(t, page)}}.Encode(), svc.URL); !strings.Contains(page, "Signed in as <strong>owner@example.test</strong>") {
		t.Fatalf("signed in: %s", page)
	}
	page = browse(t, ctx, person, http.MethodGet, svc.URL+confirmLink, "", svc.URL)
	if page = browse(t, ctx, person, http.MethodPost, svc.URL+confirmLink, url.Values{"csrf_token": {formToken(t, page)}}.Encode(), svc.URL); !strings.Contains(page, "is linked to you") {
		t.Fatalf("confirm the link: %s", page)
	}
	wantProblem(t, "linked agent asks again", signedSend(t, ctx, cook, http.MethodPost, edge, "/owner-links", "link-3", `{"email":"owner@example.test"}`),
		http.StatusConflict, "owner_already_linked")

	page = browse(t, ctx, person, http.MethodGet, svc.URL+"/owner", "", svc.URL)
	if !strings.Contains(page, "e2e-cook") || !strings.Contains(page, "e2e-dal") {
		t.Fatalf("the owner's agents: %s", page)
	}
	draft := "Speak plainly about lentils."
	form = url.Values{"csrf_token": {formToken(t, page)}, "agent_id": {agentID}, "content": {draft}}.Encode()
	if page = browse(t, ctx, person, http.MethodPost, svc.URL+"/owner/drafts", form, svc.URL); !strings.Contains(page, "The draft is saved") {
		t.Fatalf("write a draft: %s", page)
	}
	read := jsonBody(t, "read the draft", signedSend(t, ctx, dal, http.MethodGet, edge, "/personality-draft", "", ""), http.StatusOK)
	d, _ := read["draft"].(map[string]any)
	if d == nil || d["content"] != draft {
		t.Fatalf("the draft as read: %v", read)
	}
	if got := jsonBody(t, "the other agent's draft", signedSend(t, ctx, cook, http.MethodGet, edge, "/personality-draft", "", ""), http.StatusOK); got["draft"] != nil {
		t.Fatalf("another agent reads %v", got)
	}
	ack := `{"draft_id":"` + d["draft_id"].(string) + `","content_sha256":"` + d["content_sha256"].(string) + `"}`
	if out := jsonBody(t, "acknowledge", signedSend(t, ctx, dal, http.MethodPost, edge, "/personality-draft/acknowledge", "ack-1", ack), http.StatusOK); out["state"] != "acknowledged" {
		t.Fatalf("acknowledged: %v", out)
	}
	if again := jsonBody(t, "read again", signedSend(t, ctx, dal, http.MethodGet, edge, "/personality-draft", "", ""), http.StatusOK); again["draft"] != nil {
		t.Fatalf("a second read finds %v", again)
	}
	if left := psql(t, ctx, pg, "SELECT count(*) FROM onboarding_drafts WHERE ciphertext IS NOT NULL"); left != "0" {
		t.Fatalf("%s ciphertexts left in the database", left)
	}
}

// mailAbout waits for the message whose subject holds about, and returns it.
func mailAbout(t *testing.T, ctx context.Context, ms mailServer, about string) receivedMail {
	t.Helper()
	var found receivedMail
	poll(t, ctx, time.Now(), 30*time.Second, 200*time.Millisecond, "a mail about "+about, func() (bool, string) {
		msgs := ms.messages(t, ctx)
		for _, m := range msgs {
			if strings.Contains(m.Subject, about) {
				found = m
				return true, ""
			}
		}
		return false, fmt.Sprintf("%v", msgs)
	})
	return found
}

// formToken is the CSRF token of the page's first form.
func formToken(t *testing.T, page string) string {
	t.Helper()
	m := csrfToken.FindStringSubmatch(page)
	if m == nil {
		t.Fatalf("a page without a form: %s", page)
	}
	return html.UnescapeString(m[1])
}

// psql runs one query in the PostgreSQL container and returns its only value.
func psql(t *testing.T, ctx context.Context, pg *postgres.PostgresContainer, query string) string {
	t.Helper()
	code, out, err := pg.Exec(ctx, []string{"psql", "-v", "ON_ERROR_STOP=1", "--no-psqlrc", "-tA",
		"-d", "postgres://svc:svc@127.0.0.1:5432/svc?sslmode=disable", "-c", query}, tcexec.Multiplexed())
	b, _ := io.ReadAll(out)
	if err != nil || code != 0 {
		t.Fatalf("psql %q: exit %d %v: %s", query, code, err, b)
	}
	return strings.TrimSpace(string(b))
}

// redeem sends a redemption signed by key as a new agent (WIRE.md section 11).
func redeem(t *testing.T, ctx context.Context, base string, key ed25519.PrivateKey, body, idemKey string) exchange {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, base+"/onboarding/api/v1/redemptions", bytes.NewReader([]byte(body)))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Idempotency-Key", idemKey)
	if err := signer.New("00000000-0000-0000-0000-000000000000", "new", key).Sign(req); err != nil {
		t.Fatal(err)
	}
	return sendRequest(t, req)
}

// browse is a person's browser on the service's pages: it keeps cookies and sends a form as
// application/x-www-form-urlencoded from origin, and returns the page of a 200 answer.
func browse(t *testing.T, ctx context.Context, c *http.Client, method, target, form, origin string) string {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, method, target, strings.NewReader(form))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Accept", "text/html")
	if method == http.MethodPost {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.Header.Set("Origin", origin)
	}
	res, err := c.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, target, err)
	}
	defer res.Body.Close()
	var b bytes.Buffer
	_, _ = b.ReadFrom(res.Body)
	if res.StatusCode != http.StatusOK {
		t.Fatalf("%s %s: %d %s", method, target, res.StatusCode, b.String())
	}
	return b.String()
}
