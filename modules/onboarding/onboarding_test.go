package onboarding_test

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/x509"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"golang.org/x/crypto/ssh"

	"github.com/svcforum/svc/contracts/problem"
	"github.com/svcforum/svc/database/dbtest"
	"github.com/svcforum/svc/modules/onboarding"
	"github.com/svcforum/svc/testkit"
	"github.com/svcforum/svc/testkit/mailsink"
)

func application(handle, email string) string {
	return fmt.Sprintf(`{"handle":%q,"organisation_name":"Lentil Lab","email":%q,"setup_scope":"forum","intended_use":"Answer questions about dal."}`, handle, email)
}

var (
	confirmLink    = regexp.MustCompile(regexp.QuoteMeta(baseURL) + `(/onboarding/confirm/[A-Za-z0-9_-]{43})`)
	invitationText = regexp.MustCompile(`svcinv_[A-Za-z0-9_-]{22}`)
)

// lastMail returns the newest message of kind to the address, once the jobs queued so far ran (without
// SMTP they move each message to the outbox, where the operator reads it with its body).
func (w *world) lastMail(t testing.TB, kind, to string) onboarding.Mail {
	t.Helper()
	for _, err := range w.sendAll(t, 1) {
		if err != nil {
			t.Fatal(err)
		}
	}
	list, _, err := w.outbox.List(context.Background(), "", allOf("mail"))
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range list { // newest first
		if m.Kind == kind && m.Recipient == to {
			return m
		}
	}
	t.Fatalf("no %s mail to %s in %+v", kind, to, list)
	return onboarding.Mail{}
}

func mustMatch(t testing.TB, re *regexp.Regexp, s string) string {
	t.Helper()
	m := re.FindStringSubmatch(s)
	if m == nil {
		t.Fatalf("%s not found in %q", re, s)
	}
	return m[len(m)-1]
}

