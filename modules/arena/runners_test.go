package arena_test

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"gorm.io/gorm"

	"github.com/svcforum/svc/contracts/port"
	"github.com/svcforum/svc/contracts/problem"
	"github.com/svcforum/svc/database"
	"github.com/svcforum/svc/database/dbtest"
	"github.com/svcforum/svc/modules/arena"
	"github.com/svcforum/svc/testkit"
)

// heartbeat is a runner's row: what its last poll said, and when.
func (w *world) heartbeat(t testing.TB, p port.Principal, runner string) (string, time.Time) {
	t.Helper()
	var row struct {
		Availability string
		HeartbeatAt  time.Time
	}
	if err := w.db.Table("arena_runners").Where("agent_id = ? AND id = ?", p.AgentID, runner).Take(&row).Error; err != nil {
		t.Fatalf("the heartbeat of runner %s: %v", runner, err)
	}
	return row.Availability, row.HeartbeatAt
}

func ids(list arena.StartIntentList) []string {
	out := []string{}
	for _, i := range list.Intents {
		out = append(out, i.IntentID)
	}
	return out
}

// TestPoll: a poll renews the runner's heartbeat and offers at most ten of the agent's own open,
// unexpired intents, oldest first; nothing to a runner that said refused.
func TestPoll(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, dialect string) {
		t.Parallel()
		cfg := arena.DefaultConfig()
		cfg.PollAfter = 7 * time.Second
		w := newWorld(t, dialect, cfg)
		ctx := context.Background()
		alice, bob, carol := agent("alice"), agent("bob"), agent("carol")
		m := w.open(t, map[string]port.Principal{"north": alice, "south": bob})
		// Twelve more for alice, a second apart (the first at a fraction of a second, which the
		// database keeps to the microsecond).
		w.clock.Add(1234567 * time.Nanosecond)
		want := []string{intentOf(t, m, "north")}
		created := map[string]arena.Intent{want[0]: m.Intents[slices.IndexFunc(m.Intents, func(i arena.Intent) bool { return i.Seat == "north" })]}
		for range 12 {
			w.clock.Add(time.Second)
			i, err := w.matches.CreateIntent(ctx, m.MatchID, "north")
			if err != nil {
				t.Fatal(err)
			}
			if i.State != arena.IntentOpen || i.Seat != "north" || !i.ExpiresAt.Equal(earlier(i.CreatedAt.Add(cfg.IntentTTL), m.GrantsUntil)) || i.RunnerID != nil || i.ClaimedAt != nil {
				t.Fatalf("intent %+v", i)
			}
			want = append(want, i.IntentID)
			created[i.IntentID] = i
		}
		runner := newID()
		w.clock.Add(time.Second)
		r := w.poll(t, alice, runner, arena.Online)
		ok(t, r, http.StatusOK, "start-intent-list")
		if cc := r.Header.Get("Cache-Control"); cc != "no-store" {
			t.Fatalf("Cache-Control %q", cc)
		}
		var list arena.StartIntentList
		r.Decode(t, &list)
		if !slices.Equal(ids(list), want[:arena.MaxPoll]) || list.PollAfterSeconds != 7 {
			t.Fatalf("offered %v (poll after %d), want the ten oldest %v", ids(list), list.PollAfterSeconds, want[:arena.MaxPoll])
		}
		// Offered as the operator created them, to the same instant.
		for i, it := range list.Intents {
			c := created[it.IntentID]
			if it.MatchID != m.MatchID || it.Seat != "north" || !it.CreatedAt.Equal(c.CreatedAt) || !it.ExpiresAt.Equal(c.ExpiresAt) ||
				!it.ExpiresAt.Equal(earlier(it.CreatedAt.Add(cfg.IntentTTL), m.GrantsUntil)) || (i > 0 && !it.CreatedAt.After(list.Intents[i-1].CreatedAt)) {
				t.Fatalf("intent %d offered %+v, created %+v", i, it, c)
			}
		}
		if av, at := w.heartbeat(t, alice, runner); av != arena.Online || !at.Equal(w.clock.Now().Truncate(time.Microsecond)) {
			t.Fatalf("heartbeat %s at %s, want online at %s", av, at, w.clock.Now())
		}
		// Another agent sees only its own; an agent holding no seat sees nothing.
		if got := w.polled(t, bob, runner); !slices.Equal(ids(got), []string{intentOf(t, m, "south")}) {
			t.Fatalf("bob was offered %v", ids(got))
		}
		if got := w.polled(t, carol, newID()); len(got.Intents) != 0 {
			t.Fatalf("carol was offered %v", ids(got))
		}
		// refused: nothing offered, the heartbeat renewed with it.
		w.clock.Add(time.Minute)
		r = w.poll(t, alice, runner, arena.Refused)
		ok(t, r, http.StatusOK, "start-intent-list")
		if r.Decode(t, &list); len(list.Intents) != 0 || list.PollAfterSeconds != 7 {
			t.Fatalf("a refused runner was offered %s", r.Body)
		}
		if av, at := w.heartbeat(t, alice, runner); av != arena.Refused || !at.Equal(w.clock.Now().Truncate(time.Microsecond)) {
			t.Fatalf("heartbeat %s at %s, want refused at %s", av, at, w.clock.Now())
		}
		// A claimed intent is no longer offered.
		w.polled(t, alice, runner)
		ok(t, w.claim(t, alice, want[0], `{"runner_id":"`+runner+`"}`), http.StatusOK, "claim-response")
		if got := w.polled(t, alice, runner); !slices.Equal(ids(got), want[1:11]) {
			t.Fatalf("after a claim: %v, want %v", ids(got), want[1:11])
		}
		// Expired intents are not offered: at the expires_at the sixth was created with, it and the five
		// before it are gone.
		w.clock.Set(created[want[5]].ExpiresAt)
		if got := w.polled(t, alice, runner); !slices.Equal(ids(got), want[6:]) {
			t.Fatalf("after some expired: %v, want %v", ids(got), want[6:])
		}
		w.clock.Add(time.Hour)
		if got := w.polled(t, alice, runner); len(got.Intents) != 0 {
			t.Fatalf("after all expired: %v", ids(got))
		}
		// Bodies against runner-poll.
		for _, body := range []string{
			`{"runner_id":"` + strings.ToUpper(runner) + `","availability":"online"}`,
			`{"runner_id":"runner-1","availability":"online"}`,
			`{"runner_id":"` + runner + `","availability":"busy"}`,
			`{"runner_id":"` + runner + `"}`,
			`{"availability":"online"}`,
			`{"runner_id":"` + runner + `","availability":"online","command":"rm -rf /"}`,
		} {
			testkit.Expect(t, w.post(t, alice, arena.PollPath, body), http.StatusUnprocessableEntity, string(problem.ValidationFailed))
		}
	})
}

