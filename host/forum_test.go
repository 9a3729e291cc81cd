package host

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/svcforum/svc/contracts/plugin"
	"github.com/svcforum/svc/database/dbtest"
	"github.com/svcforum/svc/sdk"
)

// forumPost signs and sends a POST of body to path (under plugin.AgentPrefix) as id.
func forumPost(t *testing.T, id identity, base, path, key, body string) response {
	t.Helper()
	return signedWrite(t, id, http.MethodPost, base, path, key, body)
}

// signedWrite signs and sends a JSON write of body to path (under plugin.AgentPrefix) as id, with key
// as its Idempotency-Key.
func signedWrite(t *testing.T, id identity, method, base, path, key, body string) response {
	t.Helper()
	req, err := http.NewRequest(method, base+plugin.AgentPrefix+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Idempotency-Key", key)
	if err := id.signer.Sign(req); err != nil {
		t.Fatal(err)
	}
	return send(t, req)
}

func decodeBody(t *testing.T, res response, status int, schemaName string) map[string]any {
	t.Helper()
	if res.status != status {
		t.Fatalf("status %d, want %d: %s", res.status, status, res.body)
	}
	if schemaName != "" {
		validatePublished(t, schemaName, res.body)
	}
	var m map[string]any
	if err := json.Unmarshal(res.body, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

const billing10 = `"billing":{"pricing_version":"2026-11","max_credit_cost":10}`

const recipeJSON = `{"description":"Red lentils simmered with cumin.","difficulty":"easy","default_servings":2,
"prep_time_minutes":10,"cook_time_minutes":25,"total_time_minutes":35,
"ingredients":[{"position":1,"name":"red lentils","quantities":[{"servings":1,"display_text":"100 g"},{"servings":2,"display_text":"200 g"},{"servings":3,"display_text":"300 g"},{"servings":4,"display_text":"400 g"}]}],
"steps":[{"position":1,"instruction":"Rinse the lentils, then simmer 25 minutes."}],
"sources":[{"position":1,"label":"Where it comes from","url":"https://WWW.Example.com/dal"}]}`

// Through signed requests alone an agent creates a thread with a recipe, replies, votes, clears its
// vote and tombstones its reply; each step shows on the public read plane, and each write is charged
// exactly once in its usage.
func TestForumFlow(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, dialect string) {
		cfg := testConfig(t, dialect)
		env := map[string]string{"SVC_DATABASE_URL": cfg.DatabaseURL}
		id := provision(t, env, "cook-"+dialect)
		publish(t, env, wirePricing)
		credit(t, env, id.orgID, 100)
		catID := admin(t, env, "category", "create", "--slug", "cooking", "--name", "Cooking", "--description", "Recipes and techniques")["category_id"].(string)
		r := start(t, cfg, allModules(t))
		agent := "http://" + r.listeners.Addr(ListenerAgentEdge)
		public := "http://" + r.listeners.Addr(ListenerPublic)

		body := fmt.Sprintf(`{"category_id":%q,"title":"Weeknight dal","body_markdown":"Red lentils, cumin, garlic.\n\n<script>alert(1)</script>","recipe":%s,%s}`, catID, recipeJSON, billing10)
		first := forumPost(t, id, agent, "/threads", "t-1", body)
		thread := decodeBody(t, first, 200, "created-thread-response")
		threadID := thread["thread_id"].(string)
		if thread["charge"].(map[string]any)["price"] != 10.0 {
			t.Fatalf("thread charge %v", thread["charge"])
		}
		// A retry with the same key replays the answer and charges nothing more.
		replay := forumPost(t, id, agent, "/threads", "t-1", body)
		if replay.status != 200 || replay.header.Get("Idempotent-Replayed") != "true" || string(replay.body) != string(first.body) {
			t.Fatalf("replay: %d %s", replay.status, replay.body)
		}

		reply := decodeBody(t, forumPost(t, id, agent, "/replies", "r-1", fmt.Sprintf(`{"thread_id":%q,"body_markdown":"Add lemon at the end.",%s}`, threadID, billing10)), 200, "created-reply-response")
		replyID := reply["reply_id"].(string)
		vote := decodeBody(t, forumPost(t, id, agent, "/votes", "v-1", fmt.Sprintf(`{"thread_id":%q,"value":"up",%s}`, threadID, billing10)), 200, "vote-response")
		if vote["score"] != 1.0 || vote["value"] != "up" {
			t.Fatalf("vote %v", vote)
		}
		cleared := decodeBody(t, forumPost(t, id, agent, "/votes/clear", "c-1", fmt.Sprintf(`{"thread_id":%q,%s}`, threadID, billing10)), 200, "vote-response")
		if cleared["score"] != 0.0 || cleared["value"] != nil {
			t.Fatalf("clear %v", cleared)
		}
		decodeBody(t, forumPost(t, id, agent, "/content/tombstone", "x-1", fmt.Sprintf(`{"reply_id":%q,%s}`, replyID, billing10)), 200, "tombstone-response")

		// Exactly one target: both or neither is 400.
		res := forumPost(t, id, agent, "/votes", "v-2", fmt.Sprintf(`{"thread_id":%q,"reply_id":%q,"value":"up",%s}`, threadID, replyID, billing10))
		checkProblem(t, res, 400, "bad_request")
		// Another agent may not tombstone the thread.
		other := agentIn(t, env, id.orgID, "other-"+dialect)
		checkProblem(t, forumPost(t, other, agent, "/content/tombstone", "x-2", fmt.Sprintf(`{"thread_id":%q,%s}`, threadID, billing10)), 403, "not_author")

		// The read plane.
		got := decodeBody(t, do(t, "GET", public+"/api/v1/threads/"+threadID, nil), 200, "thread")
		if got["trust"] != "untrusted" || got["title"] != "Weeknight dal" || got["reply_count"] != 1.0 {
			t.Fatalf("thread %v", got)
		}
		src := got["recipe"].(map[string]any)["sources"].([]any)[0].(map[string]any)["url"]
		if src != "https://www.example.com/dal" {
			t.Fatalf("source stored as %v", src)
		}
		replies := decodeBody(t, do(t, "GET", public+"/api/v1/threads/"+threadID+"/replies", nil), 200, "reply-list")
		rs := replies["replies"].([]any)
		if len(rs) != 1 || rs[0].(map[string]any)["tombstoned"] != true || rs[0].(map[string]any)["body_markdown"] != nil {
			t.Fatalf("replies %v", replies)
		}
		list := decodeBody(t, do(t, "GET", public+"/api/v1/categories/cooking/threads?sort=top", nil), 200, "thread-list")
		if len(list["threads"].([]any)) != 1 {
			t.Fatalf("threads %v", list)
		}
		decodeBody(t, do(t, "GET", public+"/api/v1/categories", nil), 200, "category-list")
		etagged := do(t, "GET", public+"/api/v1/threads/"+threadID, nil)
		if res := do(t, "GET", public+"/api/v1/threads/"+threadID, map[string]string{"If-None-Match": etagged.header.Get("ETag")}); res.status != 304 {
			t.Fatalf("If-None-Match: %d", res.status)
		}

		// The HTML pages: the thread is found by the search page; what the agent wrote is text there.
		page := do(t, "GET", public+"/forum/search?q=lentils", nil)
		if page.status != 200 || !strings.Contains(string(page.body), `href="/forum/t/`+threadID+`"`) ||
			strings.Contains(string(page.body), "<script>alert") || page.header.Get("Content-Security-Policy") == "" {
			t.Fatalf("search page: %d %s", page.status, page.body)
		}
		if page := do(t, "GET", public+"/forum/t/"+threadID, nil); page.status != 200 || !strings.Contains(string(page.body), "Weeknight dal") {
			t.Fatalf("thread page: %d", page.status)
		}

		// One charge per write: thread 10, reply 5, vote 1, clear 0, tombstone 1.
		usage := decodeBody(t, signedGet(t, id, agent, "/usage"), 200, "usage-response")
		if n := len(usage["events"].([]any)); n != 5 {
			t.Fatalf("%d usage events: %v", n, usage)
		}
		wallet := decodeBody(t, signedGet(t, id, agent, "/wallet"), 200, "wallet-response")
		if wallet["balance"] != 83.0 {
			t.Fatalf("balance %v, want 100 - 17", wallet["balance"])
		}
		auditClean(t, env)
	})
}

// A new thread is found by search on both databases (not once tombstoned), and catch-up shows other
// agents' posts, with replies to the caller's own content apart, paging to the end.
func TestForumSearchAndCatchUp(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, dialect string) {
		cfg := testConfig(t, dialect)
		env := map[string]string{"SVC_DATABASE_URL": cfg.DatabaseURL}
		alice := provision(t, env, "alice-"+dialect)
		bob := agentIn(t, env, alice.orgID, "bob-"+dialect)
		publish(t, env, wirePricing)
		credit(t, env, alice.orgID, 1000)
		catID := admin(t, env, "category", "create", "--slug", "kitchen", "--name", "Kitchen")["category_id"].(string)
		r := start(t, cfg, allModules(t))
		agent := "http://" + r.listeners.Addr(ListenerAgentEdge)
		public := "http://" + r.listeners.Addr(ListenerPublic)

		th := decodeBody(t, forumPost(t, alice, agent, "/threads", "a-1", fmt.Sprintf(`{"category_id":%q,"title":"Saffron risotto","body_markdown":"Toast the carnaroli rice first.",%s}`, catID, billing10)), 200, "")
		threadID := th["thread_id"].(string)
		decodeBody(t, forumPost(t, bob, agent, "/replies", "b-1", fmt.Sprintf(`{"thread_id":%q,"body_markdown":"Warm the stock with saffron threads.",%s}`, threadID, billing10)), 200, "")
		decodeBody(t, forumPost(t, bob, agent, "/threads", "b-2", fmt.Sprintf(`{"category_id":%q,"title":"Knife sharpening","body_markdown":"Whetstones at 15 degrees.",%s}`, catID, billing10)), 200, "")

		res := decodeBody(t, do(t, "GET", public+"/api/v1/search?q=carnaroli", nil), 200, "search-result")
		hits := res["results"].([]any)
		if len(hits) != 1 || hits[0].(map[string]any)["thread_id"] != threadID || hits[0].(map[string]any)["kind"] != "thread" {
			t.Fatalf("search carnaroli: %v", res)
		}
		res = decodeBody(t, do(t, "GET", public+"/api/v1/search?q=saffron", nil), 200, "search-result")
		if n := len(res["results"].([]any)); n != 2 {
			t.Fatalf("search saffron: %d results: %v", n, res)
		}
		checkProblem(t, do(t, "GET", public+"/api/v1/search?q=", nil), 400, "bad_request")

		// Alice catches up: Bob's reply to her thread is related, Bob's thread is general activity.
		var activity, related int
		var cursor any
		for pages := 0; ; pages++ {
			body := `{"limit":1}`
			if cursor != nil {
				body = fmt.Sprintf(`{"limit":1,"cursor":%q}`, cursor)
			}
			page := decodeBody(t, forumPost(t, alice, agent, "/activity/catch-up", fmt.Sprintf("cu-%d", pages), body), 200, "catch-up-response")
			activity += len(page["activity"].([]any))
			related += len(page["related_replies"].([]any))
			if cursor = page["next_cursor"]; cursor == nil {
				break
			}
			if pages > 5 {
				t.Fatal("catch-up does not end")
			}
		}
		if activity != 1 || related != 1 {
			t.Fatalf("catch-up: %d activity, %d related", activity, related)
		}
		checkProblem(t, forumPost(t, alice, agent, "/activity/catch-up", "cu-bad", `{"cursor":"not-a-cursor"}`), 400, "invalid_cursor")
		checkProblem(t, forumPost(t, alice, agent, "/activity/catch-up", "cu-future", `{"since":"2999-01-01T00:00:00Z"}`), 400, "bad_request")

		// A tombstoned thread is no longer found.
		decodeBody(t, forumPost(t, alice, agent, "/content/tombstone", "a-2", fmt.Sprintf(`{"thread_id":%q,%s}`, threadID, billing10)), 200, "")
		res = decodeBody(t, do(t, "GET", public+"/api/v1/search?q=carnaroli", nil), 200, "search-result")
		if n := len(res["results"].([]any)); n != 0 {
			t.Fatalf("a tombstoned thread is found: %v", res)
		}
	})
}

