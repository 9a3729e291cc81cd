//go:build linux

package host

import (
	"context"
	"fmt"
	"maps"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/svcforum/svc/contracts/plugin"
	"github.com/svcforum/svc/sdk"
	"github.com/svcforum/svc/sdk/signer"
)

// An owner's first hour (issue 32), on a deployment as make run starts it (SQLite, the pricing and the
// categories seeded, a welcome grant for organisations made by onboarding): a person applies in
// Chromium and confirms the address with the mailed link; the operator approves from a shell without
// the server's base URL; the invitation mail's commands, run as written, install the connector from
// the service and set the agent up; the agent's first post is paid by the welcome grant alone; and
// the owner, signed in in Chromium, sees the balance and the post, pauses and resumes the agent, and
// revokes the key it signs with.
func TestOwnersFirstHour(t *testing.T) {
	b := buildConnector(t)
	s := startConnectorService(t, b.releaseDir)
	handle, email := "first-hour", "first-hour@example.org"

	root := chromium(t, s.run.listeners.Addr(ListenerPublic))
	ctx, cancel := context.WithTimeout(root, 8*time.Minute)
	defer cancel()
	tab := chromeTab{t: t, ctx: ctx}
	click, open := tab.click, tab.open

	// 1. The person applies at /onboarding and confirms the address with the mailed link.
	if st := open("the form", s.base+"/onboarding"); st != http.StatusOK {
		t.Fatalf("the form: %d\n%s", st, pageText(ctx))
	}
	if err := chromedp.Do(ctx,
		chromedp.WaitVisible(chromedp.ID("handle")),
		chromedp.SendKeys(chromedp.ID("handle"), handle),
		chromedp.SendKeys(chromedp.ID("organisation_name"), "Lentil Lab"),
		chromedp.SendKeys(chromedp.ID("email"), email),
		chromedp.Click(chromedp.CSS(`input[name="setup_scope"][value="forum"]`)),
		chromedp.SendKeys(chromedp.ID("intended_use"), "Answer questions about dal."),
	); err != nil {
		t.Fatalf("filling the form: %v\n%s", err, pageText(ctx))
	}
	if st := click("sending the form", `form[action="/onboarding"] button[type="submit"]`); st != http.StatusOK {
		t.Fatalf("sending the form: %d\n%s", st, pageText(ctx))
	}
	confirm := confirmPath.FindString(s.sink.Wait(t, email, "Confirm your address", time.Minute).Text)
	if confirm == "" {
		t.Fatal("the confirmation mail has no link")
	}
	confirmButton := `form[action="` + confirm + `"] button[type="submit"]`
	if err := chromedp.Do(ctx, chromedp.Navigate(s.base+confirm), chromedp.WaitVisible(chromedp.CSS(confirmButton))); err != nil {
		t.Fatalf("the confirmation page: %v\n%s", err, pageText(ctx))
	}
	if st := click("confirming the address", confirmButton); st != http.StatusOK || !strings.Contains(pageText(ctx), "your address is confirmed") {
		t.Fatalf("confirming the address: %d\n%s", st, pageText(ctx))
	}

	// The operator approves from a shell without the server's base URL.
	shell := maps.Clone(s.env)
	delete(shell, "SVC_BASE_URL")
	pending := admin(t, shell, "application", "list", "--status", "pending")["applications"].([]any)
	if len(pending) != 1 || pending[0].(map[string]any)["handle"] != handle || pending[0].(map[string]any)["email_confirmed"] != true {
		t.Fatalf("pending applications: %v", pending)
	}
	text := s.approvedMail(t, shell, pending[0].(map[string]any)["application_id"].(string), email)

	// 2. The invitation mail's commands, as written.
	m := runInvitationMail(t, b, text, handle)

	// 3. The agent's first post, signed with the profile's key, paid by the welcome grant alone.
	loaded, _, err := sdk.LoadIdentity(m.profileDir)
	if err != nil {
		t.Fatal(err)
	}
	agent := identity{orgID: loaded.OrgID, agentID: loaded.AgentID, keyID: loaded.KeyID, key: loaded.PrivateKey,
		signer: signer.New(loaded.AgentID, loaded.KeyID, loaded.PrivateKey)}
	edge, ok := strings.CutSuffix(loaded.AgentAPI, plugin.AgentPrefix)
	if !ok {
		t.Fatalf("the profile's agent plane %q", loaded.AgentAPI)
	}
	general := decodeBody(t, do(t, http.MethodGet, s.base+"/api/v1/categories/general/threads", nil), http.StatusOK, "")
	category, _ := general["category"].(map[string]any)
	categoryID, _ := category["id"].(string)
	if categoryID == "" {
		t.Fatalf("the seeded category general: %v", general)
	}
	const title = "Tempering spices for dal"
	threadID := decodeBody(t, forumPost(t, agent, edge, "/threads", "first-post", fmt.Sprintf(`{"category_id":%q,"title":%q,"body_markdown":"Cumin first, then garlic.",%s}`,
		categoryID, title, billing10)), http.StatusOK, "created-thread-response")["thread_id"].(string)

	n := 0
	write := func() response {
		n++
		return forumPost(t, agent, edge, "/replies", fmt.Sprintf("w-%d", n), fmt.Sprintf(`{"thread_id":%q,"body_markdown":"Take %d.",%s}`, threadID, n, billing10))
	}
	// await sends writes until one gets status (a change is in force within the guard's in-force
	// delay), and fails the test past a minute.
	await := func(status int, code string) {
		t.Helper()
		deadline := time.Now().Add(time.Minute)
		for {
			res := write()
			if res.status == status {
				if code != "" {
					checkProblem(t, res, status, code)
				}
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("writes still answer %d %s, want %d %s", res.status, res.body, status, code)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}

	// 4. The owner signs in, sees the balance and the post, pauses, resumes and revokes.
	signInInChromium(t, ctx, s.base, s.sink, email)
	open("owner page", s.base+"/owner")
	page := pageText(ctx)
	const threadPrice = 10 // create_thread in the seeded pricing (modules/billing/examples/pricing.json)
	for _, want := range []string{fmt.Sprintf("Balance: %d credits", starterCredits-threadPrice), title, "Active", agent.keyID} {
		if !strings.Contains(page, want) {
			t.Fatalf("the owner's page lacks %q:\n%s", want, page)
		}
	}

	open("pause page", s.base+"/owner/agents/"+agent.agentID+"/pause")
	click("pausing", `form[action$="/pause"] button[type="submit"]`)
	if page := pageText(ctx); !strings.Contains(page, "are paused") {
		t.Fatalf("after pausing:\n%s", page)
	}
	await(http.StatusForbidden, "agent_paused")

	open("resume page", s.base+"/owner/agents/"+agent.agentID+"/resume")
	click("resuming", `form[action$="/resume"] button[type="submit"]`)
	if page := pageText(ctx); !strings.Contains(page, "are resumed") {
		t.Fatalf("after resuming:\n%s", page)
	}
	await(http.StatusOK, "")

	open("revoke page", s.base+"/owner/agents/"+agent.agentID+"/keys/"+agent.keyID+"/revoke")
	click("revoking", `form[action$="/revoke"] button[type="submit"]`)
	if page := pageText(ctx); !strings.Contains(page, "is revoked") {
		t.Fatalf("after revoking:\n%s", page)
	}
	await(http.StatusForbidden, "key_revoked")
}
