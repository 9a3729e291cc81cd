package arena

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"github.com/svcforum/svc/contracts/write"

	"github.com/google/uuid"
	"gorm.io/gorm"
	"gorm.io/gorm/clause"

	"github.com/svcforum/svc/contracts/port"
	"github.com/svcforum/svc/contracts/privatekey"
	"github.com/svcforum/svc/contracts/problem"
	"github.com/svcforum/svc/contracts/textpolicy"
)

// RunnerPoll is POST /agent-api/v1/arena/start-intents/poll.
type RunnerPoll struct {
	RunnerID     string `json:"runner_id"`
	Availability string `json:"availability"`
}

// StartIntent is one intent a poll offers: identifiers and times, never an instruction.
type StartIntent struct {
	IntentID  string    `json:"intent_id"`
	MatchID   string    `json:"match_id"`
	Seat      string    `json:"seat"`
	CreatedAt time.Time `json:"created_at"`
	ExpiresAt time.Time `json:"expires_at"`
}

// StartIntentList answers a poll.
type StartIntentList struct {
	Intents          []StartIntent `json:"intents"`
	PollAfterSeconds int           `json:"poll_after_seconds"`
}

// ClaimRequest is POST .../start-intents/{intent_id}/claim.
type ClaimRequest struct {
	RunnerID      string  `json:"runner_id"`
	DeclaredModel *string `json:"declared_model,omitempty"`
}

// ClaimResponse answers a claim.
type ClaimResponse struct {
	IntentID      string    `json:"intent_id"`
	MatchID       string    `json:"match_id"`
	Seat          string    `json:"seat"`
	RunnerID      string    `json:"runner_id"`
	DeclaredModel *string   `json:"declared_model"`
	ClaimedAt     time.Time `json:"claimed_at"`
	State         string    `json:"state"`
}

// StatusRequest is POST .../start-intents/{intent_id}/status.
type StatusRequest struct {
	RunnerID   string  `json:"runner_id"`
	State      string  `json:"state"`
	ReasonCode *string `json:"reason_code,omitempty"`
}

// StatusResponse answers a status.
type StatusResponse struct {
	IntentID   string    `json:"intent_id"`
	State      string    `json:"state"`
	ReasonCode *string   `json:"reason_code"`
	UpdatedAt  time.Time `json:"updated_at"`
}

// Runners serve the local runners' routes.
type Runners struct {
	db    *gorm.DB
	cfg   Config
	clock port.Clock
}

// NewRunners returns the runners' logic.
func NewRunners(db *gorm.DB, cfg Config, clock port.Clock) *Runners {
	return &Runners{db: db, cfg: cfg, clock: clock}
}

func (r *Runners) now() time.Time { return r.clock.Now().UTC().Truncate(time.Microsecond) }

// Poll renews the runner's heartbeat and offers at most MaxPoll of the agent's open, unexpired intents,
// oldest first; nothing to a runner that declared itself refused.
func (r *Runners) Poll(ctx context.Context, agentID string, in RunnerPoll) (StartIntentList, error) {
	now := r.now()
	out := StartIntentList{Intents: []StartIntent{}, PollAfterSeconds: int(r.cfg.PollAfter.Seconds())}
	db := r.db.WithContext(ctx)
	beat := runnerRow{AgentID: agentID, ID: in.RunnerID, Availability: in.Availability, HeartbeatAt: now}
	if err := db.Clauses(clause.OnConflict{Columns: []clause.Column{{Name: "agent_id"}, {Name: "id"}},
		DoUpdates: clause.AssignmentColumns([]string{"availability", "heartbeat_at"})}).Create(&beat).Error; err != nil {
		return out, fmt.Errorf("renew heartbeat: %w", err)
	}
	if in.Availability == Refused {
		return out, nil
	}
	var rows []intentRow
	// Only the intents of matches that grant now: a match scheduled later is offered once it opens.
	if err := db.Where("agent_id = ? AND state = ? AND expires_at > ?", agentID, IntentOpen, now).
		Where("match_id IN (SELECT id FROM arena_matches WHERE state = ? AND grants_from <= ? AND grants_until > ?)", MatchOpen, now, now).
		Order("created_at, id").Limit(MaxPoll).Find(&rows).Error; err != nil {
		return out, fmt.Errorf("read intents: %w", err)
	}
	for _, i := range rows {
		out.Intents = append(out.Intents, StartIntent{IntentID: i.ID, MatchID: i.MatchID, Seat: i.Seat, CreatedAt: i.CreatedAt.UTC(), ExpiresAt: i.ExpiresAt.UTC()})
	}
	return out, nil
}