// TestForm is the browser's path without a browser (the Chromium test is in host): the form, its CSRF
// refusal, a refusal that keeps what was typed, the answer with its status link, and the address's
// confirmation by a button on the page the mailed link opens.
func TestForm(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, dialect string) {
		t.Parallel()
		w := newWorld(t, dialect, onboarding.DefaultConfig())
		b := &browser{w: w}
		r, token := b.get(t, onboarding.FormPath)
		testkit.Expect(t, r, http.StatusOK, "")
		if token == "" || b.cookie == "" || r.Header.Get("Cache-Control") != "no-store" || r.Header.Get("Referrer-Policy") != "same-origin" {
			t.Fatalf("form: token %q cookie %q headers %v", token, b.cookie, r.Header)
		}
		form := url.Values{"handle": {"dal-bot"}, "organisation_name": {"Lentil Lab"}, "email": {"ana@example.org"},
			"setup_scope": {"forum"}, "intended_use": {"Answer questions\r\nabout dal."}}

		// Without the token, or with another's, or from another site: 403, nothing stored.
		if r := b.post(t, onboarding.FormPath, form); r.Status != http.StatusForbidden || !strings.Contains(string(r.Body), "security token") {
			t.Fatalf("no token: %d %s", r.Status, testkit.Short(r.Body))
		}
		forged := url.Values{"csrf_token": {base64.StdEncoding.EncodeToString(make([]byte, 64))}}
		for k, v := range form {
			forged[k] = v
		}
		if r := b.post(t, onboarding.FormPath, forged); r.Status != http.StatusForbidden {
			t.Fatalf("forged token: %d", r.Status)
		}
		withToken := url.Values{"csrf_token": {token}}
		for k, v := range form {
			withToken[k] = v
		}
		cross := b.w.do(t, http.MethodPost, onboarding.FormPath, "application/x-www-form-urlencoded", withToken.Encode(),
			http.Header{"Origin": {"https://evil.example"}, "Cookie": {b.cookie}})
		if cross.Status != http.StatusForbidden {
			t.Fatalf("other origin: %d", cross.Status)
		}
		if list, _, err := w.apps.List(context.Background(), "", allOf("application")); err != nil || len(list) != 0 {
			t.Fatalf("a refused form stored %v (%v)", list, err)
		}

		// A bad field: 422, the form again with what was typed and the reason beside the field.
		bad := url.Values{"csrf_token": {token}}
		for k, v := range form {
			bad[k] = v
		}
		bad.Set("email", "ana at example")
		bad.Set("handle", "Dal Bot")
		r = b.post(t, onboarding.FormPath, bad)
		page := string(r.Body)
		if r.Status != http.StatusUnprocessableEntity || !strings.Contains(page, `value="ana at example"`) || !strings.Contains(page, `id="email-error"`) ||
			!strings.Contains(page, `id="handle-error"`) || strings.Contains(page, `id="intended_use-error"`) || !strings.Contains(page, "Answer questions\nabout dal.") {
			t.Fatalf("refused form: %d %s", r.Status, testkit.Short(r.Body))
		}

		// Sent: the status link, once; the confirmation mail with its link.
		r = b.post(t, onboarding.FormPath, withToken)
		testkit.Expect(t, r, http.StatusOK, "")
		statusURL := mustMatch(t, regexp.MustCompile(`id="status-link" href="([^"]+)"`), string(r.Body))
		if !strings.HasPrefix(statusURL, baseURL+onboarding.StatusPath) || r.Header.Get("Cache-Control") != "no-store" {
			t.Fatalf("answer: %s %v", statusURL, r.Header)
		}
		statusPath := strings.TrimPrefix(statusURL, baseURL)
		st, _ := b.get(t, statusPath)
		if st.Status != http.StatusOK || !strings.Contains(string(st.Body), "Confirm your address") || st.Header.Get("Referrer-Policy") != "no-referrer" {
			t.Fatalf("status page: %d %s", st.Status, testkit.Short(st.Body))
		}
		mail := w.lastMail(t, onboarding.MailConfirm, "ana@example.org")
		if mail.State != onboarding.MailOutbox {
			t.Fatalf("mail without SMTP: %+v", mail)
		}
		confirm := mustMatch(t, confirmLink, mail.Body)

		// Following the link confirms nothing; its button does.
		r, token = b.get(t, confirm)
		if r.Status != http.StatusOK || token == "" || !strings.Contains(string(r.Body), "Confirm my address") {
			t.Fatalf("confirm page: %d %s", r.Status, testkit.Short(r.Body))
		}
		if app := w.only(t); app.EmailConfirmed || app.IntendedUse != "Answer questions\nabout dal." {
			t.Fatalf("after the link: %+v", app)
		}
		if r := b.post(t, confirm, url.Values{}); r.Status != http.StatusForbidden {
			t.Fatalf("confirm without token: %d", r.Status)
		}
		r = b.post(t, confirm, url.Values{"csrf_token": {token}})
		if r.Status != http.StatusOK || !strings.Contains(string(r.Body), "your address is confirmed") || !w.only(t).EmailConfirmed {
			t.Fatalf("confirm: %d %s", r.Status, testkit.Short(r.Body))
		}
		st, _ = b.get(t, statusPath)
		if !strings.Contains(string(st.Body), "An operator will review") {
			t.Fatalf("status after confirming: %s", testkit.Short(st.Body))
		}
		if r, _ := b.get(t, onboarding.ConfirmPath+strings.Repeat("A", 43)); r.Status != http.StatusNotFound {
			t.Fatalf("unknown confirmation: %d", r.Status)
		}

		// The handle is now the pending application's.
		r, token = b.get(t, onboarding.FormPath)
		again := url.Values{"csrf_token": {token}}
		for k, v := range form {
			again[k] = v
		}
		again.Set("email", "ben@example.org")
		r = b.post(t, onboarding.FormPath, again)
		if r.Status != http.StatusConflict || !strings.Contains(string(r.Body), "This handle is taken") {
			t.Fatalf("taken handle: %d %s", r.Status, testkit.Short(r.Body))
		}
	})
}

// mailTo returns the newest message to the address, without running any job.
func (w *world) mailTo(t testing.TB, to string) onboarding.Mail {
	t.Helper()
	list, _, err := w.outbox.List(context.Background(), "", allOf("mail"))
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range list { // newest first
		if m.Recipient == to {
			return m
		}
	}
	t.Fatalf("no mail to %s", to)
	return onboarding.Mail{}
}

func (w *world) only(t testing.TB) onboarding.Application {
	t.Helper()
	list, _, err := w.apps.List(context.Background(), "", allOf("application"))
	if err != nil || len(list) != 1 {
		t.Fatalf("applications: %v %v", list, err)
	}
	return list[0]
}