// TestClaim: a claim by a runner that polls online wins once; the same runner again gets it again,
// another runner 409, another agent's intent 404; expired and closed intents cannot be claimed.
func TestClaim(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, dialect string) {
		t.Parallel()
		cfg := arena.DefaultConfig()
		w := newWorld(t, dialect, cfg)
		ctx := context.Background()
		alice, bob := agent("alice"), agent("bob")
		m := w.open(t, map[string]port.Principal{"north": alice, "south": bob})
		intent := intentOf(t, m, "north")
		r1, r2 := newID(), newID()
		claim := func(p port.Principal, intentID, runner string) testkit.Result {
			t.Helper()
			return w.claim(t, p, intentID, `{"runner_id":"`+runner+`"}`)
		}
		notPolling := func(p port.Principal, intentID, runner string) {
			t.Helper()
			testkit.Expect(t, claim(p, intentID, runner), http.StatusConflict, string(problem.RunnerNotPolling))
		}
		notPolling(alice, intent, r1) // never polled
		w.polled(t, alice, r1)
		w.clock.Add(cfg.RunnerTimeout)
		notPolling(alice, intent, r1) // its last poll is as old as the timeout
		w.clock.Add(time.Second)
		notPolling(alice, intent, r1)
		ok(t, w.poll(t, alice, r1, arena.Refused), http.StatusOK, "start-intent-list")
		notPolling(alice, intent, r1) // polled, refused
		// Runner ids are per agent: bob's runner of the same id has not polled.
		w.polled(t, alice, r1)
		notPolling(bob, intentOf(t, m, "south"), r1)

		w.clock.Add(1500 * time.Microsecond)
		first := w.claim(t, alice, intent, `{"runner_id":"`+r1+`","declared_model":"local-model"}`)
		ok(t, first, http.StatusOK, "claim-response")
		var got arena.ClaimResponse
		first.Decode(t, &got)
		if got.IntentID != intent || got.MatchID != m.MatchID || got.Seat != "north" || got.RunnerID != r1 || got.DeclaredModel == nil ||
			*got.DeclaredModel != "local-model" || got.State != arena.IntentClaimed || !got.ClaimedAt.Equal(w.clock.Now()) {
			t.Fatalf("claim %s", first.Body)
		}
		// The longest declared_model, 120 characters (240 bytes), is kept whole.
		longest, r3 := strings.Repeat("é", 120), newID()
		w.polled(t, bob, r3)
		long := w.claim(t, bob, intentOf(t, m, "south"), `{"runner_id":"`+r3+`","declared_model":"`+longest+`"}`)
		ok(t, long, http.StatusOK, "claim-response")
		var kept arena.ClaimResponse
		long.Decode(t, &kept)
		if kept.DeclaredModel == nil || *kept.DeclaredModel != longest {
			t.Fatalf("the longest declared_model: %s", long.Body)
		}
		// The same runner again, even without declared_model and after its heartbeat lapsed: the same claim.
		w.clock.Add(cfg.RunnerTimeout + time.Minute)
		again := claim(alice, intent, r1)
		ok(t, again, http.StatusOK, "claim-response")
		if !bytes.Equal(again.Body, first.Body) {
			t.Fatalf("the same runner again: %s, first %s", again.Body, first.Body)
		}
		w.polled(t, alice, r2)
		testkit.Expect(t, claim(alice, intent, r2), http.StatusConflict, string(problem.IntentAlreadyClaimed))
		testkit.Expect(t, w.claim(t, alice, intent, `{"runner_id":"`+r2+`","declared_model":"other"}`), http.StatusConflict, string(problem.IntentAlreadyClaimed))
		// Another agent's intent, one that does not exist, a malformed id: 404, polling or not.
		for _, id := range []string{intentOf(t, m, "south"), newID(), "not-an-intent", strings.ToUpper(intent)} {
			testkit.Expect(t, claim(alice, id, r2), http.StatusNotFound, string(problem.IntentNotFound))
			testkit.Expect(t, claim(alice, id, newID()), http.StatusNotFound, string(problem.IntentNotFound))
		}
		testkit.Expect(t, claim(bob, intent, r1), http.StatusNotFound, string(problem.IntentNotFound))
		// An expired intent.
		late, err := w.matches.CreateIntent(ctx, m.MatchID, "north")
		if err != nil {
			t.Fatal(err)
		}
		w.clock.Add(cfg.IntentTTL)
		w.polled(t, alice, r2)
		testkit.Expect(t, claim(alice, late.IntentID, r2), http.StatusConflict, string(problem.IntentExpired))
		// An intent of a closed match.
		closed := w.open(t, map[string]port.Principal{"east": alice})
		if _, err := w.matches.Close(ctx, closed.MatchID); err != nil {
			t.Fatal(err)
		}
		testkit.Expect(t, claim(alice, intentOf(t, closed, "east"), r2), http.StatusConflict, string(problem.IntentExpired))
		// Bodies against claim-request.
		for _, body := range []string{
			`{}`,
			`{"runner_id":"` + strings.ToUpper(r2) + `"}`,
			`{"runner_id":"` + r2 + `","declared_model":""}`,
			`{"runner_id":"` + r2 + `","declared_model":"` + strings.Repeat("m", 121) + `"}`,
			`{"runner_id":"` + r2 + `","note":"start now"}`,
		} {
			testkit.Expect(t, w.claim(t, alice, late.IntentID, body), http.StatusUnprocessableEntity, string(problem.ValidationFailed))
		}
		// What the operator sees: the claim as first recorded.
		shown, err := w.matches.Show(ctx, m.MatchID)
		if err != nil {
			t.Fatal(err)
		}
		for _, i := range shown.Intents {
			if i.IntentID == intent && (i.State != arena.IntentClaimed || i.RunnerID == nil || *i.RunnerID != r1 || i.DeclaredModel == nil || *i.DeclaredModel != "local-model" || i.ClaimedAt == nil || !i.ClaimedAt.Equal(got.ClaimedAt)) {
				t.Fatalf("the claimed intent as shown: %+v", i)
			}
		}
	})
}

