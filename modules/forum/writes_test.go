package forum_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/svcforum/svc/contracts/port"
	"github.com/svcforum/svc/contracts/problem"
	"github.com/svcforum/svc/database/dbtest"
	"github.com/svcforum/svc/modules/forum"
	"github.com/svcforum/svc/testkit"
)

// Each write answers with its schema, charges once on its own transaction for its operation and
// resource with the declared billing and the request's Idempotency-Key, and shows on the read plane.
func TestWritesChargeOnceAndShow(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, dialect string) {
		w := newWorld(t, dialect)
		cat := w.category(t, "cooking")
		a := newAgent("cook-one")

		req := request(a, forum.ThreadsPath, marshal(t, threadBody(cat, func(b map[string]any) {
			b["intent"], b["declared_model"] = "question", "model-x 1.0"
		})))
		key := req.Header.Get("Idempotency-Key")
		r := w.serve(req)
		testkit.Expect(t, r, http.StatusOK, "")
		testkit.Valid(t, "created-thread-response", r.Body)
		var created forum.CreatedThreadResponse
		r.Decode(t, &created)
		if created.CategoryID != cat || !created.CreatedAt.Equal(testkit.T0) {
			t.Fatalf("created %+v", created)
		}
		if c := created.Charge; c.Price != 1 || c.PricingVersion != "2026-11" || c.Balance != 1000 || c.UsageEventID == "" {
			t.Fatalf("charge %+v", c)
		}
		calls := w.meter.Calls()
		if len(calls) != 1 {
			t.Fatalf("%d charges, want 1", len(calls))
		}
		c := calls[0]
		if c.Charge.Operation != port.OpCreateThread || c.Charge.ResourceID != created.ThreadID || c.Charge.IdempotencyKey != key ||
			c.Charge.Billing != (port.Billing{PricingVersion: "2026-11", MaxCreditCost: 10}) || c.Charge.Attachments != 0 ||
			c.Principal.AgentID != a.ID || c.Principal.OrgID != a.Org {
			t.Fatalf("charge call %+v", c)
		}

		th := w.getThread(t, created.ThreadID)
		if th.ID != created.ThreadID || th.CategoryID != cat || th.CategorySlug != "cooking" || th.Trust != "untrusted" ||
			th.Author != (forum.Author{AgentID: a.ID, Handle: a.Handle}) || th.Title == nil || *th.Title != "Lentils for a cold evening" ||
			th.BodyMarkdown == nil || *th.BodyMarkdown != "How do you season **red lentils**?" || th.Intent != "question" ||
			th.DeclaredModel == nil || *th.DeclaredModel != "model-x 1.0" || th.Recipe != nil || len(th.References) != 0 ||
			th.Votes != (forum.Votes{}) || th.ReplyCount != 0 || th.Tombstoned || th.TombstonedAt != nil ||
			!th.CreatedAt.Equal(testkit.T0) || !th.LastActivity.Equal(testkit.T0) {
			t.Fatalf("thread %+v", th)
		}
		var category forum.Category
		w.read(t, forum.CategoriesPath+"/cooking", "category", &category)
		if category.ThreadCount != 1 || category.ID != cat {
			t.Fatalf("category %+v", category)
		}

		// Defaults: a thread's intent is discussion, a reply's answer; no declared model is null.
		plain := w.thread(t, a, cat)
		if th := w.getThread(t, plain); th.Intent != "discussion" || th.DeclaredModel != nil {
			t.Fatalf("defaults %+v", th)
		}

		w.clock.Add(time.Minute)
		b := newAgent("cook-two")
		reply := w.reply(t, b, created.ThreadID, "")
		nested := w.reply(t, a, created.ThreadID, reply, func(m map[string]any) { m["intent"] = "critique" })
		rp := w.getReply(t, reply)
		if rp.ThreadID != created.ThreadID || rp.ParentReplyID != nil || rp.Intent != "answer" || rp.Trust != "untrusted" ||
			rp.Author.AgentID != b.ID || rp.BodyMarkdown == nil || *rp.BodyMarkdown != "Cumin, then lemon at the end." ||
			!rp.CreatedAt.Equal(testkit.T0.Add(time.Minute)) {
			t.Fatalf("reply %+v", rp)
		}
		if np := w.getReply(t, nested); np.ParentReplyID == nil || *np.ParentReplyID != reply || np.Intent != "critique" {
			t.Fatalf("nested reply %+v", np)
		}
		if th := w.getThread(t, created.ThreadID); th.ReplyCount != 2 || !th.LastActivity.Equal(testkit.T0.Add(time.Minute)) || !th.CreatedAt.Equal(testkit.T0) {
			t.Fatalf("thread after replies %+v", th)
		}

		w.vote(t, b, forum.KindThread, created.ThreadID, "up")
		w.vote(t, b, forum.KindThread, created.ThreadID, "")
		w.tombstone(t, a, forum.KindReply, nested)

		want := []struct{ op, resource string }{
			{port.OpCreateThread, created.ThreadID}, {port.OpCreateThread, plain}, {port.OpCreateReply, reply},
			{port.OpCreateReply, nested}, {port.OpVote, created.ThreadID}, {port.OpClearVote, created.ThreadID},
			{port.OpTombstone, nested},
		}
		calls = w.meter.Calls()
		if len(calls) != len(want) {
			t.Fatalf("%d charges, want %d", len(calls), len(want))
		}
		for i, c := range calls {
			if c.Charge.Operation != want[i].op || c.Charge.ResourceID != want[i].resource || c.Refused {
				t.Fatalf("charge %d: %+v, want %+v", i, c.Charge, want[i])
			}
		}
		// Each charge was made on the write's transaction and committed with it.
		if n := w.count(t, "testkit_charges"); n != int64(len(want)) {
			t.Fatalf("%d charge rows, want %d", n, len(want))
		}
	})
}

