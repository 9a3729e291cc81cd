package host

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/svcforum/svc/database/dbtest"
	"github.com/svcforum/svc/modules/onboarding"
	"github.com/svcforum/svc/modules/sigv1"
)

// Owners on the assembled service (WIRE.md section 11, issue 14), on both databases: an agent the
// operator registered asks to be linked to its owner's address; the owner signs in through the link
// mailed over SMTP, confirms the link and writes a personality draft, all in Chromium; the agent reads
// the draft with a signed request, acknowledges exactly its hash, and nothing of it is left in the
// database. The owner-link answer is the same bytes whether or not the address has an account.

var (
	signInLinkInMail = regexp.MustCompile(regexp.QuoteMeta(discoveryBase) + `/owner/sign-in/[A-Za-z0-9_-]{43}`)
	ownerLinkInMail  = regexp.MustCompile(regexp.QuoteMeta(discoveryBase) + `/owner/links/[A-Za-z0-9_-]{43}`)
)

func TestOwnerLinkAndPersonalityDraft(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, dialect string) {
		s := startOnboarding(t, dialect, nil)
		email := "owner-" + dialect + "@example.org"
		early := provision(t, s.env, "early-"+dialect)
		agent := provision(t, s.env, "lentil-"+dialect)
		link := func(id identity, key, address string) response {
			return signedWrite(t, id, http.MethodPost, s.edge, "/owner-links", key, `{"email":"`+address+`"}`)
		}

		// Before the address has an account: 202, and nothing is sent.
		before := link(early, "link-early", email)
		decodeBody(t, before, http.StatusAccepted, "owner-link-requested")
		checkProblem(t, signedWrite(t, early, http.MethodPost, s.edge, "/owner-links", "link-bad", `{"email":"not an address"}`), http.StatusUnprocessableEntity, "validation_failed")

		root := chromium(t, s.run.listeners.Addr(ListenerPublic))
		ctx, cancel := context.WithTimeout(root, 3*time.Minute)
		defer cancel()

		ok := t.Run("sign in with a mailed link in Chromium", func(t *testing.T) {
			if err := chromedp.Do(ctx,
				chromedp.Navigate(discoveryBase+"/owner"),
				chromedp.WaitVisible(chromedp.ID("email")),
				chromedp.SendKeys(chromedp.ID("email"), strings.ToUpper(email[:1])+email[1:]),
			); err != nil {
				t.Fatalf("sign-in form: %v\n%s", err, pageText(ctx))
			}
			res, err := chromedp.RunResponse(ctx, chromedp.Click(chromedp.CSS(`form[action="/owner/sign-in"] button[type="submit"]`)))
			if err != nil || res.Status != http.StatusOK || !strings.Contains(pageText(ctx), "a sign-in link is on its way") {
				t.Fatalf("asking for a link: %v %v\n%s", err, res, pageText(ctx))
			}
			signIn := mustFind(t, signInLinkInMail, s.sink.Wait(t, email, "sign-in link", time.Minute).Text)
			button := `form[action^="/owner/sign-in/"] button[type="submit"]`
			if err := chromedp.Do(ctx, chromedp.Navigate(signIn), chromedp.WaitVisible(chromedp.CSS(button))); err != nil {
				t.Fatalf("sign-in link: %v\n%s", err, pageText(ctx))
			}
			if _, err := chromedp.RunResponse(ctx, chromedp.Click(chromedp.CSS(button))); err != nil {
				t.Fatalf("signing in: %v\n%s", err, pageText(ctx))
			}
			if text := pageText(ctx); !strings.Contains(text, "Signed in as "+email) || !strings.Contains(text, "No agent is linked to you yet") {
				t.Fatalf("after signing in:\n%s", text)
			}
			// The link worked once.
			if page, _ := newFormBrowser(t, s).get(t, signIn); page.status != http.StatusNotFound {
				t.Fatalf("the used sign-in link: %d", page.status)
			}
		})
		if !ok {
			return
		}

		ok = t.Run("the owner-link answer does not tell whether the address has an account", func(t *testing.T) {
			after := link(agent, "link-lentil", email)
			decodeBody(t, after, http.StatusAccepted, "owner-link-requested")
			if string(after.body) != string(before.body) {
				t.Fatalf("answers differ:\n%s\n%s", before.body, after.body)
			}
		})
		if !ok {
			return
		}

		ok = t.Run("confirm the link in Chromium", func(t *testing.T) {
			m := s.sink.Wait(t, email, "asks to be linked", time.Minute)
			if !strings.Contains(m.Text, "lentil-"+dialect) || strings.Contains(m.Text, "early-"+dialect) {
				t.Fatalf("the link mail: %q", m.Text)
			}
			confirm := mustFind(t, ownerLinkInMail, m.Text)
			button := `form[action^="/owner/links/"] button[type="submit"]`
			if err := chromedp.Do(ctx, chromedp.Navigate(confirm), chromedp.WaitVisible(chromedp.CSS(button))); err != nil {
				t.Fatalf("link page: %v\n%s", err, pageText(ctx))
			}
			if _, err := chromedp.RunResponse(ctx, chromedp.Click(chromedp.CSS(button))); err != nil {
				t.Fatalf("confirming: %v\n%s", err, pageText(ctx))
			}
			if text := pageText(ctx); !strings.Contains(text, "is linked to you") {
				t.Fatalf("after confirming:\n%s", text)
			}
			checkProblem(t, link(agent, "link-lentil-again", email), http.StatusConflict, "owner_already_linked")
			if got := admin(t, s.env, "owner", "show", "--agent", agent.agentID)["owner_email"]; got != email {
				t.Fatalf("svc admin owner show: %v", got)
			}
		})
		if !ok {
			return
		}

		draft := "Be brief and kind.\nCite the recipe you cook from."
		ok = t.Run("write a draft in Chromium", func(t *testing.T) {
			area := `textarea[name="content"]`
			if err := chromedp.Do(ctx,
				chromedp.Navigate(discoveryBase+"/owner"),
				chromedp.WaitVisible(chromedp.CSS(area)),
				chromedp.SendKeys(chromedp.CSS(area), draft),
			); err != nil {
				t.Fatalf("owner page: %v\n%s", err, pageText(ctx))
			}
			if _, err := chromedp.RunResponse(ctx, chromedp.Click(chromedp.CSS(`form[action="/owner/drafts"] button[type="submit"]`))); err != nil {
				t.Fatalf("saving the draft: %v\n%s", err, pageText(ctx))
			}
			sum := sha256.Sum256([]byte(draft))
			if text := pageText(ctx); !strings.Contains(text, "The draft is saved") || !strings.Contains(text, hex.EncodeToString(sum[:])) || !strings.Contains(text, "waiting") {
				t.Fatalf("after saving:\n%s", text)
			}
		})
		if !ok {
			return
		}

		t.Run("the agent reads and acknowledges it", func(t *testing.T) {
			checkDraft := func(id identity) map[string]any {
				got := decodeBody(t, signedGet(t, id, s.edge, "/personality-draft"), http.StatusOK, "personality-draft-response")
				d, _ := got["draft"].(map[string]any)
				return d
			}
			if d := checkDraft(early); d != nil {
				t.Fatalf("another agent reads the draft: %v", d)
			}
			d := checkDraft(agent)
			sum := sha256.Sum256([]byte(draft))
			if d == nil || d["content"] != draft || d["content_sha256"] != hex.EncodeToString(sum[:]) {
				t.Fatalf("the draft as read: %v", d)
			}
			db := openDB(t, s.cfg.DatabaseURL)
			var stored []byte
			if err := db.Raw(`SELECT ciphertext FROM onboarding_drafts WHERE id = ?`, d["draft_id"]).Row().Scan(&stored); err != nil || len(stored) == 0 || strings.Contains(string(stored), "Be brief") {
				t.Fatalf("the stored draft: %v %q", err, stored)
			}
			ack := `{"draft_id":"` + d["draft_id"].(string) + `","content_sha256":"` + d["content_sha256"].(string) + `"}`
			wrong := `{"draft_id":"` + d["draft_id"].(string) + `","content_sha256":"` + strings.Repeat("0", 64) + `"}`
			checkProblem(t, signedWrite(t, agent, http.MethodPost, s.edge, "/personality-draft/acknowledge", "ack-wrong", wrong), http.StatusConflict, "draft_mismatch")
			checkProblem(t, signedWrite(t, early, http.MethodPost, s.edge, "/personality-draft/acknowledge", "ack-other", ack), http.StatusConflict, "draft_mismatch")
			out := decodeBody(t, signedWrite(t, agent, http.MethodPost, s.edge, "/personality-draft/acknowledge", "ack-1", ack), http.StatusOK, "personality-draft-outcome")
			if out["state"] != "acknowledged" || out["draft_id"] != d["draft_id"] {
				t.Fatalf("acknowledged: %v", out)
			}
			if d := checkDraft(agent); d != nil {
				t.Fatalf("a second read finds %v", d)
			}
			var left int64
			if err := db.Raw(`SELECT COUNT(*) FROM onboarding_drafts WHERE ciphertext IS NOT NULL`).Row().Scan(&left); err != nil || left != 0 {
				t.Fatalf("%d ciphertexts left in the database (%v)", left, err)
			}
			// The owner's page says it was acknowledged.
			if err := chromedp.Do(ctx, chromedp.Navigate(discoveryBase+"/owner"), chromedp.WaitVisible(chromedp.CSS(".draft-state"))); err != nil {
				t.Fatalf("owner page: %v", err)
			}
			if state, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(".draft-state"))); err != nil || state != "acknowledged" {
				t.Fatalf("the owner's page says %q (%v)", state, err)
			}
			// Signing out ends the session.
			if _, err := chromedp.RunResponse(ctx, chromedp.Click(chromedp.CSS(`form[action="/owner/sign-out"] button`))); err != nil {
				t.Fatalf("signing out: %v", err)
			}
			if text := pageText(ctx); !strings.Contains(text, "Send me a sign-in link") {
				t.Fatalf("after signing out:\n%s", text)
			}
		})
	})
}