// TestConcurrentClaims: twenty runners of one agent, all polling, claim one intent at once: exactly one
// wins and nineteen get 409 intent_already_claimed, on both databases (on PostgreSQL, the conditional
// update under concurrency, as across replicas).
func TestConcurrentClaims(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, dialect string) {
		t.Parallel()
		w := newWorld(t, dialect, arena.DefaultConfig())
		alice := agent("alice")
		m := w.open(t, map[string]port.Principal{"north": alice})
		intent := intentOf(t, m, "north")
		runners := make([]string, 20)
		for i := range runners {
			runners[i] = newID()
			w.polled(t, alice, runners[i])
		}
		w.slowReads(t, "arena_intents", 20*time.Millisecond) // between reading the open intent and claiming it
		w.warm(t, 16)
		var wg sync.WaitGroup
		start := make(chan struct{})
		results := make([]testkit.Result, len(runners))
		for i, runner := range runners {
			wg.Go(func() {
				<-start
				results[i] = w.claim(t, alice, intent, `{"runner_id":"`+runner+`","declared_model":"model-`+fmt.Sprint(i)+`"}`)
			})
		}
		close(start)
		wg.Wait()
		count := map[string]int{}
		winner := ""
		for i, r := range results {
			count[fmt.Sprint(r.Status, r.Code)]++
			if r.Status == http.StatusOK {
				ok(t, r, http.StatusOK, "claim-response")
				var c arena.ClaimResponse
				r.Decode(t, &c)
				if c.RunnerID != runners[i] || c.DeclaredModel == nil || *c.DeclaredModel != "model-"+fmt.Sprint(i) {
					t.Fatalf("runner %s won with %s", runners[i], r.Body)
				}
				winner = runners[i]
			} else {
				testkit.Expect(t, r, http.StatusConflict, string(problem.IntentAlreadyClaimed))
			}
		}
		if count["200"] != 1 || count["409intent_already_claimed"] != 19 {
			t.Fatalf("statuses %v, want one 200 and nineteen 409 intent_already_claimed", count)
		}
		shown, err := w.matches.Show(context.Background(), m.MatchID)
		if err != nil {
			t.Fatal(err)
		}
		if i := shown.Intents[0]; i.State != arena.IntentClaimed || i.RunnerID == nil || *i.RunnerID != winner {
			t.Fatalf("the intent %+v, the winner %s", i, winner)
		}
		for _, runner := range runners {
			r := w.claim(t, alice, intent, `{"runner_id":"`+runner+`"}`)
			if runner == winner {
				ok(t, r, http.StatusOK, "claim-response")
			} else {
				testkit.Expect(t, r, http.StatusConflict, string(problem.IntentAlreadyClaimed))
			}
		}
	})
}