// TestAPI is the JSON side of applying and reading a status, with its refusals.
func TestAPI(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, dialect string) {
		t.Parallel()
		cfg := onboarding.DefaultConfig()
		cfg.AddressLimit = 4
		w := newWorld(t, dialect, cfg)
		r := w.apply(t, application("dal-bot", "ana@example.org"))
		testkit.Expect(t, r, http.StatusCreated, "")
		testkit.Valid(t, "application-created", r.Body)
		var created onboarding.Created
		r.Decode(t, &created)
		if created.Status != onboarding.StatePending || r.Header.Get("Cache-Control") != "no-store" {
			t.Fatalf("created %+v", created)
		}
		path := strings.Replace(strings.TrimPrefix(created.StatusURL, baseURL), "/onboarding/status/", onboarding.APIPrefix+"/status/", 1)
		st := w.do(t, http.MethodGet, path, "", "", nil)
		testkit.Expect(t, st, http.StatusOK, "")
		testkit.Valid(t, "application-status", st.Body)
		if m := st.JSON(t); m["status"] != "pending" || m["email_confirmed"] != false || m["handle"] != "dal-bot" || m["invitation_sent_at"] != nil {
			t.Fatalf("status %v", m)
		}
		testkit.Expect(t, w.do(t, http.MethodGet, onboarding.APIPrefix+"/status/"+strings.Repeat("x", 43), "", "", nil), http.StatusNotFound, string(problem.NotFound))
		testkit.Expect(t, w.do(t, http.MethodGet, onboarding.APIPrefix+"/status/short", "", "", nil), http.StatusNotFound, string(problem.NotFound))

		testkit.Expect(t, w.apply(t, application("dal-bot", "ben@example.org")), http.StatusConflict, string(problem.HandleTaken))
		w.db.Create(&testkit.AgentRow{ID: "a1", Handle: "soup-bot", PublicKey: "k1"})
		testkit.Expect(t, w.apply(t, application("soup-bot", "ben@example.org")), http.StatusConflict, string(problem.HandleTaken))
		testkit.Expect(t, w.apply(t, `{"handle":"Dal","organisation_name":"x","email":"ana@example.org","setup_scope":"forum","intended_use":"x"}`), http.StatusUnprocessableEntity, string(problem.ValidationFailed))
		testkit.Expect(t, w.apply(t, `{"handle":"dal-two","organisation_name":"x","email":"ana@example.org","setup_scope":"arena","intended_use":"x"}`), http.StatusUnprocessableEntity, string(problem.ValidationFailed))
		testkit.Expect(t, w.apply(t, `{"handle":"dal-two","organisation_name":"x","email":"ana@example.org","setup_scope":"forum","intended_use":"x","extra":1}`), http.StatusUnprocessableEntity, string(problem.ValidationFailed))
		testkit.Expect(t, w.apply(t, `{"handle":"dal-two","organisation_name":"x","email":"ana at example.org","setup_scope":"forum","intended_use":"x"}`), http.StatusUnprocessableEntity, string(problem.ValidationFailed))
		testkit.Expect(t, w.apply(t, `{"handle":"dal-two","organisation_name":"   ","email":"ana@example.org","setup_scope":"forum","intended_use":"x"}`), http.StatusUnprocessableEntity, string(problem.ValidationFailed))
		testkit.Expect(t, w.apply(t, `{"handle":"dal-two","organisation_name":"x\u202e","email":"ana@example.org","setup_scope":"forum","intended_use":"x"}`), http.StatusUnprocessableEntity, string(problem.ValidationFailed))
		testkit.Expect(t, w.do(t, http.MethodPost, onboarding.APIPrefix+"/applications", "text/plain", application("dal-two", "a@example.org"), nil), http.StatusUnsupportedMediaType, string(problem.UnsupportedMediaType))

		// The address's limit counts the valid applications it sent, taken handles included (so that
		// handles cannot be probed at speed): the fourth passes, the fifth is 429 until the window
		// moves on.
		testkit.Expect(t, w.apply(t, application("dal-two", "ana@example.org")), http.StatusCreated, "")
		r = w.apply(t, application("dal-three", "ana@example.org"))
		testkit.Expect(t, r, http.StatusTooManyRequests, string(problem.RateLimited))
		if r.Header.Get("Retry-After") == "" {
			t.Fatal("429 without Retry-After")
		}
		w.clock.Add(cfg.AddressWindow)
		testkit.Expect(t, w.apply(t, application("dal-three", "ana@example.org")), http.StatusCreated, "")
	})
}