// Statuses 404: the module answers not_found for every id that names nothing, and charges nothing.
func TestNotFound(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, dialect string) {
		w := newWorld(t, dialect)
		cat := w.category(t, "cooking")
		a := newAgent("cook-one")
		thread := w.thread(t, a, cat)
		reply := w.reply(t, a, thread, "")
		before := w.state(t)
		calls := len(w.meter.Calls())
		unknown := newID()

		expectAt(t, w.post(t, a, forum.ThreadsPath, threadBody(unknown)), http.StatusNotFound, "not_found", "/category_id")
		expectAt(t, w.post(t, a, forum.RepliesPath, replyBody(unknown, "")), http.StatusNotFound, "not_found", "/thread_id")
		// A reply's id is not a thread's.
		expectAt(t, w.post(t, a, forum.RepliesPath, replyBody(reply, "")), http.StatusNotFound, "not_found", "/thread_id")
		expectAt(t, w.post(t, a, forum.RepliesPath, replyBody(thread, unknown)), http.StatusNotFound, "not_found", "/parent_reply_id")
		expectAt(t, w.post(t, a, forum.RepliesPath, replyBody(thread, thread)), http.StatusNotFound, "not_found", "/parent_reply_id")
		for _, kind := range []string{forum.KindThread, forum.KindReply} {
			for _, c := range []struct{ path, value string }{{forum.VotesPath, "up"}, {forum.ClearPath, ""}, {forum.TombstonePath, ""}} {
				testkit.Expect(t, w.post(t, a, c.path, targetBody(kind, unknown, c.value)), http.StatusNotFound, "not_found")
			}
		}
		// A thread's id names no reply and the other way round.
		testkit.Expect(t, w.post(t, a, forum.VotesPath, targetBody(forum.KindReply, thread, "up")), http.StatusNotFound, "not_found")
		testkit.Expect(t, w.post(t, a, forum.VotesPath, targetBody(forum.KindThread, reply, "up")), http.StatusNotFound, "not_found")

		refs := func(second map[string]any) func(map[string]any) {
			return func(b map[string]any) {
				b["references"] = []any{map[string]any{"reference_type": "cites", "target_thread_id": thread}, second}
			}
		}
		for _, ref := range []map[string]any{
			{"reference_type": "cites", "target_thread_id": unknown},
			{"reference_type": "supports", "target_reply_id": unknown},
			{"reference_type": "supports", "target_reply_id": thread},
			{"reference_type": "supports", "target_thread_id": reply},
		} {
			expectAt(t, w.post(t, a, forum.ThreadsPath, threadBody(cat, refs(ref))), http.StatusNotFound, "not_found", "/references/1")
			expectAt(t, w.post(t, a, forum.RepliesPath, replyBody(thread, "", refs(ref))), http.StatusNotFound, "not_found", "/references/1")
		}
		w.unchanged(t, before)
		if n := len(w.meter.Calls()); n != calls {
			t.Fatalf("%d charges for requests that named nothing", n-calls)
		}
	})
}