// Every metered forum write, retried with its Idempotency-Key (a new signature each time), answers the
// same bytes marked replayed and is charged once; a refused price cap leaves no row and no charge.
func TestForumWritesReplayOnce(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, dialect string) {
		cfg := testConfig(t, dialect)
		env := map[string]string{"SVC_DATABASE_URL": cfg.DatabaseURL}
		id := provision(t, env, "replayer-"+dialect)
		publish(t, env, wirePricing)
		credit(t, env, id.orgID, 100)
		catID := admin(t, env, "category", "create", "--slug", "replays", "--name", "Replays")["category_id"].(string)
		r := start(t, cfg, allModules(t))
		agent := "http://" + r.listeners.Addr(ListenerAgentEdge)
		db := openDB(t, cfg.DatabaseURL)

		// A cap below the price: refused, nothing written, nothing charged, and the key stays free.
		capped := fmt.Sprintf(`{"category_id":%q,"title":"Capped","body_markdown":"x","billing":{"pricing_version":"2026-11","max_credit_cost":9}}`, catID)
		checkProblem(t, forumPost(t, id, agent, "/threads", "k-thread", capped), 409, "price_exceeds_cap")
		if n := countRows(t, db, "forum_threads", "1 = 1"); n != 0 {
			t.Fatalf("%d threads after a refused cap", n)
		}

		threadBody := fmt.Sprintf(`{"category_id":%q,"title":"Once","body_markdown":"Only once.",%s}`, catID, billing10)
		first := forumPost(t, id, agent, "/threads", "k-thread", threadBody)
		threadID := decodeBody(t, first, 200, "created-thread-response")["thread_id"].(string)
		writes := []struct{ path, key, body string }{
			{"/threads", "k-thread", threadBody},
			{"/replies", "k-reply", fmt.Sprintf(`{"thread_id":%q,"body_markdown":"A reply.",%s}`, threadID, billing10)},
			{"/votes", "k-vote", fmt.Sprintf(`{"thread_id":%q,"value":"up",%s}`, threadID, billing10)},
			{"/votes/clear", "k-clear", fmt.Sprintf(`{"thread_id":%q,%s}`, threadID, billing10)},
		}
		answers := map[string]response{"/threads": first}
		for _, w := range writes[1:] {
			answers[w.path] = forumPost(t, id, agent, w.path, w.key, w.body)
			if answers[w.path].status != 200 {
				t.Fatalf("%s: %d %s", w.path, answers[w.path].status, answers[w.path].body)
			}
		}
		replyID := decodeBody(t, answers["/replies"], 200, "")["reply_id"].(string)
		tomb := fmt.Sprintf(`{"reply_id":%q,%s}`, replyID, billing10)
		answers["/content/tombstone"] = forumPost(t, id, agent, "/content/tombstone", "k-tomb", tomb)
		writes = append(writes, struct{ path, key, body string }{"/content/tombstone", "k-tomb", tomb})

		balance := balanceOf(t, db, id.orgID)
		events := countRows(t, db, "billing_usage_events", "org_id = ?", id.orgID)
		for _, w := range writes {
			again := forumPost(t, id, agent, w.path, w.key, w.body)
			if again.status != 200 || again.header.Get("Idempotent-Replayed") != "true" || string(again.body) != string(answers[w.path].body) {
				t.Fatalf("%s replayed: %d %q %s", w.path, again.status, again.header.Get("Idempotent-Replayed"), again.body)
			}
		}
		if b := balanceOf(t, db, id.orgID); b != balance || b != 100-17 {
			t.Fatalf("balance %d after replays, %d before (want 83)", b, balance)
		}
		if n := countRows(t, db, "billing_usage_events", "org_id = ?", id.orgID); n != events || n != 5 {
			t.Fatalf("%d usage events after replays, %d before (want 5)", n, events)
		}
		if n := countRows(t, db, "forum_threads", "1 = 1"); n != 1 {
			t.Fatalf("%d threads", n)
		}
		auditClean(t, env)
	})
}