// redeemer signs redemptions in these tests: the stand-in proof verifies what the test says.
func (w *world) redeem(t testing.TB, body, proof string) testkit.Result {
	t.Helper()
	h := http.Header{}
	if proof != "" {
		h.Set(testkit.HeaderProof, proof)
	}
	return w.do(t, http.MethodPost, onboarding.APIPrefix+"/redemptions", "application/json", body, h)
}

func redemption(invitation, key, handle string) string {
	return fmt.Sprintf(`{"invitation":%q,"public_key":%q,"handle":%q}`, invitation, key, handle)
}

func newKey(t testing.TB) (string, ed25519.PrivateKey) {
	t.Helper()
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return base64.StdEncoding.EncodeToString(pub), priv
}

// approved applies, confirms and approves an application, and returns its id and invitation.
func (w *world) approved(t testing.TB, handle, email string) (string, string) {
	t.Helper()
	r := w.apply(t, application(handle, email))
	testkit.Expect(t, r, http.StatusCreated, "")
	id := r.JSON(t)["application_id"].(string)
	ctx := context.Background()
	if _, _, err := w.apps.Approve(ctx, id, "ops", ""); !isProblem(err, problem.Conflict) {
		t.Fatalf("approving an unconfirmed application: %v", err)
	}
	token := strings.TrimPrefix(mustMatch(t, confirmLink, w.lastMail(t, onboarding.MailConfirm, email).Body), onboarding.ConfirmPath)
	if _, err := w.apps.Confirm(ctx, token); err != nil {
		t.Fatal(err)
	}
	app, invitation, err := w.apps.Approve(ctx, id, "ops-ana", "looks fine")
	if err != nil || app.Status != onboarding.StateApproved || app.DecidedBy == nil || *app.DecidedBy != "ops-ana" || app.InvitationExpiresAt == nil {
		t.Fatalf("approve: %+v %v", app, err)
	}
	if got := mustMatch(t, invitationText, w.lastMail(t, onboarding.MailInvitation, email).Body); got != invitation {
		t.Fatalf("mailed invitation %q, approved %q", got, invitation)
	}
	return id, invitation
}

func isProblem(err error, code problem.Code) bool {
	p, ok := err.(*problem.Problem)
	return ok && p.Code == code
}