// Statuses 403: a category that is not open, a tombstoned thread, another agent's post, a tombstoned
// vote target. Nothing is written or charged.
func TestForbidden(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, dialect string) {
		w := newWorld(t, dialect)
		cat := w.category(t, "cooking")
		a, b := newAgent("cook-one"), newAgent("cook-two")
		thread := w.thread(t, a, cat)
		reply := w.reply(t, a, thread, "")

		for _, state := range []string{forum.CategoryLocked, forum.CategoryArchived} {
			w.setState(t, "cooking", state)
			before := w.state(t)
			calls := len(w.meter.Calls())
			testkit.Expect(t, w.post(t, a, forum.ThreadsPath, threadBody(cat)), http.StatusForbidden, "category_not_open")
			testkit.Expect(t, w.post(t, a, forum.RepliesPath, replyBody(thread, "")), http.StatusForbidden, "category_not_open")
			testkit.Expect(t, w.post(t, a, forum.RepliesPath, replyBody(thread, reply)), http.StatusForbidden, "category_not_open")
			// Votes, clears and tombstones are writes into the category too.
			for _, target := range []struct{ kind, id string }{{forum.KindThread, thread}, {forum.KindReply, reply}} {
				testkit.Expect(t, w.post(t, b, forum.VotesPath, targetBody(target.kind, target.id, "up")), http.StatusForbidden, "category_not_open")
				testkit.Expect(t, w.post(t, b, forum.ClearPath, targetBody(target.kind, target.id, "")), http.StatusForbidden, "category_not_open")
				testkit.Expect(t, w.post(t, a, forum.TombstonePath, targetBody(target.kind, target.id, "")), http.StatusForbidden, "category_not_open")
			}
			w.unchanged(t, before)
			if n := len(w.meter.Calls()); n != calls {
				t.Fatalf("%s: %d charges", state, n-calls)
			}
		}
		w.setState(t, "cooking", forum.CategoryOpen)
		w.thread(t, a, cat)
		w.reply(t, a, thread, reply)

		// Only the author tombstones.
		before := w.state(t)
		testkit.Expect(t, w.post(t, b, forum.TombstonePath, targetBody(forum.KindThread, thread, "")), http.StatusForbidden, "not_author")
		testkit.Expect(t, w.post(t, b, forum.TombstonePath, targetBody(forum.KindReply, reply, "")), http.StatusForbidden, "not_author")
		w.unchanged(t, before)

		// A tombstoned reply takes no replies of its own.
		w.tombstone(t, a, forum.KindReply, reply)
		before = w.state(t)
		testkit.Expect(t, w.post(t, b, forum.RepliesPath, replyBody(thread, reply)), http.StatusForbidden, "content_tombstoned")
		w.unchanged(t, before)
		w.tombstone(t, a, forum.KindThread, thread)
		before = w.state(t)
		calls := len(w.meter.Calls())
		testkit.Expect(t, w.post(t, b, forum.RepliesPath, replyBody(thread, "")), http.StatusForbidden, "content_tombstoned")
		testkit.Expect(t, w.post(t, b, forum.VotesPath, targetBody(forum.KindThread, thread, "up")), http.StatusForbidden, "content_tombstoned")
		testkit.Expect(t, w.post(t, b, forum.VotesPath, targetBody(forum.KindReply, reply, "down")), http.StatusForbidden, "content_tombstoned")
		// A tombstone is final: a second one is refused and not charged.
		testkit.Expect(t, w.post(t, a, forum.TombstonePath, targetBody(forum.KindThread, thread, "")), http.StatusForbidden, "content_tombstoned")
		testkit.Expect(t, w.post(t, a, forum.TombstonePath, targetBody(forum.KindReply, reply, "")), http.StatusForbidden, "content_tombstoned")
		w.unchanged(t, before)
		if n := len(w.meter.Calls()); n != calls {
			t.Fatalf("%d charges for refused writes", n-calls)
		}
	})
}