// TestOwnerLinkTakesItsAdmission: an owner link is one planned write whose first step is the guard's
// admission (database.Write), on both databases. Its Idempotency-Key answers the stored
// response; a link refused by a start limit (429) has used its nonce, frees its key and counts
// nothing: the limits and the link roll back with the write, so the agent's own limit (5) counts the
// accepted links only.
func TestOwnerLinkTakesItsAdmission(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, dialect string) {
		fb := newServiceBench(t, dbtest.URL(t, dialect))
		link := func(key, email string) *httptest.ResponseRecorder {
			return fb.post(t, onboarding.OwnerLinksPath, key, `{"email":"`+email+`"}`)
		}
		accepted := func(rec *httptest.ResponseRecorder) {
			t.Helper()
			if rec.Code != http.StatusAccepted || rec.Header().Get(sigv1.HeaderReplayed) != "" {
				t.Fatalf("%d (replayed %q) %s, want 202", rec.Code, rec.Header().Get(sigv1.HeaderReplayed), rec.Body)
			}
			validatePublished(t, "owner-link-requested", rec.Body.Bytes())
		}
		refused := func(rec *httptest.ResponseRecorder, status int, code string) {
			t.Helper()
			var p struct {
				Code string `json:"code"`
			}
			if rec.Code != status || json.Unmarshal(rec.Body.Bytes(), &p) != nil || p.Code != code {
				t.Fatalf("%d %s, want %d %s", rec.Code, rec.Body, status, code)
			}
		}

		first := link("link-a", "a@example.org")
		accepted(first)
		again := link("link-a", "a@example.org")
		if again.Code != http.StatusAccepted || again.Header().Get(sigv1.HeaderReplayed) != "true" || !bytes.Equal(again.Body.Bytes(), first.Body.Bytes()) {
			t.Fatalf("the key again: %d (replayed %q) %s", again.Code, again.Header().Get(sigv1.HeaderReplayed), again.Body)
		}
		accepted(link("link-a2", "a@example.org"))
		accepted(link("link-a3", "a@example.org"))

		// The address's limit (3): refused, and the very request sent again is a replayed nonce.
		req := fb.request(t, onboarding.OwnerLinksPath, "link-a4", `{"email":"a@example.org"}`)
		body, _ := io.ReadAll(req.Body)
		send := func() *httptest.ResponseRecorder {
			r := req.Clone(req.Context())
			r.Body = io.NopCloser(bytes.NewReader(body))
			rec := httptest.NewRecorder()
			fb.agent.ServeHTTP(rec, r)
			return rec
		}
		refused(send(), http.StatusTooManyRequests, "rate_limited")
		refused(send(), http.StatusConflict, "nonce_replayed")
		refused(link("link-a4", "a@example.org"), http.StatusTooManyRequests, "rate_limited") // the key was freed

		// The agent's limit (5) counted the three accepted links only.
		accepted(link("link-b", "b@example.org"))
		accepted(link("link-c", "c@example.org"))
		refused(link("link-d", "d@example.org"), http.StatusTooManyRequests, "rate_limited")
		var links int64
		if err := fb.db.Table("onboarding_owner_links").Where("agent_id = ?", fb.agentID).Count(&links).Error; err != nil || links != 5 {
			t.Fatalf("%d links stored (%v), want 5", links, err)
		}
	})
}
