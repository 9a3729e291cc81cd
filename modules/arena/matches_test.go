package arena_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/svcforum/svc/contracts/problem"
	"github.com/svcforum/svc/database/dbtest"
	"github.com/svcforum/svc/modules/arena"
	"github.com/svcforum/svc/testkit"
)

// TestMatches: the operator's side. Create opens a match with one open intent per seat and refuses what
// could never grant; Show lists seats and intents; Close stops the unclaimed intents and the grants;
// CreateIntent needs an open match and one of its seats.
func TestMatches(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, dialect string) {
		t.Parallel()
		cfg, _ := keyedConfig(t)
		w := newWorld(t, dialect, cfg)
		ctx := context.Background()
		alice, bob := agent("alice"), agent("bob")
		now := w.clock.Now()

		// Refusals: nothing is stored.
		for name, seats := range map[string]map[string]string{
			"no seats":         {},
			"a bad seat name":  {"no spaces": alice.AgentID},
			"an empty name":    {"": alice.AgentID},
			"a long name":      {strings.Repeat("s", 65): alice.AgentID},
			"a non-ASCII name": {"n\u00f6rd": alice.AgentID},
			"a non-UUID agent": {"north": "alice"},
			"an empty agent":   {"north": ""},
		} {
			if _, err := w.matches.Create(ctx, seats, now, now.Add(time.Hour)); err == nil {
				t.Errorf("%s: created", name)
			} else {
				isProblem(t, err, problem.Conflict)
			}
		}
		for _, until := range []time.Time{now, now.Add(-time.Second)} {
			_, err := w.matches.Create(ctx, map[string]string{"north": alice.AgentID}, now, until)
			isProblem(t, err, problem.Conflict)
		}
		var n int64
		if err := w.db.Table("arena_matches").Count(&n).Error; err != nil || n != 0 {
			t.Fatalf("%d matches stored by refused creations (%v)", n, err)
		}

		// A match with two seats: open, granting now, one open intent per seat, seats sorted by name.
		w.clock.Add(1500 * time.Microsecond)
		m, err := w.matches.Create(ctx, map[string]string{"south": bob.AgentID, "north": alice.AgentID, strings.Repeat("S", 64): bob.AgentID}, now, now.Add(time.Hour))
		if err != nil {
			t.Fatal(err)
		}
		if m.State != arena.MatchOpen || !m.GrantsNow || !m.GrantsFrom.Equal(now) || !m.GrantsUntil.Equal(now.Add(time.Hour)) || !m.CreatedAt.Equal(w.clock.Now()) || m.ClosedAt != nil {
			t.Fatalf("match %+v", m)
		}
		wantSeats := []arena.Seat{{Name: strings.Repeat("S", 64), AgentID: bob.AgentID}, {Name: "north", AgentID: alice.AgentID}, {Name: "south", AgentID: bob.AgentID}}
		if string(mustJSON(t, m.Seats)) != string(mustJSON(t, wantSeats)) {
			t.Fatalf("seats %+v", m.Seats)
		}
		if len(m.Intents) != 3 {
			t.Fatalf("intents %+v, want one per seat", m.Intents)
		}
		for _, i := range m.Intents {
			if i.State != arena.IntentOpen || !i.CreatedAt.Equal(w.clock.Now()) || !i.ExpiresAt.Equal(earlier(w.clock.Now().Add(cfg.IntentTTL), m.GrantsUntil)) ||
				i.RunnerID != nil || i.DeclaredModel != nil || i.ReasonCode != nil || i.ClaimedAt != nil {
				t.Fatalf("intent %+v", i)
			}
		}
		if shown, err := w.matches.Show(ctx, m.MatchID); err != nil || string(mustJSON(t, shown)) != string(mustJSON(t, m)) {
			t.Fatalf("show %+v (%v), created %+v", shown, err, m)
		}
		for _, id := range []string{newID(), "not-a-match"} {
			_, err := w.matches.Show(ctx, id)
			isProblem(t, err, problem.NotFound)
			_, err = w.matches.Close(ctx, id)
			isProblem(t, err, problem.NotFound)
			_, err = w.matches.CreateIntent(ctx, id, "north")
			isProblem(t, err, problem.NotFound)
		}

		// More intents; a seat the match does not have is not found.
		extra, err := w.matches.CreateIntent(ctx, m.MatchID, "north")
		if err != nil || extra.State != arena.IntentOpen || extra.Seat != "north" {
			t.Fatalf("intent %+v, %v", extra, err)
		}
		_, err = w.matches.CreateIntent(ctx, m.MatchID, "west")
		isProblem(t, err, problem.NotFound)

		// A grant and a claim before the match closes; Show counts the grant.
		_, key := sessionKey(t)
		decodeTicket(t, w.grant(t, alice, m.MatchID, "north", key))
		runner := newID()
		w.polled(t, alice, runner)
		claimed := intentOf(t, m, "north")
		ok(t, w.claim(t, alice, claimed, `{"runner_id":"`+runner+`"}`), http.StatusOK, "claim-response")
		shown, err := w.matches.Show(ctx, m.MatchID)
		if err != nil || shown.Seats[1].GrantRequests != 1 || len(shown.Intents) != 4 || shown.Intents[3].IntentID != extra.IntentID {
			t.Fatalf("show %+v, %v", shown, err)
		}

		// Close: no more grants, the unclaimed intents stopped, the claimed one untouched.
		w.clock.Add(time.Minute)
		closed, err := w.matches.Close(ctx, m.MatchID)
		if err != nil {
			t.Fatal(err)
		}
		if closed.State != arena.MatchClosed || closed.GrantsNow || closed.ClosedAt == nil || !closed.ClosedAt.Equal(w.clock.Now()) {
			t.Fatalf("closed %+v", closed)
		}
		for _, i := range closed.Intents {
			switch {
			case i.IntentID == claimed:
				if i.State != arena.IntentClaimed || i.ReasonCode != nil || i.RunnerID == nil || *i.RunnerID != runner {
					t.Fatalf("the claimed intent after close: %+v", i)
				}
			case i.State != arena.IntentStopped || i.ReasonCode != nil || !i.UpdatedAt.Equal(w.clock.Now()):
				t.Fatalf("an unclaimed intent after close: %+v", i)
			}
		}
		testkit.Expect(t, w.grant(t, alice, m.MatchID, "north", key), http.StatusForbidden, string(problem.SeatNotGranted))
		if got := w.polled(t, alice, runner); len(got.Intents) != 0 {
			t.Fatalf("a closed match's intents are offered: %+v", got)
		}
		_, err = w.matches.CreateIntent(ctx, m.MatchID, "north")
		isProblem(t, err, problem.Conflict)
		// Closing again changes nothing.
		w.clock.Add(time.Minute)
		if again, err := w.matches.Close(ctx, m.MatchID); err != nil || string(mustJSON(t, again)) != string(mustJSON(t, closed)) {
			t.Fatalf("closing again: %+v (%v), first %+v", again, err, closed)
		}

		// A match whose window is over does not grant, though open.
		past, err := w.matches.Create(ctx, map[string]string{"north": alice.AgentID}, now, w.clock.Now().Add(time.Second))
		if err != nil || !past.GrantsNow {
			t.Fatalf("match %+v, %v", past, err)
		}
		w.clock.Add(time.Second)
		if shown, err := w.matches.Show(ctx, past.MatchID); err != nil || shown.GrantsNow || shown.State != arena.MatchOpen {
			t.Fatalf("after its window %+v, %v", shown, err)
		}
	})
}

// A seat's agent given as a UUID in another form than the canonical lowercase one is still the agent:
// it is stored as the agent's id, so that the agent's grants and polls find the seat.
func TestMatchSeatAgentCanonical(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, dialect string) {
		t.Parallel()
		cfg, _ := keyedConfig(t)
		w := newWorld(t, dialect, cfg)
		alice := agent("alice")
		m, err := w.matches.Create(context.Background(), map[string]string{"north": strings.ToUpper(alice.AgentID)}, w.clock.Now(), w.clock.Now().Add(time.Hour))
		if err != nil {
			t.Fatal(err)
		}
		if m.Seats[0].AgentID != alice.AgentID {
			t.Fatalf("seat %+v, want the agent %s", m.Seats[0], alice.AgentID)
		}
		_, key := sessionKey(t)
		decodeTicket(t, w.grant(t, alice, m.MatchID, "north", key))
		if got := w.polled(t, alice, newID()); len(got.Intents) != 1 {
			t.Fatalf("offered %+v", got)
		}
	})
}