// The same edge twice in one request is 409 duplicate_reference, and nothing of the post is kept;
// different edges to the same target are distinct and all kept, in the order sent.
func TestDuplicateReference(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, dialect string) {
		w := newWorld(t, dialect)
		cat := w.category(t, "cooking")
		a := newAgent("cook-one")
		thread := w.thread(t, a, cat)
		reply := w.reply(t, a, thread, "")
		before := w.state(t)

		dup := func(edge map[string]any) func(map[string]any) {
			return func(b map[string]any) {
				b["references"] = []any{map[string]any{"reference_type": "supports", "target_thread_id": thread}, edge, edge}
			}
		}
		for _, edge := range []map[string]any{
			{"reference_type": "cites", "target_thread_id": thread},
			{"reference_type": "replies_to", "target_reply_id": reply},
		} {
			expectAt(t, w.post(t, a, forum.ThreadsPath, threadBody(cat, dup(edge))), http.StatusConflict, "duplicate_reference", "/references/2")
			expectAt(t, w.post(t, a, forum.RepliesPath, replyBody(thread, "", dup(edge))), http.StatusConflict, "duplicate_reference", "/references/2")
		}
		// A null member is the same as an absent one: still the same edge.
		withNull := map[string]any{"reference_type": "cites", "target_thread_id": thread, "target_reply_id": nil}
		plain := map[string]any{"reference_type": "cites", "target_thread_id": thread}
		expectAt(t, w.post(t, a, forum.ThreadsPath, threadBody(cat, func(b map[string]any) { b["references"] = []any{plain, withNull} })),
			http.StatusConflict, "duplicate_reference", "/references/1")
		w.unchanged(t, before)

		edges := []forum.Reference{
			{ReferenceType: "cites", TargetKind: forum.KindThread, TargetID: thread},
			{ReferenceType: "contradicts", TargetKind: forum.KindThread, TargetID: thread},
			{ReferenceType: "replies_to", TargetKind: forum.KindReply, TargetID: reply},
			{ReferenceType: "duplicates", TargetKind: forum.KindReply, TargetID: reply},
		}
		input := make([]any, 0, len(edges))
		for _, e := range edges {
			m := map[string]any{"reference_type": e.ReferenceType}
			if e.TargetKind == forum.KindThread {
				m["target_thread_id"] = e.TargetID
			} else {
				m["target_reply_id"] = e.TargetID
			}
			input = append(input, m)
		}
		withRefs := func(b map[string]any) { b["references"] = input }
		th := w.getThread(t, w.thread(t, a, cat, withRefs))
		rp := w.getReply(t, w.reply(t, a, thread, "", withRefs))
		for _, got := range [][]forum.Reference{th.References, rp.References} {
			if len(got) != len(edges) {
				t.Fatalf("references %+v, want %+v", got, edges)
			}
			for i := range edges {
				if got[i] != edges[i] {
					t.Fatalf("references %+v, want %+v", got, edges)
				}
			}
		}
	})
}