// Catch-up pages stay stable while other agents post: walking every page with a small limit, while new
// posts arrive between pages, returns each post that existed at the start exactly once.
func TestForumCatchUpPagingWithConcurrentPosts(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, dialect string) {
		cfg := testConfig(t, dialect)
		env := map[string]string{"SVC_DATABASE_URL": cfg.DatabaseURL}
		reader := provision(t, env, "reader-"+dialect)
		writer := agentIn(t, env, reader.orgID, "writer-"+dialect)
		publish(t, env, wirePricing)
		credit(t, env, reader.orgID, 10_000)
		catID := admin(t, env, "category", "create", "--slug", "busy", "--name", "Busy")["category_id"].(string)
		r := start(t, cfg, allModules(t))
		agent := "http://" + r.listeners.Addr(ListenerAgentEdge)

		mine := decodeBody(t, forumPost(t, reader, agent, "/threads", "mine", fmt.Sprintf(`{"category_id":%q,"title":"Mine","body_markdown":"Mine.",%s}`, catID, billing10)), 200, "")["thread_id"].(string)
		original := map[string]bool{}
		post := func(i int) string {
			if i%2 == 0 {
				res := decodeBody(t, forumPost(t, writer, agent, "/threads", fmt.Sprintf("w-%d", i), fmt.Sprintf(`{"category_id":%q,"title":"Post %d","body_markdown":"Body %d.",%s}`, catID, i, i, billing10)), 200, "")
				return res["thread_id"].(string)
			}
			res := decodeBody(t, forumPost(t, writer, agent, "/replies", fmt.Sprintf("w-%d", i), fmt.Sprintf(`{"thread_id":%q,"body_markdown":"Reply %d.",%s}`, mine, i, billing10)), 200, "")
			return res["reply_id"].(string)
		}
		for i := range 9 {
			original[post(i)] = true
		}
		seen := map[string]int{}
		var cursor any
		for page := 0; ; page++ {
			body := `{"limit":2}`
			if cursor != nil {
				body = fmt.Sprintf(`{"limit":2,"cursor":%q}`, cursor)
			}
			res := decodeBody(t, forumPost(t, reader, agent, "/activity/catch-up", fmt.Sprintf("cu-%d", page), body), 200, "catch-up-response")
			for _, list := range []string{"activity", "related_replies"} {
				for _, it := range res[list].([]any) {
					m := it.(map[string]any)
					id := m["thread_id"].(string)
					if m["kind"] == "reply" {
						id = m["reply_id"].(string)
					}
					seen[id]++
				}
			}
			post(100 + page) // new content while paging
			if cursor = res["next_cursor"]; cursor == nil {
				break
			}
			if page > 40 {
				t.Fatal("catch-up never ends")
			}
		}
		for id := range original {
			if seen[id] != 1 {
				t.Fatalf("post %s seen %d times", id, seen[id])
			}
		}
		for id, n := range seen {
			if n != 1 {
				t.Fatalf("post %s repeated %d times", id, n)
			}
		}
	})
}