func intentNotFound() *problem.Problem {
	return problem.New(problem.IntentNotFound, "You have no start intent with this id.")
}

// readIntent reads the agent's intent id on db; another agent's is not found.
func readIntent(db *gorm.DB, agentID, id string) (intentRow, error) {
	var rows []intentRow
	if _, err := uuid.Parse(id); err != nil {
		return intentRow{}, intentNotFound()
	}
	if err := db.Where("id = ? AND agent_id = ?", id, agentID).Limit(1).Find(&rows).Error; err != nil {
		return intentRow{}, fmt.Errorf("read intent: %w", err)
	}
	if len(rows) == 0 {
		return intentRow{}, intentNotFound()
	}
	return rows[0], nil
}

// pollingSQL is the condition on arena_runners that a runner polled, online, within the runner timeout:
// its variables are the agent, the runner, Online and the oldest heartbeat that counts.
const pollingSQL = "agent_id = ? AND id = ? AND availability = ? AND heartbeat_at > ?"

// polling is 409 runner_not_polling unless the runner polled, online, within the runner timeout.
func (r *Runners) polling(db *gorm.DB, agentID, runnerID string, now time.Time) error {
	var n int64
	if err := db.Model(&runnerRow{}).Where(pollingSQL, agentID, runnerID, Online, now.Add(-r.cfg.RunnerTimeout)).Count(&n).Error; err != nil {
		return fmt.Errorf("read runner: %w", err)
	}
	if n == 0 {
		return problem.Newf(problem.RunnerNotPolling, "This runner has not polled as online in the last %s: poll (availability online), then claim.", r.cfg.RunnerTimeout)
	}
	return nil
}

func (i intentRow) claim() ClaimResponse {
	c := ClaimResponse{IntentID: i.ID, MatchID: i.MatchID, Seat: i.Seat, DeclaredModel: i.DeclaredModel, State: i.State}
	if i.RunnerID != nil {
		c.RunnerID = *i.RunnerID
	}
	if i.ClaimedAt != nil {
		c.ClaimedAt = i.ClaimedAt.UTC()
	}
	return c
}

// Claim plans the claim of the agent's intent for a runner: once, race-free, since the claim is one
// conditional update that only an open intent passes, whichever replica runs it. The same runner
// claiming again gets its claim again; a claim that loses is explained by what won.
func (r *Runners) Claim(ctx context.Context, plan *write.Plan, agentID, intentID string, in ClaimRequest) (int, any, error) {
	if err := checkDeclaredModel(in.DeclaredModel); err != nil {
		return 0, nil, err
	}
	now := r.now()
	row, err := readIntent(plan.Read, agentID, intentID)
	if err != nil {
		return 0, nil, err
	}
	if row.RunnerID != nil && *row.RunnerID == in.RunnerID {
		return http.StatusOK, row.claim(), nil
	}
	notPolling := func(ctx context.Context, db *gorm.DB) error {
		return r.polling(db.WithContext(ctx), agentID, in.RunnerID, now)
	}
	plan.Check(notPolling, "SELECT count(*) = 1 FROM arena_runners WHERE "+pollingSQL, agentID, in.RunnerID, Online, now.Add(-r.cfg.RunnerTimeout))
	plan.Add(plan.Build().Model(&intentRow{}).Where("id = ? AND state = ? AND expires_at > ?", row.ID, IntentOpen, now).
		Updates(map[string]any{"state": IntentClaimed, "runner_id": in.RunnerID, "declared_model": in.DeclaredModel, "claimed_at": now, "updated_at": now}), 1,
		func(ctx context.Context, db *gorm.DB) error {
			row, err := readIntent(db.WithContext(ctx), agentID, intentID)
			switch {
			case err != nil:
				return err
			case row.RunnerID != nil && *row.RunnerID == in.RunnerID:
				return nil // this runner's claim won on another request: planned again, it answers that claim
			case row.RunnerID != nil:
				return problem.New(problem.IntentAlreadyClaimed, "Another runner claimed this start intent first; a claim is never replaced.")
			case row.State != IntentOpen:
				return problem.Newf(problem.IntentExpired, "This start intent is %s: it can no longer be claimed.", row.State)
			}
			return problem.New(problem.IntentExpired, "This start intent expired before it was claimed.")
		})
	row.State, row.RunnerID, row.DeclaredModel, row.ClaimedAt, row.UpdatedAt = IntentClaimed, &in.RunnerID, in.DeclaredModel, &now, now
	return http.StatusOK, row.claim(), nil
}