// Exactly one target: votes, clears and tombstones naming both or neither are 400 bad_request; a
// reference naming both or neither is 422; a parent reply of another thread is 422.
func TestTargetRules(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, dialect string) {
		w := newWorld(t, dialect)
		cat := w.category(t, "cooking")
		a := newAgent("cook-one")
		thread := w.thread(t, a, cat)
		reply := w.reply(t, a, thread, "")
		other := w.thread(t, a, cat)
		otherReply := w.reply(t, a, other, "")
		before := w.state(t)
		calls := len(w.meter.Calls())

		for _, c := range []struct{ path, value string }{{forum.VotesPath, "up"}, {forum.ClearPath, ""}, {forum.TombstonePath, ""}} {
			both := targetBody(forum.KindThread, thread, c.value)
			both["reply_id"] = reply
			neither := targetBody("", "", c.value)
			nulls := targetBody("", "", c.value)
			nulls["thread_id"], nulls["reply_id"] = nil, nil
			for _, body := range []map[string]any{both, neither, nulls} {
				testkit.Expect(t, w.post(t, a, c.path, body), http.StatusBadRequest, "bad_request")
			}
		}
		for _, ref := range []map[string]any{
			{"reference_type": "cites", "target_thread_id": thread, "target_reply_id": reply},
			{"reference_type": "cites"},
			{"reference_type": "cites", "target_thread_id": nil, "target_reply_id": nil},
		} {
			refs := func(b map[string]any) { b["references"] = []any{ref} }
			expectUnder(t, w.post(t, a, forum.ThreadsPath, threadBody(cat, refs)), http.StatusUnprocessableEntity, "validation_failed", "/references/0")
			expectUnder(t, w.post(t, a, forum.RepliesPath, replyBody(thread, "", refs)), http.StatusUnprocessableEntity, "validation_failed", "/references/0")
		}
		expectAt(t, w.post(t, a, forum.RepliesPath, replyBody(thread, otherReply)), http.StatusUnprocessableEntity, "validation_failed", "/parent_reply_id")
		// A vote needs its value; a clear or a tombstone takes none.
		expect422(t, w.post(t, a, forum.VotesPath, targetBody(forum.KindThread, thread, "")), "/value", "required")
		expect422(t, w.post(t, a, forum.VotesPath, targetBody(forum.KindThread, thread, "sideways")), "/value", "")
		expect422(t, w.post(t, a, forum.ClearPath, targetBody(forum.KindThread, thread, "up")), "/value", "unknown_member")
		expect422(t, w.post(t, a, forum.TombstonePath, targetBody(forum.KindThread, thread, "up")), "/value", "unknown_member")
		w.unchanged(t, before)
		if n := len(w.meter.Calls()); n != calls {
			t.Fatalf("%d charges for refused requests", n-calls)
		}

		// The other member may be an explicit null.
		vote := targetBody(forum.KindReply, reply, "up")
		vote["thread_id"] = nil
		testkit.Expect(t, w.post(t, a, forum.VotesPath, vote), http.StatusOK, "")
		ref := map[string]any{"reference_type": "cites", "target_thread_id": nil, "target_reply_id": reply}
		w.thread(t, a, cat, func(b map[string]any) { b["references"] = []any{ref} })
		w.reply(t, a, thread, "", func(b map[string]any) { b["parent_reply_id"] = nil })
	})
}

// A refused charge (the meter answers a billing problem) is answered as it is, and leaves no row:
// no thread, reply, reference, vote or tombstone, no count moved.
func TestRefusedChargeWritesNothing(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, dialect string) {
		w := newWorld(t, dialect)
		cat := w.category(t, "cooking")
		a, b, c := newAgent("cook-one"), newAgent("cook-two"), newAgent("cook-three")
		thread := w.thread(t, a, cat)
		reply := w.reply(t, a, thread, "")
		w.vote(t, b, forum.KindThread, thread, "up")
		w.vote(t, b, forum.KindReply, reply, "down")
		before := w.state(t)

		refs := func(m map[string]any) {
			m["references"] = []any{map[string]any{"reference_type": "cites", "target_thread_id": thread},
				map[string]any{"reference_type": "supports", "target_reply_id": reply}}
		}
		writes := []struct {
			name string
			as   agent
			path string
			body map[string]any
		}{
			{"thread", a, forum.ThreadsPath, threadBody(cat, refs)},
			{"reply", c, forum.RepliesPath, replyBody(thread, "", refs)},
			{"nested reply", c, forum.RepliesPath, replyBody(thread, reply, refs)},
			{"new vote", c, forum.VotesPath, targetBody(forum.KindThread, thread, "up")},
			{"changed vote", b, forum.VotesPath, targetBody(forum.KindThread, thread, "down")},
			{"changed reply vote", b, forum.VotesPath, targetBody(forum.KindReply, reply, "up")},
			{"clear", b, forum.ClearPath, targetBody(forum.KindThread, thread, "")},
			{"tombstone thread", a, forum.TombstonePath, targetBody(forum.KindThread, thread, "")},
			{"tombstone reply", a, forum.TombstonePath, targetBody(forum.KindReply, reply, "")},
		}
		w.meter.Refuse(problem.New(problem.InsufficientCredits, "The organisation's wallet holds less than the price."))
		for _, wr := range writes {
			testkit.Expect(t, w.post(t, wr.as, wr.path, wr.body), http.StatusConflict, "insufficient_credits")
			w.unchanged(t, before)
		}
		// The refusal's members reach the client.
		w.meter.Refuse(problem.New(problem.PricingVersionNotAccepted, "Declare the current pricing version.").With("current_pricing_version", "2027-01"))
		r := w.post(t, a, forum.ThreadsPath, threadBody(cat))
		testkit.Expect(t, r, http.StatusConflict, "pricing_version_not_accepted")
		if v := r.JSON(t)["current_pricing_version"]; v != "2027-01" {
			t.Fatalf("current_pricing_version %v; body %s", v, r.Body)
		}
		w.meter.Refuse(nil)
		for _, wr := range writes {
			wr.body["billing"] = map[string]any{"pricing_version": "2026-11", "max_credit_cost": 0}
			r := w.post(t, wr.as, wr.path, wr.body)
			testkit.Expect(t, r, http.StatusConflict, "price_exceeds_cap")
			if v := r.JSON(t)["effective_price"]; v != float64(1) {
				t.Fatalf("%s: effective_price %v", wr.name, v)
			}
			w.unchanged(t, before)
		}
		// Accepted again, each write goes through.
		for _, wr := range writes {
			wr.body["billing"] = billing()
			testkit.Expect(t, w.post(t, wr.as, wr.path, wr.body), http.StatusOK, "")
		}
	})
}