// TestRedemption is WIRE.md section 11's redemption: once per invitation, the same identity again for
// the same key, 409 for another, 403 for what cannot be redeemed, 422 for a private key in any form.
func TestRedemption(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, dialect string) {
		t.Parallel()
		cfg := onboarding.DefaultConfig()
		w := newWorld(t, dialect, cfg)
		ctx := context.Background()
		id, invitation := w.approved(t, "dal-bot", "ana@example.org")
		key, priv := newKey(t)

		// A private key, in each form, anywhere in the body: 422 before anything else, nothing stored.
		for name, body := range privateKeyBodies(t, invitation, key, priv) {
			r := w.redeem(t, body, "ok")
			if r.Status != http.StatusUnprocessableEntity || r.Code != string(problem.PrivateKeyRefused) {
				t.Fatalf("%s: %d %q %s", name, r.Status, r.Code, testkit.Short(r.Body))
			}
			if strings.Contains(string(r.Body), base64.StdEncoding.EncodeToString(priv)[:20]) {
				t.Fatalf("%s: the answer echoes the key", name)
			}
		}
		testkit.Expect(t, w.redeem(t, redemption(invitation, key, "dal-bot"), ""), http.StatusBadRequest, string(problem.MalformedSignatureHeaders))
		testkit.Expect(t, w.redeem(t, redemption(invitation, key, "dal-bot"), string(problem.SignatureMismatch)), http.StatusUnauthorized, string(problem.SignatureMismatch))
		testkit.Expect(t, w.redeem(t, `{"invitation":"x","public_key":"short","handle":"dal-bot"}`, "ok"), http.StatusUnprocessableEntity, string(problem.ValidationFailed))
		testkit.Expect(t, w.redeem(t, redemption(invitation, key, "other-bot"), "ok"), http.StatusUnprocessableEntity, string(problem.HandleMismatch))
		testkit.Expect(t, w.redeem(t, redemption("svcinv_"+strings.Repeat("A", 22), key, "dal-bot"), "ok"), http.StatusForbidden, string(problem.InvitationInvalid))
		testkit.Expect(t, w.redeem(t, redemption("not an invitation", key, "dal-bot"), "ok"), http.StatusForbidden, string(problem.InvitationInvalid))
		var n int64
		w.db.Model(&testkit.AgentRow{}).Count(&n)
		if n != 0 {
			t.Fatalf("%d agents after refusals", n)
		}

		r := w.redeem(t, redemption(invitation, key, "dal-bot"), "ok")
		testkit.Expect(t, r, http.StatusCreated, "")
		testkit.Valid(t, "redemption-response", r.Body)
		first := r.JSON(t)
		if first["handle"] != "dal-bot" || first["agent_api"].(map[string]any)["edge"] != w.deploy.AgentAPI["edge"] {
			t.Fatalf("identity %v", first)
		}
		again := w.redeem(t, redemption(invitation, key, "dal-bot"), "ok")
		testkit.Expect(t, again, http.StatusCreated, "")
		if string(again.Body) != string(r.Body) {
			t.Fatalf("second redemption %s, first %s", again.Body, r.Body)
		}
		// The same key asking for another handle is not the same redemption.
		testkit.Expect(t, w.redeem(t, redemption(invitation, key, "other-bot"), "ok"), http.StatusUnprocessableEntity, string(problem.HandleMismatch))
		other, _ := newKey(t)
		testkit.Expect(t, w.redeem(t, redemption(invitation, other, "dal-bot"), "ok"), http.StatusConflict, string(problem.InvitationRedeemed))
		if app, _ := w.apps.Show(ctx, id); app.Status != onboarding.StateRedeemed || app.AgentID == nil || *app.AgentID != first["agent_id"] {
			t.Fatalf("application after redemption: %+v", app)
		}
		if _, err := w.apps.Reject(ctx, id, "ops", "late"); !isProblem(err, problem.Conflict) {
			t.Fatalf("rejecting a redeemed application: %v", err)
		}

		// The same owner's next agent of the same organisation joins its organisation.
		_, inv2 := w.approved(t, "dal-two", "ana@example.org")
		key2, _ := newKey(t)
		r = w.redeem(t, redemption(inv2, key2, "dal-two"), "ok")
		testkit.Expect(t, r, http.StatusCreated, "")
		if r.JSON(t)["org_id"] != first["org_id"] {
			t.Fatalf("second agent's organisation %v, first %v", r.JSON(t)["org_id"], first["org_id"])
		}
		// A key registered to an agent cannot be registered again.
		_, inv3 := w.approved(t, "dal-three", "ben@example.org")
		testkit.Expect(t, w.redeem(t, redemption(inv3, key, "dal-three"), "ok"), http.StatusUnprocessableEntity, string(problem.PublicKeyRejected))

		// Rejected: the invitation stops working, and the handle is free again.
		rid, inv4 := w.approved(t, "dal-four", "cy@example.org")
		if app, err := w.apps.Reject(ctx, rid, "ops", "not a fit"); err != nil || app.Status != onboarding.StateRejected {
			t.Fatalf("reject: %+v %v", app, err)
		}
		k4, _ := newKey(t)
		testkit.Expect(t, w.redeem(t, redemption(inv4, k4, "dal-four"), "ok"), http.StatusForbidden, string(problem.InvitationInvalid))
		testkit.Expect(t, w.apply(t, application("dal-four", "dee@example.org")), http.StatusCreated, "")

		// Expired: 403, the status says so, and approving again issues a new invitation.
		eid, inv5 := w.approved(t, "dal-five", "eve@example.org")
		w.clock.Add(cfg.InvitationTTL)
		k5, _ := newKey(t)
		testkit.Expect(t, w.redeem(t, redemption(inv5, k5, "dal-five"), "ok"), http.StatusForbidden, string(problem.InvitationInvalid))
		// dal-three's invitation ran out too, and dal-four's second application was never confirmed.
		if list, _, err := w.apps.List(ctx, onboarding.StateExpired, allOf("application")); err != nil || len(list) != 3 {
			t.Fatalf("expired applications: %+v %v", list, err)
		}
		_, inv6, err := w.apps.Approve(ctx, eid, "ops", "again")
		if err != nil || inv6 == inv5 {
			t.Fatalf("approve again: %v", err)
		}
		testkit.Expect(t, w.redeem(t, redemption(inv5, k5, "dal-five"), "ok"), http.StatusForbidden, string(problem.InvitationInvalid))
		testkit.Expect(t, w.redeem(t, redemption(inv6, k5, "dal-five"), "ok"), http.StatusCreated, "")
	})
}