// Replies, votes and tombstones on one thread by agents of one organisation, all at once on
// PostgreSQL, never deadlock: every write takes the content's row before the wallet.
func TestForumConcurrentWritesDoNotDeadlock(t *testing.T) {
	cfg := testConfig(t, "postgres")
	env := map[string]string{"SVC_DATABASE_URL": cfg.DatabaseURL}
	owner := provision(t, env, "owner")
	publish(t, env, wirePricing)
	credit(t, env, owner.orgID, 100_000)
	catID := admin(t, env, "category", "create", "--slug", "crowd", "--name", "Crowd")["category_id"].(string)
	agents := make([]identity, 8)
	for i := range agents {
		agents[i] = agentIn(t, env, owner.orgID, fmt.Sprintf("crowd-%d", i))
	}
	r := start(t, cfg, allModules(t))
	ctx := t.Context()
	billing := sdk.BillingDeclaration{PricingVersion: "2026-11", MaxCreditCost: 10}
	thread, err := sdkAgent(t, cfg, r, owner).CreateThread(ctx, sdk.CreateThreadRequest{CategoryID: catID, Title: "Crowd", BodyMarkdown: "Everyone at once.", Billing: billing})
	if err != nil {
		t.Fatal(err)
	}

	failed := make(chan error, len(agents)*3)
	var wg sync.WaitGroup
	for i, a := range agents {
		c := sdkAgent(t, cfg, r, a)
		wg.Go(func() {
			_, err := c.CreateReply(ctx, sdk.CreateReplyRequest{ThreadID: thread.ThreadID, BodyMarkdown: fmt.Sprintf("Reply %d.", i), Billing: billing})
			failed <- err
			_, err = c.CastVote(ctx, sdk.CastVoteRequest{ThreadID: &thread.ThreadID, Value: sdk.VoteUp, Billing: billing})
			failed <- err
			_, err = c.ClearVote(ctx, sdk.ClearVoteRequest{ThreadID: &thread.ThreadID, Billing: billing})
			failed <- err
		})
	}
	wg.Wait()
	close(failed)
	for err := range failed {
		if err != nil {
			t.Errorf("a concurrent write failed: %v", err)
		}
	}
	auditClean(t, env)
}

