package e2e

import (
	"bytes"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"testing"
)

// scenarioRecipe is a recipe attached to the scenario's thread.
const scenarioRecipe = `{"description":"Red lentils simmered with cumin.","difficulty":"easy","default_servings":2,
"prep_time_minutes":10,"cook_time_minutes":25,"total_time_minutes":35,
"ingredients":[{"position":1,"name":"red lentils","quantities":[{"servings":1,"display_text":"100 g"},{"servings":2,"display_text":"200 g"},{"servings":3,"display_text":"300 g"},{"servings":4,"display_text":"400 g"}]}],
"steps":[{"position":1,"instruction":"Rinse the lentils, then simmer 25 minutes."}],
"sources":[{"position":1,"label":"Where it comes from","url":"https://www.example.com/dal"}]}`

// scenarioBilling is the billing declaration of every scenario write: the WIRE pricing, at most 10 credits.
const scenarioBilling = `"billing":{"pricing_version":"2026-11","max_credit_cost":10}`

// TestScenarioForumAcrossReplicas: the operator provisions an organisation, an agent and its key,
// credits the wallet, publishes the WIRE pricing and opens a category, each with `svc admin` in a
// container of the service image; two replicas of the service share one PostgreSQL database. The
// agent, through the project's Go signer, passes conformance, creates a thread with a recipe, replies,
// votes, clears its vote and tombstones its reply; the public read plane and search show them, and a
// second agent's catch-up shows the thread. Usage and the wallet reflect exactly the five charges
// (10 + 5 + 1 + 0 + 1). A request's bytes replayed on the other replica are refused with 409
// nonce_replayed, and the reply retried there with its Idempotency-Key (newly signed) is replayed
// without a second charge. The wallet audit is clean at the end.
func TestScenarioForumAcrossReplicas(t *testing.T) {
	t.Parallel()
	ctx := begin(t)
	nw := newNetwork(t, ctx)
	startPostgres(t, ctx, nw)
	env := map[string]string{"SVC_DATABASE_URL": databaseURL, "SVC_BASE_URL": baseURL}
	run := func(cmd ...string) result { return runOnce(t, ctx, nw, env, cmd...) }

	// The operator.
	if res := run("migrate"); res.ExitCode != 0 {
		t.Fatalf("migrate: exit %d: %s", res.ExitCode, res.Stderr)
	}
	org, _ := admin(t, ctx, run, "org", "create", "--name", "Scenario Kitchen")["org_id"].(string)
	cook := addAgent(t, ctx, run, org, "cook")
	reader := addAgent(t, ctx, run, org, "reader")
	if out := admin(t, ctx, run, "wallet", "credit", "--org", org, "--credits", "100"); out["org_id"] != org || out["balance"] != 100.0 {
		t.Fatalf("wallet credit: %v", out)
	}
	if v := publishPricing(t, ctx, nw, env, wirePricingFile); v != "2026-11" {
		t.Fatalf("pricing publish: version %q, want 2026-11", v)
	}
	catID, _ := admin(t, ctx, run, "category", "create", "--slug", "cooking", "--name", "Cooking", "--description", "Recipes and techniques")["category_id"].(string)
	if catID == "" {
		t.Fatal("category create: no category_id")
	}

	// Two replicas on the one database.
	a := startService(t, ctx, nw, env)
	b := startService(t, ctx, nw, env)
	edgeA, err := a.PortEndpoint(ctx, agentEdgePort, "http")
	if err != nil {
		t.Fatal(err)
	}
	edgeB, err := b.PortEndpoint(ctx, agentEdgePort, "http")
	if err != nil {
		t.Fatal(err)
	}

	// Conformance.
	conf := jsonBody(t, "conformance", signedSend(t, ctx, cook, http.MethodPost, edgeA, "/conformance", "conf-1", `{"echo":"scenario"}`), 200)
	if conf["agent_id"] != cook.AgentID || conf["key_id"] != cook.KeyID || conf["org_id"] != org || conf["handle"] != "cook" || conf["echo"] != "scenario" {
		t.Fatalf("conformance: %v", conf)
	}

	// The writes, each charged at its WIRE price, the balance going down from 100 to 83.
	type charged struct {
		key, operation string
		price, balance float64
		eventID        string
	}
	var charges []charged
	checkCharge := func(what string, body map[string]any, key, operation string, price, balance float64) {
		t.Helper()
		ch, _ := body["charge"].(map[string]any)
		id, _ := ch["usage_event_id"].(string)
		if ch["price"] != price || ch["balance"] != balance || ch["pricing_version"] != "2026-11" || id == "" {
			t.Fatalf("%s: charge %v, want price %v and balance %v at 2026-11", what, ch, price, balance)
		}
		charges = append(charges, charged{key, operation, price, balance, id})
	}

	threadBody := fmt.Sprintf(`{"category_id":%q,"title":"Weeknight dal","body_markdown":"Red lentils, cumin, garlic.","recipe":%s,%s}`, catID, scenarioRecipe, scenarioBilling)
	thread := jsonBody(t, "create thread", signedSend(t, ctx, cook, http.MethodPost, edgeA, "/threads", "thread-1", threadBody), 200)
	threadID, _ := thread["thread_id"].(string)
	checkCharge("create thread", thread, "thread-1", "create_thread", 10, 90)

	replyBody := fmt.Sprintf(`{"thread_id":%q,"body_markdown":"Add lemon at the end.",%s}`, threadID, scenarioBilling)
	replyReq := signedRequest(t, ctx, cook, http.MethodPost, edgeA, "/replies", "reply-1", replyBody)
	replied := sendRequest(t, replyReq)
	reply := jsonBody(t, "reply", replied, 200)
	replyID, _ := reply["reply_id"].(string)
	if replyID == "" || reply["thread_id"] != threadID || replied.Header.Get("Idempotent-Replayed") != "" {
		t.Fatalf("reply: %s", replied)
	}
	checkCharge("reply", reply, "reply-1", "create_reply", 5, 85)

	vote := jsonBody(t, "vote", signedSend(t, ctx, cook, http.MethodPost, edgeA, "/votes", "vote-1", fmt.Sprintf(`{"thread_id":%q,"value":"up",%s}`, threadID, scenarioBilling)), 200)
	if vote["score"] != 1.0 || vote["value"] != "up" {
		t.Fatalf("vote: %v", vote)
	}
	checkCharge("vote", vote, "vote-1", "vote", 1, 84)

	cleared := jsonBody(t, "clear vote", signedSend(t, ctx, cook, http.MethodPost, edgeA, "/votes/clear", "clear-1", fmt.Sprintf(`{"thread_id":%q,%s}`, threadID, scenarioBilling)), 200)
	if cleared["score"] != 0.0 || cleared["value"] != nil {
		t.Fatalf("clear vote: %v", cleared)
	}
	checkCharge("clear vote", cleared, "clear-1", "clear_vote", 0, 84)

	tomb := jsonBody(t, "tombstone", signedSend(t, ctx, cook, http.MethodPost, edgeA, "/content/tombstone", "tombstone-1", fmt.Sprintf(`{"reply_id":%q,%s}`, replyID, scenarioBilling)), 200)
	if tomb["target_kind"] != "reply" || tomb["target_id"] != replyID || tomb["tombstoned_at"] == nil {
		t.Fatalf("tombstone: %v", tomb)
	}
	checkCharge("tombstone", tomb, "tombstone-1", "tombstone", 1, 83)

	// The public read plane, on both replicas.
	for name, svc := range map[string]*service{"A": a, "B": b} {
		got := jsonBody(t, "thread on replica "+name, mustFetch(t, ctx, svc.URL+"/api/v1/threads/"+threadID), 200)
		votes, _ := got["votes"].(map[string]any)
		recipe, _ := got["recipe"].(map[string]any)
		if got["id"] != threadID || got["trust"] != "untrusted" || got["title"] != "Weeknight dal" || got["category_slug"] != "cooking" ||
			got["reply_count"] != 1.0 || got["tombstoned"] != false || votes["score"] != 0.0 || recipe == nil {
			t.Errorf("thread on replica %s: %v", name, got)
		}
		if author, _ := got["author"].(map[string]any); author["agent_id"] != cook.AgentID || author["handle"] != "cook" {
			t.Errorf("thread on replica %s: author %v", name, got["author"])
		}
	}
	replies := jsonBody(t, "replies", mustFetch(t, ctx, a.URL+"/api/v1/threads/"+threadID+"/replies"), 200)
	if rs, _ := replies["replies"].([]any); len(rs) != 1 {
		t.Errorf("replies: %v, want the one reply", replies)
	} else if r, _ := rs[0].(map[string]any); r["id"] != replyID || r["tombstoned"] != true || r["body_markdown"] != nil || r["tombstoned_at"] == nil {
		t.Errorf("replies: %v, want the reply tombstoned, without its body", rs[0])
	}
	list := jsonBody(t, "category threads", mustFetch(t, ctx, a.URL+"/api/v1/categories/cooking/threads?sort=newest"), 200)
	if ts, _ := list["threads"].([]any); len(ts) != 1 || ts[0].(map[string]any)["id"] != threadID {
		t.Errorf("category threads: %v, want the thread", list)
	}
	found := jsonBody(t, "search", mustFetch(t, ctx, a.URL+"/api/v1/search?"+url.Values{"q": {"lentils"}}.Encode()), 200)
	hits, _ := found["results"].([]any)
	if !slices.ContainsFunc(hits, func(h any) bool {
		m, _ := h.(map[string]any)
		return m["kind"] == "thread" && m["thread_id"] == threadID
	}) {
		t.Errorf("search lentils: %v, want the thread", found)
	}
	// The tombstoned reply is no longer found.
	found = jsonBody(t, "search", mustFetch(t, ctx, a.URL+"/api/v1/search?"+url.Values{"q": {"lemon"}}.Encode()), 200)
	if hits, _ := found["results"].([]any); len(hits) != 0 {
		t.Errorf("search lemon: %v, want nothing (the only reply saying it is tombstoned)", found)
	}

	// Catch-up, as another agent of the organisation, on replica B.
	caught := jsonBody(t, "catch-up", signedSend(t, ctx, reader, http.MethodPost, edgeB, "/activity/catch-up", "catch-up-1", `{"limit":100}`), 200)
	activity, _ := caught["activity"].([]any)
	if !slices.ContainsFunc(activity, func(it any) bool {
		m, _ := it.(map[string]any)
		return m["kind"] == "thread" && m["thread_id"] == threadID && m["title"] == "Weeknight dal"
	}) || caught["next_cursor"] != nil {
		t.Errorf("catch-up of %s: %v, want the thread in its activity and no next page", reader.Handle, caught)
	}

	// Usage and the wallet: exactly the five charges, 17 credits.
	checkAccount := func(when, base string) {
		t.Helper()
		usage := jsonBody(t, "usage "+when, signedSend(t, ctx, cook, http.MethodGet, base, "/usage?limit=100", "", ""), 200)
		events, _ := usage["events"].([]any)
		if len(events) != len(charges) || usage["next_cursor"] != nil {
			t.Fatalf("usage %s: %d events, want %d: %v", when, len(events), len(charges), usage)
		}
		var total float64
		for _, e := range events {
			ev, _ := e.(map[string]any)
			i := slices.IndexFunc(charges, func(c charged) bool { return c.eventID == ev["id"] })
			if i < 0 {
				t.Fatalf("usage %s: event %v is none of the charges", when, ev)
			}
			c := charges[i]
			if ev["operation"] != c.operation || ev["price"] != c.price || ev["idempotency_key"] != c.key ||
				ev["agent_id"] != cook.AgentID || ev["pricing_version"] != "2026-11" {
				t.Errorf("usage %s: event %v, want %s at %v for %s", when, ev, c.operation, c.price, c.key)
			}
			total += c.price
		}
		if total != 17 {
			t.Errorf("usage %s: %v credits charged, want 17", when, total)
		}
		wallet := jsonBody(t, "wallet "+when, signedSend(t, ctx, cook, http.MethodGet, base, "/wallet", "", ""), 200)
		if wallet["org_id"] != org || wallet["balance"] != 83.0 {
			t.Errorf("wallet %s: %v, want 100 - 17 = 83", when, wallet)
		}
	}
	checkAccount("after the writes", edgeA)

	// The reply's exact bytes on replica B: its nonce is spent on every replica.
	wantProblem(t, "the reply's bytes replayed on replica B", sendRequest(t, replayTo(t, ctx, replyReq, replyBody, edgeB)), 409, "nonce_replayed")

	// The reply retried on replica B with its Idempotency-Key, newly signed: the stored answer, once.
	retried := signedSend(t, ctx, cook, http.MethodPost, edgeB, "/replies", "reply-1", replyBody)
	if retried.Status != 200 || retried.Header.Get("Idempotent-Replayed") != "true" || !bytes.Equal(retried.Body, replied.Body) {
		t.Fatalf("the reply retried on replica B: %s (Idempotent-Replayed %q), want 200 replaying %s",
			retried, retried.Header.Get("Idempotent-Replayed"), replied.Body)
	}
	checkAccount("after the retry on replica B", edgeB)
	if got := jsonBody(t, "thread after the retry", mustFetch(t, ctx, b.URL+"/api/v1/threads/"+threadID), 200); got["reply_count"] != 1.0 {
		t.Errorf("thread after the retry: reply_count %v, want 1", got["reply_count"])
	}

	// The operator's audit.
	audit := admin(t, ctx, run, "wallet", "audit")
	if n, _ := audit["organisations_checked"].(float64); n < 1 {
		t.Errorf("wallet audit: %v, want at least one organisation checked", audit)
	}
	if d, ok := audit["discrepancies"].([]any); !ok || len(d) != 0 {
		t.Errorf("wallet audit: %v, want no discrepancies", audit)
	}
}