// privateKeyBodies are redemptions carrying the private key of priv in every form svc refuses.
func privateKeyBodies(t testing.TB, invitation, key string, priv ed25519.PrivateKey) map[string]string {
	t.Helper()
	der, err := x509.MarshalPKCS8PrivateKey(priv)
	if err != nil {
		t.Fatal(err)
	}
	pkcs8 := string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}))
	block, err := ssh.MarshalPrivateKey(priv, "")
	if err != nil {
		t.Fatal(err)
	}
	openssh := string(pem.EncodeToMemory(block))
	jwk := fmt.Sprintf(`{"kty":"OKP","crv":"Ed25519","x":%q,"d":%q}`,
		base64.RawURLEncoding.EncodeToString(priv.Public().(ed25519.PublicKey)), base64.RawURLEncoding.EncodeToString(priv.Seed()))
	quote := func(s string) string { b, _ := json.Marshal(s); return string(b) }
	return map[string]string{
		"seed and key in public_key":    redemption(invitation, base64.StdEncoding.EncodeToString(priv), "dal-bot"),
		"seed and key in hex":           redemption(invitation, hex.EncodeToString(priv), "dal-bot"),
		"PKCS #8 PEM in public_key":     redemption(invitation, pkcs8, "dal-bot"),
		"PKCS #8 DER in public_key":     redemption(invitation, base64.StdEncoding.EncodeToString(der), "dal-bot"),
		"OpenSSH in invitation":         redemption(openssh, key, "dal-bot"),
		"JWK text in public_key":        redemption(invitation, jwk, "dal-bot"),
		"JWK object as public_key":      fmt.Sprintf(`{"invitation":%q,"public_key":%s,"handle":"dal-bot"}`, invitation, jwk),
		"PEM in an extra member":        fmt.Sprintf(`{"invitation":%q,"public_key":%q,"handle":"dal-bot","note":%s}`, invitation, key, quote(pkcs8)),
		"PEM in a body that is no JSON": "private key follows\n" + pkcs8,
		"seed and key hidden by a duplicate member": fmt.Sprintf(`{"invitation":%q,"public_key":%q,"public_key":%q,"handle":"dal-bot"}`,
			invitation, base64.StdEncoding.EncodeToString(priv), key),
		"JWK object hidden by a duplicate member": fmt.Sprintf(`{"invitation":%q,"public_key":%s,"public_key":%q,"handle":"dal-bot"}`, invitation, jwk, key),
	}
}

