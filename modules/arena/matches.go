package arena

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"regexp"
	"sort"
	"time"

	"github.com/google/uuid"
	"gorm.io/gorm"

	"github.com/svcforum/svc/contracts/port"
	"github.com/svcforum/svc/contracts/problem"
	"github.com/svcforum/svc/database"
)

// seatName is the alphabet of a seat's name (spec section 2, GrantRequest.seat).
var seatName = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)

// Matches are the operator's side of the arena: matches, their seats and their start intents.
type Matches struct {
	db     *gorm.DB
	cfg    Config
	clock  port.Clock
	agents port.AgentOwners // nil when the directory cannot name agents: seats are then taken as given
	log    *slog.Logger
}

// NewMatches returns the operator's logic. A seat's agent is looked up in dir (sigv1's, which names
// agents) when the directory can do so.
func NewMatches(db *gorm.DB, cfg Config, clock port.Clock, dir port.Directory, log *slog.Logger) *Matches {
	agents, _ := dir.(port.AgentOwners)
	return &Matches{db: db, cfg: cfg, clock: clock, agents: agents, log: log}
}

// Seat is a seat as the operator gives and sees it.
type Seat struct {
	Name          string `json:"name"`
	AgentID       string `json:"agent_id"`
	GrantRequests int    `json:"grant_requests"`
}

// Intent is a start intent as the operator sees it.
type Intent struct {
	IntentID      string     `json:"intent_id"`
	Seat          string     `json:"seat"`
	State         string     `json:"state"`
	RunnerID      *string    `json:"runner_id"`
	DeclaredModel *string    `json:"declared_model"`
	ReasonCode    *string    `json:"reason_code"`
	CreatedAt     time.Time  `json:"created_at"`
	ExpiresAt     time.Time  `json:"expires_at"`
	ClaimedAt     *time.Time `json:"claimed_at"`
	UpdatedAt     time.Time  `json:"updated_at"`
}

// Match is a match as the operator sees it.
type Match struct {
	MatchID     string     `json:"match_id"`
	State       string     `json:"state"`
	GrantsNow   bool       `json:"grants_now"`
	GrantsFrom  time.Time  `json:"grants_from"`
	GrantsUntil time.Time  `json:"grants_until"`
	CreatedAt   time.Time  `json:"created_at"`
	ClosedAt    *time.Time `json:"closed_at"`
	Seats       []Seat     `json:"seats"`
	Intents     []Intent   `json:"intents"`
}

// now is the time written to the database, to the microsecond PostgreSQL keeps (as Runners.now), so
// that the times answered are the times stored and compared.
func (m *Matches) now() time.Time { return m.clock.Now().UTC().Truncate(time.Microsecond) }

func conflict(format string, args ...any) *problem.Problem {
	return problem.Newf(problem.Conflict, format, args...)
}

// Create opens a match with seats (name to agent id) granting in [from, until), and one start intent
// per seat.
func (m *Matches) Create(ctx context.Context, seats map[string]string, from, until time.Time) (Match, error) {
	if len(seats) == 0 {
		return Match{}, conflict("a match needs at least one seat: --seat NAME=AGENT_ID")
	}
	if !until.After(from) {
		return Match{}, conflict("--grants-until (%s) must be after --grants-from (%s)", until.Format(time.RFC3339), from.Format(time.RFC3339))
	}
	names := make([]string, 0, len(seats))
	agents := make(map[string]string, len(seats)) // the agents' ids in their canonical (lowercase) form, as principals carry them
	for name, agentID := range seats {
		if !seatName.MatchString(name) {
			return Match{}, conflict("seat %q: a seat's name is 1..64 characters of A-Z a-z 0-9 _ -", name)
		}
		id, err := uuid.Parse(agentID)
		if err != nil {
			return Match{}, conflict("seat %s: %q is not an agent id", name, agentID)
		}
		agents[name] = id.String()
		names = append(names, name)
		if m.agents != nil {
			// A mistyped id would open a seat no agent can take.
			if _, found, err := m.agents.AgentOwner(ctx, id.String()); err != nil {
				return Match{}, fmt.Errorf("look up seat %s's agent: %w", name, err)
			} else if !found {
				return Match{}, problem.Newf(problem.NotFound, "seat %s: no agent has the id %s", name, id)
			}
		}
	}
	sort.Strings(names)
	now := m.now()
	row := matchRow{ID: uuid.Must(uuid.NewV7()).String(), State: MatchOpen, GrantsFrom: from.UTC(), GrantsUntil: until.UTC(), CreatedAt: now}
	err := m.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		if err := tx.Create(&row).Error; err != nil {
			return fmt.Errorf("create match: %w", err)
		}
		for _, name := range names {
			if err := tx.Create(&seatRow{MatchID: row.ID, Name: name, AgentID: agents[name]}).Error; err != nil {
				return fmt.Errorf("create seat: %w", err)
			}
			// A match that opens asks each seat's runner to start.
			if _, err := m.intent(tx, row, name, agents[name], now); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return Match{}, err
	}
	m.log.InfoContext(ctx, "arena match opened", "module", ID, "match_id", row.ID, "seats", len(names))
	return m.Show(ctx, row.ID)
}