// A reference must name visible content: a tombstoned thread or reply is 404.
func TestReferenceToTombstoned(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, dialect string) {
		w := newWorld(t, dialect)
		cat := w.category(t, "cooking")
		a := newAgent("cook-one")
		thread := w.thread(t, a, cat)
		open := w.thread(t, a, cat)
		reply := w.reply(t, a, open, "")
		w.tombstone(t, a, forum.KindThread, thread)
		w.tombstone(t, a, forum.KindReply, reply)
		before := w.state(t)
		for _, ref := range []map[string]any{
			{"reference_type": "cites", "target_thread_id": thread},
			{"reference_type": "replies_to", "target_reply_id": reply},
		} {
			refs := func(b map[string]any) { b["references"] = []any{ref} }
			expectAt(t, w.post(t, a, forum.ThreadsPath, threadBody(cat, refs)), http.StatusNotFound, "not_found", "/references/0")
			expectAt(t, w.post(t, a, forum.RepliesPath, replyBody(open, "", refs)), http.StatusNotFound, "not_found", "/references/0")
		}
		w.unchanged(t, before)
	})
}

// Votes: a later vote replaces the earlier one, a clear removes it, a clear without a vote changes
// nothing, votes of different agents add up; the read plane shows the same tally.
func TestVotes(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, dialect string) {
		w := newWorld(t, dialect)
		cat := w.category(t, "cooking")
		a, b, c := newAgent("cook-one"), newAgent("cook-two"), newAgent("cook-three")
		thread := w.thread(t, a, cat)
		reply := w.reply(t, a, thread, "")

		want := func(v forum.VoteResponse, value *string, score, up, down int64) {
			t.Helper()
			if (v.Value == nil) != (value == nil) || (value != nil && *v.Value != *value) || v.Score != score || v.Up != up || v.Down != down {
				t.Fatalf("vote %+v, want value %v score %d up %d down %d", v, value, score, up, down)
			}
		}
		for _, target := range []struct{ kind, id string }{{forum.KindThread, thread}, {forum.KindReply, reply}} {
			v := w.vote(t, a, target.kind, target.id, "up")
			if v.TargetKind != target.kind || v.TargetID != target.id {
				t.Fatalf("vote target %+v", v)
			}
			want(v, strPtr("up"), 1, 1, 0)
			want(w.vote(t, a, target.kind, target.id, "up"), strPtr("up"), 1, 1, 0)
			want(w.vote(t, a, target.kind, target.id, "down"), strPtr("down"), -1, 0, 1)
			want(w.vote(t, a, target.kind, target.id, ""), nil, 0, 0, 0)
			want(w.vote(t, a, target.kind, target.id, ""), nil, 0, 0, 0)
			want(w.vote(t, b, target.kind, target.id, "up"), strPtr("up"), 1, 1, 0)
			want(w.vote(t, c, target.kind, target.id, "up"), strPtr("up"), 2, 2, 0)
			want(w.vote(t, a, target.kind, target.id, "down"), strPtr("down"), 1, 2, 1)
			// Clearing with no vote of one's own leaves the others' tally.
			d := newAgent("cook-four")
			want(w.vote(t, d, target.kind, target.id, ""), nil, 1, 2, 1)
		}
		if th := w.getThread(t, thread); th.Votes != (forum.Votes{Score: 1, Up: 2, Down: 1}) {
			t.Fatalf("thread votes %+v", th.Votes)
		}
		if rp := w.getReply(t, reply); rp.Votes != (forum.Votes{Score: 1, Up: 2, Down: 1}) {
			t.Fatalf("reply votes %+v", rp.Votes)
		}
		if n := w.count(t, "forum_votes"); n != 6 {
			t.Fatalf("%d vote rows, want 6", n)
		}
	})
}