// TestMailOverSMTP: with a mail server, each message is sent by its job and its body erased, the
// invitation's sending shows on the status; a server that refuses is retried, then given up.
func TestMailOverSMTP(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, dialect string) {
		t.Parallel()
		s := mailsink.Start(t)
		cfg := onboarding.DefaultConfig()
		cfg.SMTPURL = s.URL()
		cfg.MailFrom = "svc <noreply@svc.test>"
		w := newWorld(t, dialect, cfg)
		r := w.apply(t, application("dal-bot", "ana@example.org"))
		testkit.Expect(t, r, http.StatusCreated, "")
		statusURL := r.JSON(t)["status_url"].(string)
		for _, err := range w.sendAll(t, 1) {
			if err != nil {
				t.Fatal(err)
			}
		}
		got := s.Messages()
		if len(got) != 1 || got[0].To != "ana@example.org" || got[0].From != "noreply@svc.test" || got[0].Subject != "Confirm your address for your svc application" || got[0].Err != nil {
			t.Fatalf("received %+v", got)
		}
		confirm := mustMatch(t, confirmLink, got[0].Text)
		m := w.lastMail(t, onboarding.MailConfirm, "ana@example.org")
		if m.State != onboarding.MailSent || m.Body != "" || m.SentAt == nil {
			t.Fatalf("sent mail: %+v", m)
		}
		// Sending again (a job run twice) sends nothing more.
		w.sendAll(t, 2)
		if len(s.Messages()) != 1 {
			t.Fatal("a sent message was sent again")
		}
		if _, err := w.apps.Confirm(context.Background(), strings.TrimPrefix(confirm, onboarding.ConfirmPath)); err != nil {
			t.Fatal(err)
		}
		app := w.only(t)
		if _, _, err := w.apps.Approve(context.Background(), app.ApplicationID, "ops", ""); err != nil {
			t.Fatal(err)
		}
		statusPath := strings.Replace(strings.TrimPrefix(statusURL, baseURL), "/onboarding/status/", onboarding.APIPrefix+"/status/", 1)
		if st := w.do(t, http.MethodGet, statusPath, "", "", nil).JSON(t); st["status"] != "approved" || st["invitation_sent_at"] != nil {
			t.Fatalf("status before the invitation went out: %v", st)
		}
		w.sendAll(t, 1)
		got = s.Messages()
		if len(got) != 2 || !invitationText.MatchString(got[1].Text) {
			t.Fatalf("invitation mail: %+v", got)
		}
		if st := w.do(t, http.MethodGet, statusPath, "", "", nil).JSON(t); st["invitation_sent_at"] == nil || strings.Contains(fmt.Sprint(st), "svcinv_") {
			t.Fatalf("status after the invitation went out: %v", st)
		}

		// A server that refuses: the attempt fails and is recorded; the last attempt gives up.
		s.Refuse(true)
		testkit.Expect(t, w.apply(t, application("dal-two", "ben@example.org")), http.StatusCreated, "")
		var rows []testkit.JobRow
		w.db.Order("id desc").Limit(1).Find(&rows)
		job, _ := testkit.Job[onboarding.SendArgs](rows[0], 1)
		if err := w.sender.Work(context.Background(), job); err == nil {
			t.Fatal("a refused message reported sent")
		}
		if m := w.mailTo(t, "ben@example.org"); m.State != onboarding.MailQueued || m.Attempts != 1 || m.LastError == nil || m.Body != "" {
			t.Fatalf("after a failed attempt (a queued body is never listed): %+v", m)
		}
		job, _ = testkit.Job[onboarding.SendArgs](rows[0], cfg.MailAttempts)
		_ = w.sender.Work(context.Background(), job)
		if m := w.mailTo(t, "ben@example.org"); m.State != onboarding.MailFailed || m.Body != "" {
			t.Fatalf("after the last attempt: %+v", m)
		}
	})
}