func (m *Matches) intent(tx *gorm.DB, match matchRow, seat, agentID string, now time.Time) (intentRow, error) {
	// An intent lives its TTL from when its match starts granting (a match may be scheduled later), and
	// never outlives the window its seat's tickets are granted in.
	expires := later(now, match.GrantsFrom).Add(m.cfg.IntentTTL)
	if match.GrantsUntil.Before(expires) {
		expires = match.GrantsUntil
	}
	row := intentRow{ID: uuid.Must(uuid.NewV7()).String(), MatchID: match.ID, Seat: seat, AgentID: agentID, State: IntentOpen,
		CreatedAt: now, ExpiresAt: expires, UpdatedAt: now}
	if err := tx.Create(&row).Error; err != nil {
		return row, fmt.Errorf("create start intent: %w", err)
	}
	return row, nil
}

// CreateIntent creates a start intent for the seat of an open match.
func (m *Matches) CreateIntent(ctx context.Context, matchID, seat string) (Intent, error) {
	var out intentRow
	err := m.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		if !seatName.MatchString(seat) {
			return problem.Newf(problem.NotFound, "match %s has no seat %q", matchID, seat)
		}
		// Locked, as Close locks it: an intent is never added to a match being closed.
		match, err := readMatch(database.ForUpdate(tx), matchID)
		if err != nil {
			return err
		}
		if !grantsNow(match, m.now()) {
			return conflict("match %s does not grant now (closed, or outside %s .. %s): its seats could not start", matchID,
				match.GrantsFrom.UTC().Format(time.RFC3339), match.GrantsUntil.UTC().Format(time.RFC3339))
		}
		var s seatRow
		if err := tx.Take(&s, "match_id = ? AND name = ?", matchID, seat).Error; err != nil {
			if errors.Is(err, gorm.ErrRecordNotFound) {
				return problem.Newf(problem.NotFound, "match %s has no seat %q", matchID, seat)
			}
			return fmt.Errorf("read seat: %w", err)
		}
		out, err = m.intent(tx, match, seat, s.AgentID, m.now())
		return err
	})
	return intentOf(out), err
}

// Close closes a match: it grants no more, and its intents that no runner claimed are closed too.
func (m *Matches) Close(ctx context.Context, matchID string) (Match, error) {
	err := m.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		match, err := readMatch(database.ForUpdate(tx), matchID)
		if err != nil || match.State == MatchClosed {
			return err
		}
		now := m.now()
		if err := tx.Model(&matchRow{}).Where("id = ?", matchID).Updates(map[string]any{"state": MatchClosed, "closed_at": now}).Error; err != nil {
			return fmt.Errorf("close match: %w", err)
		}
		if err := tx.Model(&intentRow{}).Where("match_id = ? AND state = ?", matchID, IntentOpen).
			Updates(map[string]any{"state": IntentStopped, "reason_code": nil, "updated_at": now}).Error; err != nil {
			return fmt.Errorf("close intents: %w", err)
		}
		return nil
	})
	if err != nil {
		return Match{}, err
	}
	return m.Show(ctx, matchID)
}

// Show reads a match with its seats and intents.
func (m *Matches) Show(ctx context.Context, matchID string) (Match, error) {
	db := m.db.WithContext(ctx)
	row, err := readMatch(db, matchID)
	if err != nil {
		return Match{}, err
	}
	out := Match{MatchID: row.ID, State: row.State, GrantsNow: grantsNow(row, m.clock.Now()), GrantsFrom: row.GrantsFrom.UTC(), GrantsUntil: row.GrantsUntil.UTC(),
		CreatedAt: row.CreatedAt.UTC(), ClosedAt: utc(row.ClosedAt), Seats: []Seat{}, Intents: []Intent{}}
	var seats []seatRow
	if err := db.Where("match_id = ?", matchID).Order("name").Find(&seats).Error; err != nil {
		return Match{}, fmt.Errorf("read seats: %w", err)
	}
	for _, s := range seats {
		out.Seats = append(out.Seats, Seat{Name: s.Name, AgentID: s.AgentID, GrantRequests: s.GrantRequests})
	}
	var intents []intentRow
	if err := db.Where("match_id = ?", matchID).Order("created_at, id").Find(&intents).Error; err != nil {
		return Match{}, fmt.Errorf("read intents: %w", err)
	}
	for _, i := range intents {
		out.Intents = append(out.Intents, intentOf(i))
	}
	return out, nil
}

func intentOf(i intentRow) Intent {
	return Intent{IntentID: i.ID, Seat: i.Seat, State: i.State, RunnerID: i.RunnerID, DeclaredModel: i.DeclaredModel, ReasonCode: i.ReasonCode,
		CreatedAt: i.CreatedAt.UTC(), ExpiresAt: i.ExpiresAt.UTC(), ClaimedAt: utc(i.ClaimedAt), UpdatedAt: i.UpdatedAt.UTC()}
}

// later is the later of a and b.
func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// grantsNow reports whether the match grants at now: open and inside its window.
func grantsNow(m matchRow, now time.Time) bool {
	return m.State == MatchOpen && !now.Before(m.GrantsFrom) && now.Before(m.GrantsUntil)
}

func readMatch(db *gorm.DB, id string) (matchRow, error) {
	var row matchRow
	if _, err := uuid.Parse(id); err != nil {
		return row, problem.Newf(problem.NotFound, "no match has the id %q", id)
	}
	err := db.Take(&row, "id = ?", id).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return row, problem.Newf(problem.NotFound, "no match has the id %q", id)
	}
	if err != nil {
		return row, fmt.Errorf("read match: %w", err)
	}
	return row, nil
}

func utc(t *time.Time) *time.Time {
	if t == nil {
		return nil
	}
	u := t.UTC()
	return &u
}