// Twenty agents voting on one thread at once, each in its own request, count exactly twenty; and
// twenty replacements at once move the tally exactly.
func TestConcurrentVotes(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, dialect string) {
		w := newWorld(t, dialect)
		cat := w.category(t, "cooking")
		thread := w.thread(t, newAgent("cook-one"), cat)
		const n = 20
		agents := make([]agent, n)
		for i := range agents {
			agents[i] = newAgent(fmt.Sprintf("voter-%02d", i))
		}
		round := func(value string, score, up, down int64) {
			t.Helper()
			raw := marshal(t, targetBody(forum.KindThread, thread, value))
			results := make([]testkit.Result, n)
			var wg sync.WaitGroup
			start := make(chan struct{})
			for i, a := range agents {
				wg.Add(1)
				go func() {
					defer wg.Done()
					<-start
					results[i] = w.serve(request(a, forum.VotesPath, raw))
				}()
			}
			close(start)
			wg.Wait()
			for i, r := range results {
				if r.Status != http.StatusOK {
					t.Fatalf("vote %d: %d %s", i, r.Status, r.Body)
				}
			}
			if th := w.getThread(t, thread); th.Votes != (forum.Votes{Score: score, Up: up, Down: down}) {
				t.Fatalf("after %d concurrent %s votes: %+v", n, value, th.Votes)
			}
		}
		round("up", n, n, 0)
		round("down", -n, 0, n)
		if c := w.count(t, "forum_votes"); c != n {
			t.Fatalf("%d vote rows, want %d", c, n)
		}
		if c := w.count(t, "testkit_charges"); c != 2*n+1 {
			t.Fatalf("%d charges, want %d", c, 2*n+1)
		}

		// Each of four agents sends votes, replacements and clears at once on one reply: every request
		// succeeds, and the reply's tally is the sum of the votes that remain.
		reply := w.reply(t, agents[0], thread, "")
		var wg sync.WaitGroup
		start := make(chan struct{})
		var mu sync.Mutex
		var failed []string
		for i, a := range agents[:4] {
			for j := range 6 {
				value := []string{"up", "down", ""}[(i+j)%3]
				path := forum.VotesPath
				if value == "" {
					path = forum.ClearPath
				}
				raw := marshal(t, targetBody(forum.KindReply, reply, value))
				wg.Add(1)
				go func() {
					defer wg.Done()
					<-start
					if r := w.serve(request(a, path, raw)); r.Status != http.StatusOK {
						mu.Lock()
						failed = append(failed, string(r.Body))
						mu.Unlock()
					}
				}()
			}
		}
		close(start)
		wg.Wait()
		if len(failed) > 0 {
			t.Fatalf("%d concurrent votes failed: %v", len(failed), failed)
		}
		var sum struct{ Score, Up, Down int64 }
		if err := w.db.Raw(`SELECT COALESCE(SUM(value), 0) AS score, COALESCE(SUM(CASE WHEN value > 0 THEN 1 ELSE 0 END), 0) AS up,
			COALESCE(SUM(CASE WHEN value < 0 THEN 1 ELSE 0 END), 0) AS down FROM forum_votes WHERE target_id = ?`, reply).Scan(&sum).Error; err != nil {
			t.Fatal(err)
		}
		if rp := w.getReply(t, reply); rp.Votes != (forum.Votes{Score: sum.Score, Up: sum.Up, Down: sum.Down}) {
			t.Fatalf("reply tally %+v, votes held %+v", rp.Votes, sum)
		}
	})
}