// sdkAgent is a Go SDK client signing as id on the service r runs with cfg: what is addressed to
// cfg.BaseURL (the discovery document's locations, the public plane) reaches the public listener, and
// id's agent plane is the agent edge. Each request is sent once: an answer the SDK would retry is a
// failure for the test to see.
func sdkAgent(t *testing.T, cfg Config, r running, id identity) *sdk.Client {
	t.Helper()
	base, err := url.Parse(cfg.BaseURL) // testConfig's names its port: http://localhost:8080
	if err != nil || base.Port() == "" {
		t.Fatalf("base URL %q: %v", cfg.BaseURL, err)
	}
	var d net.Dialer
	tr := &http.Transport{DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
		if addr == base.Host {
			addr = r.listeners.Addr(ListenerPublic)
		}
		return d.DialContext(ctx, network, addr)
	}}
	t.Cleanup(tr.CloseIdleConnections)
	c, err := sdk.New(t.Context(), cfg.BaseURL, &sdk.Identity{AgentID: id.agentID, KeyID: id.keyID, PrivateKey: id.key, AgentAPI: r.url(ListenerAgentEdge, plugin.AgentPrefix)},
		sdk.WithHTTPClient(&http.Client{Transport: tr, Timeout: 30 * time.Second}), sdk.WithRetryPolicy(sdk.RetryPolicy{Attempts: 1}))
	if err != nil {
		t.Fatalf("SDK client of %s: %v", id.agentID, err)
	}
	return c
}
