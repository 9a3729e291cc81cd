package host

import (
	"context"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/svcforum/svc/database/dbtest"
	"github.com/svcforum/svc/sdk/signer"
	"github.com/svcforum/svc/testkit/mailsink"
)

// The owner sees and steers (issue 32), on both databases, in Chromium: the signed-in owner's page
// shows the agent's public page, its posts, its organisation's balance and ledger, and its keys; the
// owner pauses the agent (its signed writes are refused 403 agent_paused, its reads go on), resumes
// it, and revokes one of its keys (a write signed with it is refused 403 key_revoked, one signed with
// the other key goes through), each confirmed on its own page and recorded in the audit log. Another
// agent's id, or another agent's key id, answers 404; a form without its CSRF token is refused. Then
// the owner reports a reply from the forum's thread page, where only a signed-in owner sees report
// links, and the operator's list shows the report as from a person.
func TestOwnerSeesAndSteers(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, dialect string) {
		s := startOnboarding(t, dialect, nil)
		email := "steer-" + dialect + "@example.org"
		agent := provision(t, s.env, "steer-"+dialect)
		second := addKey(t, s.env, agent, "second")
		stranger := provision(t, s.env, "stranger-"+dialect)
		publish(t, s.env, wirePricing)
		credit(t, s.env, agent.orgID, 200)
		credit(t, s.env, stranger.orgID, 50)
		catID := admin(t, s.env, "category", "create", "--slug", "steer-"+dialect, "--name", "Steering")["category_id"].(string)
		threadID := decodeBody(t, forumPost(t, agent, s.edge, "/threads", "t-1", fmt.Sprintf(`{"category_id":%q,"title":"Barley broth","body_markdown":"Simmer barley.",%s}`, catID, billing10)), 200, "created-thread-response")["thread_id"].(string)
		replyID := decodeBody(t, forumPost(t, stranger, s.edge, "/replies", "r-1", fmt.Sprintf(`{"thread_id":%q,"body_markdown":"Add leeks.",%s}`, threadID, billing10)), 200, "created-reply-response")["reply_id"].(string)
		n := 0
		write := func(id identity) response {
			n++
			return forumPost(t, id, s.edge, "/replies", fmt.Sprintf("w-%d", n), fmt.Sprintf(`{"thread_id":%q,"body_markdown":"Stir, take %d.",%s}`, threadID, n, billing10))
		}
		// await sends writes by id until one gets status (the change is in force on every replica
		// within the guard's in-force delay), and fails the test past a minute.
		await := func(id identity, status int, code string) {
			t.Helper()
			deadline := time.Now().Add(time.Minute)
			for {
				res := write(id)
				if res.status == status {
					if code != "" {
						checkProblem(t, res, status, code)
					}
					return
				}
				if time.Now().After(deadline) {
					t.Fatalf("writes by %s still answer %d %s, want %d %s", id.agentID, res.status, res.body, status, code)
				}
				time.Sleep(100 * time.Millisecond)
			}
		}

		root := chromium(t, s.run.listeners.Addr(ListenerPublic))
		ctx, cancel := context.WithTimeout(root, 4*time.Minute)
		defer cancel()
		signInInChromium(t, ctx, discoveryBase, s.sink, email)
		decodeBody(t, signedWrite(t, agent, http.MethodPost, s.edge, "/owner-links", "link-1", `{"email":"`+email+`"}`), http.StatusAccepted, "owner-link-requested")
		confirm := mustFind(t, ownerLinkInMail, s.sink.Wait(t, email, "asks to be linked", time.Minute).Text)
		tab := chromeTab{t: t, ctx: ctx}
		click, open := tab.click, tab.open
		open("link page", confirm)
		click("confirming the link", `form[action^="/owner/links/"] button[type="submit"]`)

		ok := t.Run("the owner sees the agent's page, posts, wallet and keys", func(t *testing.T) {
			open("owner page", discoveryBase+"/owner")
			text := pageText(ctx)
			for _, want := range []string{"Active", "Balance: 190 credits", "Its keys", agent.keyID, second.keyID, "Barley broth", "Its public page"} {
				if !strings.Contains(text, want) {
					t.Fatalf("the owner's page lacks %q:\n%s", want, text)
				}
			}
			links, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](`[...document.querySelectorAll("section.agent a")].map(a => a.getAttribute("href"))`))
			if err != nil {
				t.Fatal(err)
			}
			joined := strings.Join(links, " ")
			for _, want := range []string{"/forum/agents/steer-" + dialect, "/forum/t/" + threadID, "/owner/agents/" + agent.agentID + "/pause",
				"/owner/agents/" + agent.agentID + "/keys/" + agent.keyID + "/revoke"} {
				if !strings.Contains(joined, want) {
					t.Fatalf("no link to %s among %v", want, links)
				}
			}
			if !strings.Contains(text, "charge") {
				t.Fatalf("the ledger does not show the thread's charge:\n%s", text)
			}
		})
		if !ok {
			return
		}

		ok = t.Run("pause and resume", func(t *testing.T) {
			pausePage := discoveryBase + "/owner/agents/" + agent.agentID + "/pause"
			if st := open("pause page", pausePage); st != http.StatusOK || !strings.Contains(pageText(ctx), "403 agent_paused") {
				t.Fatalf("pause page %d:\n%s", st, pageText(ctx))
			}
			// Without its CSRF token the form is refused, and nothing is paused.
			if _, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`document.querySelector('input[name="csrf_token"]').remove(); true`)); err != nil {
				t.Fatal(err)
			}
			if st := click("pausing without a token", `form[action$="/pause"] button[type="submit"]`); st != http.StatusForbidden || !strings.Contains(pageText(ctx), "security token") {
				t.Fatalf("a pause without its token: %d\n%s", st, pageText(ctx))
			}
			write(agent) // still taken
			open("pause page", pausePage)
			click("pausing", `form[action$="/pause"] button[type="submit"]`)
			if text := pageText(ctx); !strings.Contains(text, "are paused") || !strings.Contains(text, "Paused by you") {
				t.Fatalf("after pausing:\n%s", text)
			}
			await(agent, http.StatusForbidden, "agent_paused")
			if p := checkProblem(t, write(second), http.StatusForbidden, "agent_paused"); !strings.Contains(fmt.Sprint(p["detail"]), "owner") {
				t.Fatalf("the refusal does not say who can lift it: %v", p)
			}
			decodeBody(t, signedGet(t, agent, s.edge, "/wallet"), http.StatusOK, "wallet-response") // reads go on
			decodeBody(t, write(stranger), http.StatusOK, "created-reply-response")                 // other agents write on
			if got := admin(t, s.env, "agent", "show", "--agent", agent.agentID); got["paused_by_owner"] != true || got["state"] != "active" {
				t.Fatalf("agent show: %v", got)
			}
			open("resume page", discoveryBase+"/owner/agents/"+agent.agentID+"/resume")
			click("resuming", `form[action$="/resume"] button[type="submit"]`)
			if text := pageText(ctx); !strings.Contains(text, "are resumed") {
				t.Fatalf("after resuming:\n%s", text)
			}
			await(agent, http.StatusOK, "")
		})
		if !ok {
			return
		}

		ok = t.Run("revoke a key", func(t *testing.T) {
			revoke := discoveryBase + "/owner/agents/" + agent.agentID + "/keys/" + agent.keyID + "/revoke"
			if st := open("revoke page", revoke); st != http.StatusOK || !strings.Contains(pageText(ctx), "cannot be undone") {
				t.Fatalf("revoke page %d:\n%s", st, pageText(ctx))
			}
			click("revoking", `form[action$="/revoke"] button[type="submit"]`)
			if text := pageText(ctx); !strings.Contains(text, "is revoked") {
				t.Fatalf("after revoking:\n%s", text)
			}
			await(agent, http.StatusForbidden, "key_revoked")
			decodeBody(t, write(second), http.StatusOK, "created-reply-response")
			if got := admin(t, s.env, "key", "show", "--key", agent.keyID); got["state"] != "revoked" {
				t.Fatalf("key show: %v", got)
			}
		})
		if !ok {
			return
		}

		ok = t.Run("another agent's id or key is 404", func(t *testing.T) {
			for _, u := range []string{
				"/owner/agents/" + stranger.agentID + "/pause",
				"/owner/agents/" + stranger.agentID + "/keys/" + stranger.keyID + "/revoke",
				"/owner/agents/" + agent.agentID + "/keys/" + stranger.keyID + "/revoke",
				"/owner/agents/not-an-id/resume",
			} {
				if st := open(u, discoveryBase+u); st != http.StatusNotFound {
					t.Fatalf("%s: %d\n%s", u, st, pageText(ctx))
				}
			}
			// And the POSTs, from a browser without the owner's session, do nothing.
			b := newFormBrowser(t, s)
			_, token := b.get(t, discoveryBase+"/owner")
			res := b.post(t, discoveryBase+"/owner/agents/"+stranger.agentID+"/pause", map[string][]string{"csrf_token": {token}})
			if res.status != http.StatusForbidden || !strings.Contains(string(res.body), "not signed in") {
				t.Fatalf("a pause without a session: %d %s", res.status, res.body)
			}
			decodeBody(t, write(stranger), http.StatusOK, "created-reply-response")
			db := openDB(t, s.cfg.DatabaseURL)
			if got := countRows(t, db, "onboarding_owner_actions", "agent_id = ?", agent.agentID); got != 3 {
				t.Fatalf("%d audit lines for the agent, want 3 (pause, resume, revoke_key)", got)
			}
			if got := countRows(t, db, "onboarding_owner_actions", "agent_id = ? AND action = ? AND key_id = ?", agent.agentID, "revoke_key", agent.keyID); got != 1 {
				t.Fatal("the revocation is not in the audit log")
			}
			if got := countRows(t, db, "onboarding_owner_actions", "agent_id = ?", stranger.agentID); got != 0 {
				t.Fatalf("%d audit lines for another agent", got)
			}
			open("owner page", discoveryBase+"/owner")
			if text := pageText(ctx); !strings.Contains(text, "revoked the key "+agent.keyID) || !strings.Contains(text, "paused its writes") {
				t.Fatalf("the owner's page does not show what the owner did:\n%s", text)
			}
		})
		if !ok {
			return
		}

		ok = t.Run("report a reply from the thread's page", func(t *testing.T) {
			page := discoveryBase + "/forum/t/" + threadID
			// A reader who is not signed in sees no report link, before and after an owner's visit.
			anon := do(t, http.MethodGet, s.public+"/forum/t/"+threadID, nil)
			if anon.status != http.StatusOK || strings.Contains(string(anon.body), "/owner/reports/") {
				t.Fatalf("a reader's page: %d, with a report link: %v", anon.status, strings.Contains(string(anon.body), "/owner/reports/"))
			}
			open("thread page", page)
			links, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](`[...document.querySelectorAll("p.report a")].map(a => a.getAttribute("href"))`))
			if err != nil {
				t.Fatal(err)
			}
			joined := strings.Join(links, " ")
			if !strings.Contains(joined, "/owner/reports/thread/"+threadID) || !strings.Contains(joined, "/owner/reports/reply/"+replyID) {
				t.Fatalf("the owner's thread page has report links %v", links)
			}
			if anon := do(t, http.MethodGet, s.public+"/forum/t/"+threadID, nil); strings.Contains(string(anon.body), "/owner/reports/") {
				t.Fatal("a reader gets the owner's page from the cache")
			}
			click("report link", `a[href="/owner/reports/reply/`+replyID+`"]`)
			if err := chromedp.Do(ctx,
				chromedp.Click(chromedp.CSS(`input[name="reason"][value="spam"]`)),
				chromedp.SendKeys(chromedp.ID("note"), "Advertises a shop in every reply."),
			); err != nil {
				t.Fatalf("report form: %v\n%s", err, pageText(ctx))
			}
			if st := click("reporting", `form[action^="/owner/reports/"] button[type="submit"]`); st != http.StatusOK || !strings.Contains(pageText(ctx), "in the operators' queue") {
				t.Fatalf("after reporting: %d\n%s", st, pageText(ctx))
			}
			open("report form", discoveryBase+"/owner/reports/reply/"+replyID)
			if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS(`input[name="reason"][value="abuse"]`))); err != nil {
				t.Fatalf("report form: %v", err)
			}
			if st := click("reporting again", `form[action^="/owner/reports/"] button[type="submit"]`); st != http.StatusConflict {
				t.Fatalf("a second report: %d\n%s", st, pageText(ctx))
			}
			listed := admin(t, s.env, "report", "list", "--target", replyID)["reports"].([]any)
			if len(listed) != 1 {
				t.Fatalf("reports of the reply: %v", listed)
			}
			r := listed[0].(map[string]any)
			if r["reporter_kind"] != "person" || r["reporter_owner_id"] == "" || r["reporter_agent_id"] != "" || r["reason_code"] != "spam" || r["status"] != "open" {
				t.Fatalf("the person's report: %v", r)
			}
			if code, out, stderr := runMain(t, s.env, "admin", "report", "list", "--target", replyID); code != 0 || !strings.Contains(out, "person:") {
				t.Fatalf("report list for people: exit %d\n%s%s", code, out, stderr)
			}
		})
		if !ok {
			return
		}

		// The pause is the owner's own: when the operator unlinks the owner, nobody could lift it, so
		// the unlink does.
		t.Run("unlinking the owner lifts the pause", func(t *testing.T) {
			open("pause page", discoveryBase+"/owner/agents/"+agent.agentID+"/pause")
			click("pausing", `form[action$="/pause"] button[type="submit"]`)
			await(second, http.StatusForbidden, "agent_paused")
			if got := admin(t, s.env, "owner", "unlink", "--agent", agent.agentID); got["unlinked"] != true || got["owner_pause_lifted"] != true {
				t.Fatalf("owner unlink: %v", got)
			}
			await(second, http.StatusOK, "")
			if got := admin(t, s.env, "agent", "show", "--agent", agent.agentID); got["paused_by_owner"] != false {
				t.Fatalf("agent show after the unlink: %v", got)
			}
		})
	})
}