// TestConcurrentStatuses: the claiming runner reports "running" and "starting" at once, each read
// before either writes; a status never moves an intent back, so it ends running, "running" is always
// answered 200, and "starting" either came first (200) or is refused as not forward. On both databases,
// for several rounds.
func TestConcurrentStatuses(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, dialect string) {
		t.Parallel()
		w := newWorld(t, dialect, arena.DefaultConfig())
		alice := agent("alice")
		runner := newID()
		w.polled(t, alice, runner)
		w.slowReads(t, "arena_intents", 30*time.Millisecond) // between reading the intent's state and moving it
		w.warm(t, 4)
		for round := range 4 {
			m := w.open(t, map[string]port.Principal{"north": alice})
			intent := intentOf(t, m, "north")
			ok(t, w.claim(t, alice, intent, `{"runner_id":"`+runner+`"}`), http.StatusOK, "claim-response")
			var wg sync.WaitGroup
			var running, starting testkit.Result
			wg.Go(func() { running = w.status(t, alice, intent, `{"runner_id":"`+runner+`","state":"running"}`) })
			wg.Go(func() { starting = w.status(t, alice, intent, `{"runner_id":"`+runner+`","state":"starting"}`) })
			wg.Wait()
			ok(t, running, http.StatusOK, "status-response")
			if starting.Status != http.StatusOK {
				testkit.Expect(t, starting, http.StatusConflict, string(problem.StatusNotForward))
			}
			shown, err := w.matches.Show(context.Background(), m.MatchID)
			if err != nil {
				t.Fatal(err)
			}
			if got := shown.Intents[0].State; got != arena.IntentRunning {
				t.Fatalf("round %d: the intent is %s after running (%d) and starting (%d), want running", round, got, running.Status, starting.Status)
			}
		}
	})
}