// TestLifecycle: an unconfirmed application expires and frees its handle; a rejection cancels an
// invitation that has not gone out; an invitation that never went out can be issued again; one
// address receives a bounded number of applications; and the serving replica, not the process that
// queued a message, decides whether it is sent or kept in the outbox.
func TestLifecycle(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, dialect string) {
		t.Parallel()
		w, s, cfg := newMailWorld(t, dialect)
		ctx := context.Background()

		// Unconfirmed past --onboarding-confirm-ttl: expired, its link dead, its handle free.
		r := w.apply(t, application("late-bot", "late@example.org"))
		testkit.Expect(t, r, http.StatusCreated, "")
		w.sendAll(t, 1)
		confirm := mustMatch(t, confirmLink, s.Messages()[0].Text)
		w.clock.Add(cfg.ConfirmTTL)
		b := &browser{w: w}
		if page, _ := b.get(t, confirm); page.Status != http.StatusNotFound || !strings.Contains(string(page.Body), "expired") {
			t.Fatalf("an expired confirmation link: %d %s", page.Status, testkit.Short(page.Body))
		}
		if _, err := w.apps.Confirm(ctx, strings.TrimPrefix(confirm, onboarding.ConfirmPath)); !isProblem(err, problem.NotFound) {
			t.Fatalf("confirming too late: %v", err)
		}
		testkit.Expect(t, w.apply(t, application("late-bot", "late2@example.org")), http.StatusCreated, "")

		// A rejection cancels the invitation mail still queued: nothing goes out.
		id, _ := w.approvedQueued(t, s, "gone-bot", "gone@example.org")
		if _, err := w.apps.Reject(ctx, id, "ops", "no"); err != nil {
			t.Fatal(err)
		}
		before := len(s.Messages())
		w.sendAll(t, 1)
		if len(s.Messages()) != before {
			t.Fatal("a rejected application's invitation was sent")
		}
		if m := w.mailTo(t, "gone@example.org"); m.State != onboarding.MailCancelled || m.Body != "" {
			t.Fatalf("the cancelled invitation: %+v", m)
		}

		// An invitation that never went out (its mail failed) can be issued again; the first stops
		// working. Once one was sent, approving again waits for it to expire.
		id, first := w.approvedQueued(t, s, "retry-bot", "retry@example.org")
		s.Refuse(true)
		var rows []testkit.JobRow
		w.db.Order("id desc").Limit(1).Find(&rows)
		job, _ := testkit.Job[onboarding.SendArgs](rows[0], cfg.MailAttempts)
		_ = w.sender.Work(ctx, job)
		s.Refuse(false)
		_, second, err := w.apps.Approve(ctx, id, "ops", "the mail failed")
		if err != nil || second == first {
			t.Fatalf("approve again after a failed mail: %v", err)
		}
		w.sendAll(t, 1)
		if got := s.Messages(); !strings.Contains(got[len(got)-1].Text, second) {
			t.Fatalf("the new invitation was not sent: %+v", got[len(got)-1])
		}
		k, _ := newKey(t)
		testkit.Expect(t, w.redeem(t, redemption(first, k, "retry-bot"), "ok"), http.StatusForbidden, string(problem.InvitationInvalid))
		if _, _, err := w.apps.Approve(ctx, id, "ops", "again"); !isProblem(err, problem.Conflict) {
			t.Fatalf("approving while a sent invitation is valid: %v", err)
		}
		testkit.Expect(t, w.redeem(t, redemption(second, k, "retry-bot"), "ok"), http.StatusCreated, "")

		// One recipient: at most --onboarding-recipient-limit applications per window.
		for i := range cfg.RecipientLimit {
			testkit.Expect(t, w.apply(t, application(fmt.Sprintf("flood-%d", i), "Victim@example.org")), http.StatusCreated, "")
		}
		testkit.Expect(t, w.apply(t, application("flood-x", "victim@example.org")), http.StatusTooManyRequests, string(problem.RateLimited))

		// A message queued by a process with SMTP settings (an operator's shell) is kept in the outbox
		// by a server without them, with its body for the operator.
		plain := onboarding.DefaultConfig()
		plain.MailFrom = "noreply@svc.test"
		server := onboarding.NewSender(w.db, plain, w.clock, slog.New(slog.DiscardHandler), w.deploy, w.releases)
		testkit.Expect(t, w.apply(t, application("outbox-bot", "out@example.org")), http.StatusCreated, "")
		w.db.Order("id desc").Limit(1).Find(&rows)
		job, _ = testkit.Job[onboarding.SendArgs](rows[0], 1)
		if err := server.Work(ctx, job); err != nil {
			t.Fatal(err)
		}
		if m := w.mailTo(t, "out@example.org"); m.State != onboarding.MailOutbox || !confirmLink.MatchString(m.Body) {
			t.Fatalf("a message on a server without SMTP: %+v", m)
		}
	})
}

// approvedQueued applies, confirms (from the received mail) and approves an application with SMTP
// configured, without sending its invitation yet, and returns its id and invitation.
func (w *world) approvedQueued(t testing.TB, s *mailsink.Sink, handle, email string) (string, string) {
	t.Helper()
	r := w.apply(t, application(handle, email))
	testkit.Expect(t, r, http.StatusCreated, "")
	id := r.JSON(t)["application_id"].(string)
	w.sendAll(t, 1)
	var link string
	for _, m := range s.Messages() {
		if m.To == email {
			link = mustMatch(t, confirmLink, m.Text)
		}
	}
	if _, err := w.apps.Confirm(context.Background(), strings.TrimPrefix(link, onboarding.ConfirmPath)); err != nil {
		t.Fatal(err)
	}
	_, invitation, err := w.apps.Approve(context.Background(), id, "ops", "")
	if err != nil {
		t.Fatal(err)
	}
	return id, invitation
}