// signInInChromium signs email in, in Chromium, on the service whose base URL is base, through the
// link mailed over SMTP to sink.
func signInInChromium(t *testing.T, ctx context.Context, base string, sink *mailsink.Sink, email string) {
	t.Helper()
	if err := chromedp.Do(ctx,
		chromedp.Navigate(base+"/owner"),
		chromedp.WaitVisible(chromedp.ID("email")),
		chromedp.SendKeys(chromedp.ID("email"), email),
	); err != nil {
		t.Fatalf("sign-in form: %v\n%s", err, pageText(ctx))
	}
	if _, err := chromedp.RunResponse(ctx, chromedp.Click(chromedp.CSS(`form[action="/owner/sign-in"] button[type="submit"]`))); err != nil {
		t.Fatalf("asking for a link: %v\n%s", err, pageText(ctx))
	}
	signIn := mustFind(t, regexp.MustCompile(regexp.QuoteMeta(base)+`/owner/sign-in/[A-Za-z0-9_-]{43}`), sink.Wait(t, email, "sign-in link", time.Minute).Text)
	button := `form[action^="/owner/sign-in/"] button[type="submit"]`
	if err := chromedp.Do(ctx, chromedp.Navigate(signIn), chromedp.WaitVisible(chromedp.CSS(button))); err != nil {
		t.Fatalf("sign-in link: %v\n%s", err, pageText(ctx))
	}
	if _, err := chromedp.RunResponse(ctx, chromedp.Click(chromedp.CSS(button))); err != nil {
		t.Fatalf("signing in: %v\n%s", err, pageText(ctx))
	}
	if text := pageText(ctx); !strings.Contains(text, "Signed in as "+email) {
		t.Fatalf("after signing in:\n%s", text)
	}
}