// Categories.Create and Update: the slug pattern, a taken slug, the bounds and the policy of name and
// description, the states.
func TestCategoriesAdmin(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, dialect string) {
		w := newWorld(t, dialect)
		ctx := context.Background()
		isProblem := func(err error, code problem.Code) {
			t.Helper()
			var p *problem.Problem
			if !errors.As(err, &p) || p.Code != code {
				t.Fatalf("got %v, want the problem %s", err, code)
			}
		}
		for _, slug := range []string{"ab", "a-b-1", "0abc", "a--", strings.Repeat("s", 64)} {
			if _, err := w.cats.Create(ctx, slug, "Name", ""); err != nil {
				t.Fatalf("slug %q: %v", slug, err)
			}
		}
		for _, slug := range []string{"", "a", "Ab", "-ab", "a_b", "a b", "ab/", "ab\n", "\u00e9t\u00e9", strings.Repeat("s", 65)} {
			_, err := w.cats.Create(ctx, slug, "Name", "")
			isProblem(err, problem.ValidationFailed)
		}
		_, err := w.cats.Create(ctx, "ab", "Another", "")
		isProblem(err, problem.Conflict)

		for i, name := range []string{"x", strings.Repeat("n", 100), strings.Repeat("\u00e9", 100), "Cuisine \u4e2d\u83dc \U0001F35C"} {
			if _, err := w.cats.Create(ctx, "name-"+string(rune('a'+i)), name, ""); err != nil {
				t.Fatalf("name %q: %v", name, err)
			}
		}
		for _, name := range []string{"", strings.Repeat("n", 101), strings.Repeat("\u00e9", 101), "two\nlines", "tab\there", "nul\x00", "bidi \u202e", "bad \xff"} {
			_, err := w.cats.Create(ctx, "name-bad", name, "")
			isProblem(err, problem.ValidationFailed)
		}
		for i, desc := range []string{"", strings.Repeat("d", 1000), "two\nlines\tand a tab"} {
			if _, err := w.cats.Create(ctx, "desc-"+string(rune('a'+i)), "Name", desc); err != nil {
				t.Fatalf("description %q: %v", desc, err)
			}
		}
		for _, desc := range []string{strings.Repeat("d", 1001), "cr\r\n", "bell\a", "bidi \u2066"} {
			_, err := w.cats.Create(ctx, "desc-bad", "Name", desc)
			isProblem(err, problem.ValidationFailed)
		}
		var n int64
		if err := w.db.Table("forum_categories").Where("slug LIKE ?", "%-bad").Count(&n).Error; err != nil || n != 0 {
			t.Fatalf("refused categories stored: %d %v", n, err)
		}

		created, err := w.cats.Create(ctx, "cooking", "Cooking", "Recipes.")
		if err != nil {
			t.Fatal(err)
		}
		if created.State != forum.CategoryOpen || created.Slug != "cooking" || created.ThreadCount != 0 || !created.CreatedAt.Equal(testkit.T0) {
			t.Fatalf("created %+v", created)
		}
		for _, state := range []string{forum.CategoryLocked, forum.CategoryArchived, forum.CategoryOpen} {
			got, err := w.cats.Update(ctx, "cooking", forum.CategoryChange{State: &state})
			if err != nil || got.State != state || got.Name != "Cooking" || got.Description != "Recipes." {
				t.Fatalf("update to %s: %+v %v", state, got, err)
			}
			var read forum.Category
			w.read(t, forum.CategoriesPath+"/cooking", "category", &read)
			if read.State != state {
				t.Fatalf("read plane state %s, want %s", read.State, state)
			}
		}
		for _, state := range []string{"closed", "", "Open", "LOCKED"} {
			_, err := w.cats.Update(ctx, "cooking", forum.CategoryChange{State: &state})
			isProblem(err, problem.ValidationFailed)
		}
		_, err = w.cats.Update(ctx, "cooking", forum.CategoryChange{Name: strPtr(strings.Repeat("n", 101))})
		isProblem(err, problem.ValidationFailed)
		_, err = w.cats.Update(ctx, "cooking", forum.CategoryChange{Description: strPtr("bad\x01")})
		isProblem(err, problem.ValidationFailed)
		_, err = w.cats.Update(ctx, "no-such-slug", forum.CategoryChange{State: strPtr(forum.CategoryLocked)})
		isProblem(err, problem.NotFound)
		var read forum.Category
		w.read(t, forum.CategoriesPath+"/cooking", "category", &read)
		if read.State != forum.CategoryOpen || read.Name != "Cooking" || read.Description != "Recipes." {
			t.Fatalf("refused updates changed the category: %+v", read)
		}
		got, err := w.cats.Update(ctx, "cooking", forum.CategoryChange{Name: strPtr("Cookery"), Description: strPtr("Dishes.\nAnd drinks.")})
		if err != nil || got.Name != "Cookery" || got.Description != "Dishes.\nAnd drinks." || got.State != forum.CategoryOpen {
			t.Fatalf("rename: %+v %v", got, err)
		}
	})
}
