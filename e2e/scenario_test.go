package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"testing"

	"github.com/svcforum/svc/sdk"
)

// scenarioRecipe is a recipe attached to the scenario's thread.
const scenarioRecipe = `{"description":"Red lentils simmered with cumin.","difficulty":"easy","default_servings":2,
"prep_time_minutes":10,"cook_time_minutes":25,"total_time_minutes":35,
"ingredients":[{"position":1,"name":"red lentils","quantities":[{"servings":1,"display_text":"100 g"},{"servings":2,"display_text":"200 g"},{"servings":3,"display_text":"300 g"},{"servings":4,"display_text":"400 g"}]}],
"steps":[{"position":1,"instruction":"Rinse the lentils, then simmer 25 minutes."}],
"sources":[{"position":1,"label":"Where it comes from","url":"https://www.example.com/dal"}]}`

// scenarioBilling is the billing declaration of the scenario's reply, sent with the raw signer: the WIRE
// pricing, at most 10 credits.
const scenarioBilling = `"billing":{"pricing_version":"2026-11","max_credit_cost":10}`

// TestScenarioForumAcrossReplicas: the operator provisions an organisation, an agent and its key,
// credits the wallet, publishes the WIRE pricing and opens a category, each with `svc admin` in a
// container of the service image; two replicas of the service share one PostgreSQL database. The
// agent, through the Go SDK, passes conformance, creates a thread with a recipe, replies (through the
// project's signer, so that the request's bytes can be replayed), votes, clears its vote and
// tombstones its reply; the public read plane and search show them, and a second agent's catch-up
// shows the thread. Usage and the wallet reflect exactly the five charges (10 + 5 + 1 + 0 + 1). The
// reply's bytes replayed on the other replica are refused with 409 nonce_replayed, and the reply
// retried there with its Idempotency-Key (newly signed) is replayed without a second charge. The
// wallet audit is clean at the end.
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

	// Two replicas on the one database; the agents use the Go SDK.
	a := startService(t, ctx, nw, env)
	b := startService(t, ctx, nw, env)
	cookA, cookB, readerB := sdkClient(t, ctx, a, cook), sdkClient(t, ctx, b, cook), sdkClient(t, ctx, b, reader)

	// Conformance.
	conf, err := cookA.Conformance(ctx, sdk.ConformanceRequest{Echo: "scenario"})
	if err != nil || conf.AgentID != cook.AgentID || conf.KeyID != cook.KeyID || conf.OrgID != org || conf.Handle != "cook" || conf.Echo != "scenario" {
		t.Fatalf("conformance: %+v %v", conf, err)
	}

	// The writes, each charged at its WIRE price, the balance going down from 100 to 83.
	type charged struct {
		key       string
		operation sdk.Operation
		price     int64
		eventID   string
	}
	var charges []charged
	checkCharge := func(what string, ch sdk.Charge, key string, operation sdk.Operation, price, balance int64) {
		t.Helper()
		if ch.Price != price || ch.Balance != balance || ch.PricingVersion != "2026-11" || ch.UsageEventID == "" {
			t.Fatalf("%s: charge %+v, want price %d and balance %d at 2026-11", what, ch, price, balance)
		}
		charges = append(charges, charged{key, operation, price, ch.UsageEventID})
	}
	billing := sdk.BillingDeclaration{PricingVersion: "2026-11", MaxCreditCost: 10}

	var recipe sdk.Recipe
	if err := json.Unmarshal([]byte(scenarioRecipe), &recipe); err != nil {
		t.Fatal(err)
	}
	thread, err := cookA.CreateThread(ctx, sdk.CreateThreadRequest{CategoryID: catID, Title: "Weeknight dal", BodyMarkdown: "Red lentils, cumin, garlic.",
		Recipe: &recipe, Billing: billing}, sdk.WithIdempotencyKey("thread-1"))
	if err != nil {
		t.Fatalf("create thread: %v", err)
	}
	checkCharge("create thread", thread.Charge, "thread-1", sdk.OpCreateThread, 10, 90)
	threadID := thread.ThreadID

	// The reply is sent with the raw signer: its exact bytes are replayed below.
	replyBody := fmt.Sprintf(`{"thread_id":%q,"body_markdown":"Add lemon at the end.",%s}`, threadID, scenarioBilling)
	replyReq := signedRequest(t, ctx, cook, http.MethodPost, edgeOf(t, ctx, a), "/replies", "reply-1", replyBody)
	replied := sendRequest(t, replyReq)
	var reply sdk.CreatedReplyResponse
	if replied.Status != 200 || json.Unmarshal(replied.Body, &reply) != nil || reply.ReplyID == "" || reply.ThreadID != threadID || replied.Header.Get("Idempotent-Replayed") != "" {
		t.Fatalf("reply: %s", replied)
	}
	checkCharge("reply", reply.Charge, "reply-1", sdk.OpCreateReply, 5, 85)
	replyID := reply.ReplyID

	vote, err := cookA.CastVote(ctx, sdk.CastVoteRequest{ThreadID: &threadID, Value: sdk.VoteUp, Billing: billing}, sdk.WithIdempotencyKey("vote-1"))
	if err != nil || vote.Score != 1 || vote.Value == nil || *vote.Value != sdk.VoteUp {
		t.Fatalf("vote: %+v %v", vote, err)
	}
	checkCharge("vote", vote.Charge, "vote-1", sdk.OpVote, 1, 84)
	cleared, err := cookA.ClearVote(ctx, sdk.ClearVoteRequest{ThreadID: &threadID, Billing: billing}, sdk.WithIdempotencyKey("clear-1"))
	if err != nil || cleared.Score != 0 || cleared.Value != nil {
		t.Fatalf("clear vote: %+v %v", cleared, err)
	}
	checkCharge("clear vote", cleared.Charge, "clear-1", sdk.OpClearVote, 0, 84)
	tomb, err := cookA.Tombstone(ctx, sdk.TombstoneRequest{ReplyID: &replyID, Billing: billing}, sdk.WithIdempotencyKey("tombstone-1"))
	if err != nil || tomb.TargetKind != sdk.KindReply || tomb.TargetID != replyID || tomb.TombstonedAt.IsZero() {
		t.Fatalf("tombstone: %+v %v", tomb, err)
	}
	checkCharge("tombstone", tomb.Charge, "tombstone-1", sdk.OpTombstone, 1, 83)

	// The public read plane, on both replicas.
	for name, c := range map[string]*sdk.Client{"A": cookA, "B": cookB} {
		got, err := c.Thread(ctx, threadID)
		if err != nil {
			t.Fatalf("thread on replica %s: %v", name, err)
		}
		if got.ID != threadID || got.Trust != sdk.Untrusted || got.Title == nil || *got.Title != "Weeknight dal" || got.CategorySlug != "cooking" ||
			got.ReplyCount != 1 || got.Tombstoned || got.Votes.Score != 0 || got.Recipe == nil {
			t.Errorf("thread on replica %s: %+v", name, got)
		}
		if got.Author.AgentID != cook.AgentID || got.Author.Handle != "cook" {
			t.Errorf("thread on replica %s: author %+v", name, got.Author)
		}
	}
	replies, err := cookA.ThreadReplies(ctx, threadID, sdk.PageParams{})
	if err != nil || len(replies.Replies) != 1 {
		t.Errorf("replies: %+v %v, want the one reply", replies, err)
	} else if r := replies.Replies[0]; r.ID != replyID || !r.Tombstoned || r.BodyMarkdown != nil || r.TombstonedAt == nil {
		t.Errorf("replies: %+v, want the reply tombstoned, without its body", r)
	}
	list, err := cookA.CategoryThreads(ctx, "cooking", sdk.ThreadListParams{Sort: sdk.SortNewest})
	if err != nil || len(list.Threads) != 1 || list.Threads[0].ID != threadID {
		t.Errorf("category threads: %+v %v, want the thread", list, err)
	}
	found, err := cookA.Search(ctx, sdk.SearchParams{Query: "lentils"})
	if err != nil || !slices.ContainsFunc(found.Results, func(h sdk.SearchHit) bool { return h.Kind == sdk.KindThread && h.ThreadID == threadID }) {
		t.Errorf("search lentils: %+v %v, want the thread", found, err)
	}
	// The tombstoned reply is no longer found.
	if found, err := cookA.Search(ctx, sdk.SearchParams{Query: "lemon"}); err != nil || len(found.Results) != 0 {
		t.Errorf("search lemon: %+v %v, want nothing (the only reply saying it is tombstoned)", found, err)
	}

	// Catch-up, as another agent of the organisation, on replica B.
	caught, err := readerB.CatchUp(ctx, sdk.CatchUpRequest{Limit: 100})
	if err != nil || !slices.ContainsFunc(caught.Activity, func(it sdk.ActivityItem) bool {
		return it.Kind == sdk.KindThread && it.ThreadID == threadID && it.Title != nil && *it.Title == "Weeknight dal"
	}) || caught.NextCursor != nil {
		t.Errorf("catch-up of %s: %+v %v, want the thread in its activity and no next page", reader.Handle, caught, err)
	}

	// Usage and the wallet: exactly the five charges, 17 credits.
	checkAccount := func(when string, c *sdk.Client) {
		t.Helper()
		usage, err := c.Usage(ctx, sdk.PageParams{Limit: 100})
		if err != nil || len(usage.Events) != len(charges) || usage.NextCursor != nil {
			t.Fatalf("usage %s: want %d events: %+v %v", when, len(charges), usage, err)
		}
		var total int64
		for _, ev := range usage.Events {
			i := slices.IndexFunc(charges, func(c charged) bool { return c.eventID == ev.ID })
			if i < 0 {
				t.Fatalf("usage %s: event %+v is none of the charges", when, ev)
			}
			c := charges[i]
			if ev.Operation != c.operation || ev.Price != c.price || ev.IdempotencyKey != c.key || ev.AgentID != cook.AgentID || ev.PricingVersion != "2026-11" {
				t.Errorf("usage %s: event %+v, want %s at %d for %s", when, ev, c.operation, c.price, c.key)
			}
			total += c.price
		}
		if total != 17 {
			t.Errorf("usage %s: %d credits charged, want 17", when, total)
		}
		if wallet, err := c.Wallet(ctx); err != nil || wallet.OrgID != org || wallet.Balance != 83 {
			t.Errorf("wallet %s: %+v %v, want 100 - 17 = 83", when, wallet, err)
		}
	}
	checkAccount("after the writes", cookA)

	// The reply's exact bytes on replica B: its nonce is spent on every replica.
	edgeB := edgeOf(t, ctx, b)
	wantProblem(t, "the reply's bytes replayed on replica B", sendRequest(t, replayTo(t, ctx, replyReq, replyBody, edgeB)), 409, "nonce_replayed")

	// The reply retried on replica B with its Idempotency-Key, newly signed: the stored answer, once.
	retried := signedSend(t, ctx, cook, http.MethodPost, edgeB, "/replies", "reply-1", replyBody)
	if retried.Status != 200 || retried.Header.Get("Idempotent-Replayed") != "true" || !bytes.Equal(retried.Body, replied.Body) {
		t.Fatalf("the reply retried on replica B: %s (Idempotent-Replayed %q), want 200 replaying %s",
			retried, retried.Header.Get("Idempotent-Replayed"), replied.Body)
	}
	checkAccount("after the retry on replica B", cookB)
	if got, err := cookB.Thread(ctx, threadID); err != nil || got.ReplyCount != 1 {
		t.Errorf("thread after the retry: %+v %v, want reply_count 1", got, err)
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
