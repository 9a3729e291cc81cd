package arena_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"gorm.io/gorm"

	"github.com/svcforum/svc/contracts/port"
	"github.com/svcforum/svc/contracts/problem"
	"github.com/svcforum/svc/database"
	"github.com/svcforum/svc/database/dbtest"
	"github.com/svcforum/svc/modules/arena"
)

// A match scheduled for later offers its start intents to runners only once it grants, and they wait
// their TTL from then: before, they were offered (and claimed) before any ticket could be granted, and
// expired before the window opened.
func TestScheduledMatchOffersItsIntentsWhenItOpens(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, dialect string) {
		cfg, _ := keyedConfig(t)
		w := newWorld(t, dialect, cfg)
		alice := agent("alice")
		now := w.clock.Now()
		m, err := w.matches.Create(context.Background(), map[string]string{"north": alice.AgentID}, now.Add(2*time.Hour), now.Add(5*time.Hour))
		if err != nil {
			t.Fatal(err)
		}
		if exp := m.Intents[0].ExpiresAt; exp.Before(m.GrantsFrom.Add(cfg.IntentTTL)) {
			t.Errorf("the intent expires at %s, before its TTL from the window's opening at %s", exp, m.GrantsFrom)
		}
		runner := newID()
		if offered := w.polled(t, alice, runner); len(offered.Intents) != 0 {
			t.Fatalf("%d intent(s) offered two hours before the match grants", len(offered.Intents))
		}
		w.clock.Add(2 * time.Hour)
		if offered := w.polled(t, alice, runner); len(offered.Intents) != 1 {
			t.Fatalf("%d intent(s) offered once the match grants, want 1", len(offered.Intents))
		}
	})
}

// An intent created for a seat while the match is being closed waits for the close, then is refused:
// a closed match has no open intent (PostgreSQL, where the two run side by side).
func TestCreateIntentWaitsForAClose(t *testing.T) {
	cfg, _ := keyedConfig(t)
	w := newWorld(t, database.Postgres, cfg)
	alice := agent("alice")
	m := w.open(t, map[string]port.Principal{"north": alice})
	w.warm(t, 4)
	// Hold CreateIntent right after it read the match, and close the match meanwhile.
	var armed atomic.Bool
	armed.Store(true)
	reached, release := make(chan struct{}), make(chan struct{})
	if err := w.db.Callback().Query().After("gorm:query").Register("test:hold_match_read", func(db *gorm.DB) {
		if db.Statement.Table == "arena_matches" && armed.CompareAndSwap(true, false) {
			close(reached)
			<-release
		}
	}); err != nil {
		t.Fatal(err)
	}
	created := make(chan error, 1)
	go func() { _, err := w.matches.CreateIntent(context.Background(), m.MatchID, "north"); created <- err }()
	<-reached
	closed := make(chan error, 1)
	go func() { _, err := w.matches.Close(context.Background(), m.MatchID); closed <- err }()
	// The close either waits for the intent's transaction (the fix) or commits at once (the defect).
	select {
	case err := <-closed:
		closed <- err
	case <-time.After(500 * time.Millisecond):
	}
	close(release)
	if err := <-closed; err != nil {
		t.Fatal(err)
	}
	err := <-created
	var open int64
	if qerr := w.db.Table("arena_intents").Where("match_id = ? AND state = ?", m.MatchID, arena.IntentOpen).Count(&open).Error; qerr != nil {
		t.Fatal(qerr)
	}
	if open != 0 {
		t.Fatalf("after the close the match has %d open intent(s) (CreateIntent: %v)", open, err)
	}
	if runner := newID(); len(w.polled(t, alice, runner).Intents) != 0 {
		t.Fatal("a closed match's intent is offered")
	}
}

// A seat name outside the seats' alphabet (here not UTF-8) is not_found before any query: PostgreSQL
// answered it with an encoding error.
func TestCreateIntentBadSeatName(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, dialect string) {
		cfg, _ := keyedConfig(t)
		w := newWorld(t, dialect, cfg)
		m := w.open(t, map[string]port.Principal{"north": agent("alice")})
		_, err := w.matches.CreateIntent(context.Background(), m.MatchID, "nor\xffth")
		isProblem(t, err, problem.NotFound)
	})
}