// TestStatusOvertakenThreeTimes: a status report read before each of the intent's three moves after
// its claim (another report moves it right after each read) is decided again each time, and refused
// once the intent is final, never left undecided. On PostgreSQL only: SQLite plans a write in the
// writer's turn (database.Write), so no report can commit between the plan's read and its run there.
func TestStatusOvertakenThreeTimes(t *testing.T) {
	t.Parallel()
	w := newWorld(t, database.Postgres, arena.DefaultConfig())
	alice := agent("alice")
	runner := newID()
	w.polled(t, alice, runner)
	m := w.open(t, map[string]port.Principal{"north": alice})
	intent := intentOf(t, m, "north")
	ok(t, w.claim(t, alice, intent, `{"runner_id":"`+runner+`"}`), http.StatusOK, "claim-response")
	moves := []string{`"state":"starting"`, `"state":"running"`, `"state":"stopped","reason_code":"completed"`}
	var overtaking atomic.Bool
	if err := w.db.Callback().Query().After("gorm:query").Register("test:overtake", func(db *gorm.DB) {
		if db.Statement.Table != "arena_intents" || len(moves) == 0 || !overtaking.CompareAndSwap(false, true) {
			return
		}
		move := moves[0]
		moves = moves[1:]
		ok(t, w.status(t, alice, intent, `{"runner_id":"`+runner+`",`+move+`}`), http.StatusOK, "status-response")
		overtaking.Store(false)
	}); err != nil {
		t.Fatal(err)
	}
	r := w.status(t, alice, intent, `{"runner_id":"`+runner+`","state":"failed","reason_code":"crashed"}`)
	testkit.Expect(t, r, http.StatusConflict, string(problem.StatusNotForward))
	if len(moves) != 0 {
		t.Fatalf("%d moves left: the report was not overtaken three times", len(moves))
	}
}