// addKey registers a second key, derived from label, for id's agent, and returns the identity that
// signs with it.
func addKey(t *testing.T, env map[string]string, id identity, label string) identity {
	t.Helper()
	seed := sha256.Sum256([]byte("host test key " + id.agentID + " " + label))
	key := ed25519.NewKeyFromSeed(seed[:])
	keyID := admin(t, env, "key", "add", "--agent", id.agentID, "--public-key", base64.StdEncoding.EncodeToString(key.Public().(ed25519.PublicKey)))["key_id"].(string)
	return identity{orgID: id.orgID, agentID: id.agentID, keyID: keyID, key: key, signer: signer.New(id.agentID, keyID, key)}
}

// chromeTab is a Chromium tab as the owner's tests drive it: open a link or click a selector, each
// answering the response's status and failing t, with the page's text, when the step itself fails.
type chromeTab struct {
	t   *testing.T
	ctx context.Context
}

func (b chromeTab) click(what, sel string) int64 {
	b.t.Helper()
	res, err := chromedp.RunResponse(b.ctx, chromedp.Click(chromedp.CSS(sel)))
	if err != nil {
		b.t.Fatalf("%s: %v\n%s", what, err, pageText(b.ctx))
	}
	return res.Status
}

func (b chromeTab) open(what, link string) int64 {
	b.t.Helper()
	res, err := chromedp.RunResponse(b.ctx, chromedp.Navigate(link))
	if err != nil {
		b.t.Fatalf("%s: %v\n%s", what, err, pageText(b.ctx))
	}
	return res.Status
}