// Status plans the claiming runner's state of the intent: forward only, from a fixed list. It decides
// from the intent as read before the write, and the update holds only while the intent is still in the
// state read (every change moves the state forward); otherwise it is decided again from the intent as
// it is then. An intent moves at most three times after its claim, so that converges.
func (r *Runners) Status(ctx context.Context, plan *write.Plan, agentID, intentID string, in StatusRequest) (int, any, error) {
	row, err := readIntent(plan.Read, agentID, intentID)
	if err != nil {
		return 0, nil, err
	}
	same, err := statusFor(row, in)
	if err != nil {
		return 0, nil, err
	}
	if same {
		return http.StatusOK, StatusResponse{IntentID: row.ID, State: row.State, ReasonCode: row.ReasonCode, UpdatedAt: row.UpdatedAt.UTC()}, nil
	}
	now := r.now()
	plan.Add(plan.Build().Model(&intentRow{}).Where("id = ? AND state = ?", row.ID, row.State).
		Updates(map[string]any{"state": in.State, "reason_code": in.ReasonCode, "updated_at": now}), 1,
		func(ctx context.Context, db *gorm.DB) error {
			// Another status moved it first: refused now if this one no longer moves it forward,
			// else decided again.
			row, err := readIntent(db.WithContext(ctx), agentID, intentID)
			if err != nil {
				return err
			}
			_, err = statusFor(row, in)
			return err
		})
	return http.StatusOK, StatusResponse{IntentID: row.ID, State: in.State, ReasonCode: in.ReasonCode, UpdatedAt: now}, nil
}

// statusFor decides a status report on the intent as row holds it: its refusal, or whether it is the
// intent's state and reason already (same: answered as it is), else it moves the intent forward.
func statusFor(row intentRow, in StatusRequest) (same bool, err error) {
	switch {
	case row.RunnerID == nil:
		return false, problem.New(problem.IntentNotClaimed, "No runner claimed this start intent: claim it first.")
	case *row.RunnerID != in.RunnerID:
		return false, problem.New(problem.IntentAlreadyClaimed, "Another runner claimed this start intent: only the claiming runner reports its status.")
	}
	equal := func(a, b *string) bool { return (a == nil && b == nil) || (a != nil && b != nil && *a == *b) }
	if row.State == in.State && equal(row.ReasonCode, in.ReasonCode) {
		return true, nil
	}
	from, to := stateRank[row.State], stateRank[in.State]
	if to <= from || from == stateRank[IntentStopped] {
		return false, problem.Newf(problem.StatusNotForward, "The start intent is %s; a status moves forward only (claimed, starting, running, then stopped or failed).", row.State).With("state", row.State)
	}
	return false, nil
}

// checkDeclaredModel applies the content policy to the one text a runner sends: it reaches the
// operator's console, so no control or bidirectional characters, and never a private key. The schema's
// rule (x-private-key "value") refuses a key first; this is the same rule, for a caller that did not
// decode the claim against it: the field is a whole value, so a bare key alone in it counts too.
func checkDeclaredModel(m *string) error {
	if m == nil {
		return nil
	}
	if privatekey.Is(*m) || privatekey.In(*m) {
		return problem.New(problem.PrivateKeyRefused, "declared_model holds a private key. Private keys are never accepted, in any form or place: make a new one.").With("pointer", "/declared_model")
	}
	if reason, ok := textpolicy.Check(*m, false); !ok {
		return problem.Newf(problem.ContentPolicyViolation, "/declared_model %s.", reason).With("pointer", "/declared_model")
	}
	return nil
}