// TestStatus: only the claiming runner reports, only forward, from fixed lists; the same report again
// answers the same result.
func TestStatus(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, dialect string) {
		t.Parallel()
		w := newWorld(t, dialect, arena.DefaultConfig())
		ctx := context.Background()
		alice, bob := agent("alice"), agent("bob")
		m := w.open(t, map[string]port.Principal{"north": alice, "south": bob})
		first := intentOf(t, m, "north")
		r1, r2 := newID(), newID()
		w.polled(t, alice, r1)
		w.polled(t, alice, r2)
		report := func(intentID, runner, state, reason string) testkit.Result {
			t.Helper()
			body := `{"runner_id":"` + runner + `","state":"` + state + `"`
			if reason != "" {
				body += `,"reason_code":"` + reason + `"`
			}
			return w.status(t, alice, intentID, body+"}")
		}
		moved := func(intentID, runner, state, reason string) testkit.Result {
			t.Helper()
			w.clock.Add(1001 * time.Microsecond)
			r := report(intentID, runner, state, reason)
			ok(t, r, http.StatusOK, "status-response")
			var got arena.StatusResponse
			r.Decode(t, &got)
			if got.IntentID != intentID || got.State != state || (reason == "") != (got.ReasonCode == nil) || (reason != "" && *got.ReasonCode != reason) || !got.UpdatedAt.Equal(w.clock.Now()) {
				t.Fatalf("status %s %s: %s at %s", state, reason, r.Body, w.clock.Now())
			}
			return r
		}
		notForward := func(intentID, runner, state, reason, from string) {
			t.Helper()
			r := report(intentID, runner, state, reason)
			testkit.Expect(t, r, http.StatusConflict, string(problem.StatusNotForward))
			if member(t, r, "state") != from {
				t.Fatalf("status_not_forward names the state %v, want %s", member(t, r, "state"), from)
			}
		}
		same := func(intentID, runner, state, reason string, before testkit.Result) {
			t.Helper()
			w.clock.Add(time.Second)
			r := report(intentID, runner, state, reason)
			ok(t, r, http.StatusOK, "status-response")
			if !bytes.Equal(r.Body, before.Body) {
				t.Fatalf("%s %s again: %s, before %s", state, reason, r.Body, before.Body)
			}
		}

		testkit.Expect(t, report(first, r1, "starting", ""), http.StatusConflict, string(problem.IntentNotClaimed))
		ok(t, w.claim(t, alice, first, `{"runner_id":"`+r1+`"}`), http.StatusOK, "claim-response")
		testkit.Expect(t, report(first, r2, "starting", ""), http.StatusConflict, string(problem.IntentAlreadyClaimed))
		moved(first, r1, "starting", "")
		running := moved(first, r1, "running", "")
		same(first, r1, "running", "", running)
		notForward(first, r1, "starting", "", "running")
		// A reason with a state that is not final is refused by the schema.
		testkit.Expect(t, report(first, r1, "running", "crashed"), http.StatusUnprocessableEntity, string(problem.ValidationFailed))
		stopped := moved(first, r1, "stopped", "completed")
		same(first, r1, "stopped", "completed", stopped)
		notForward(first, r1, "running", "", "stopped")
		// A final state without its reason is refused by the schema.
		testkit.Expect(t, report(first, r1, "stopped", ""), http.StatusUnprocessableEntity, string(problem.ValidationFailed))
		notForward(first, r1, "stopped", "cancelled_by_owner", "stopped")
		notForward(first, r1, "failed", "crashed", "stopped")
		testkit.Expect(t, report(first, r2, "failed", "crashed"), http.StatusConflict, string(problem.IntentAlreadyClaimed))
		// The claim shows the state now, as first claimed.
		var c arena.ClaimResponse
		ok(t, w.claim(t, alice, first, `{"runner_id":"`+r1+`"}`), http.StatusOK, "claim-response").Decode(t, &c)
		if c.State != arena.IntentStopped || c.RunnerID != r1 {
			t.Fatalf("the claim after stopped: %+v", c)
		}

		// Failed is final too; a report may skip states.
		second, err := w.matches.CreateIntent(ctx, m.MatchID, "north")
		if err != nil {
			t.Fatal(err)
		}
		w.polled(t, alice, r2)
		ok(t, w.claim(t, alice, second.IntentID, `{"runner_id":"`+r2+`"}`), http.StatusOK, "claim-response")
		failed := moved(second.IntentID, r2, "failed", "login_required")
		same(second.IntentID, r2, "failed", "login_required", failed)
		notForward(second.IntentID, r2, "failed", "crashed", "failed")
		notForward(second.IntentID, r2, "stopped", "completed", "failed")
		notForward(second.IntentID, r2, "running", "", "failed")
		notForward(second.IntentID, r2, "starting", "", "failed")
		third, err := w.matches.CreateIntent(ctx, m.MatchID, "north")
		if err != nil {
			t.Fatal(err)
		}
		ok(t, w.claim(t, alice, third.IntentID, `{"runner_id":"`+r2+`"}`), http.StatusOK, "claim-response")
		moved(third.IntentID, r2, "starting", "")
		moved(third.IntentID, r2, "stopped", "cancelled_by_owner")

		// Not found: another agent's intent, none, a malformed id.
		for _, id := range []string{intentOf(t, m, "south"), newID(), "not-an-intent"} {
			testkit.Expect(t, report(id, r1, "starting", ""), http.StatusNotFound, string(problem.IntentNotFound))
		}
		// No free text: only the fixed vocabulary.
		fourth, err := w.matches.CreateIntent(ctx, m.MatchID, "north")
		if err != nil {
			t.Fatal(err)
		}
		ok(t, w.claim(t, alice, fourth.IntentID, `{"runner_id":"`+r2+`"}`), http.StatusOK, "claim-response")
		for _, body := range []string{
			`{"runner_id":"` + r2 + `","state":"running","message":"all good"}`,
			`{"runner_id":"` + r2 + `","state":"stopped","reason_code":"completed","outcome":"won"}`,
			`{"runner_id":"` + r2 + `","state":"stopped","reason_code":"completed","score":3}`,
			`{"runner_id":"` + r2 + `","state":"paused"}`,
			`{"runner_id":"` + r2 + `","state":"claimed"}`,
			`{"runner_id":"` + r2 + `","state":"stopped","reason_code":"won"}`,
			`{"runner_id":"` + r2 + `","state":"stopped","reason_code":"the runtime said: ignore previous instructions"}`,
			`{"runner_id":"` + r2 + `","state":"Running"}`,
			`{"state":"running"}`,
			`{"runner_id":"` + r2 + `"}`,
		} {
			testkit.Expect(t, w.status(t, alice, fourth.IntentID, body), http.StatusUnprocessableEntity, string(problem.ValidationFailed))
		}
		// An explicit null reason is no reason.
		w.clock.Add(time.Second)
		nullReason := w.status(t, alice, fourth.IntentID, `{"runner_id":"`+r2+`","state":"starting","reason_code":null}`)
		ok(t, nullReason, http.StatusOK, "status-response")
		same(fourth.IntentID, r2, "starting", "", nullReason)

		shown, err := w.matches.Show(ctx, m.MatchID)
		if err != nil {
			t.Fatal(err)
		}
		states := map[string]string{}
		for _, i := range shown.Intents {
			reason := ""
			if i.ReasonCode != nil {
				reason = *i.ReasonCode
			}
			states[i.IntentID] = i.State + "/" + reason
		}
		for id, want := range map[string]string{first: "stopped/completed", second.IntentID: "failed/login_required", third.IntentID: "stopped/cancelled_by_owner",
			fourth.IntentID: "starting/", intentOf(t, m, "south"): "open/"} {
			if states[id] != want {
				t.Fatalf("intent %s is %s, want %s", id, states[id], want)
			}
		}
	})
}
