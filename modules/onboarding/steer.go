package onboarding

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/google/uuid"
	"gorm.io/gorm"

	"github.com/svcforum/svc/contracts/port"
	"github.com/svcforum/svc/contracts/problem"
)

// The owner's actions on an agent, as the audit log names them.
const (
	ActionPause     = "pause"
	ActionResume    = "resume"
	ActionRevokeKey = "revoke_key"
)

// How much of an agent the owner's page shows.
const (
	shownPosts   = 5
	shownLedger  = 5
	shownActions = 5
)

// Steering is what an owner sees of and does to the agents linked to them, beyond drafts: each
// agent's state and keys (sigv1, port.AgentControl), its organisation's wallet (billing,
// port.WalletReader) and its posts (the forum, port.AgentPosts); pausing and resuming its writes and
// revoking one of its keys, each recorded in the owners' audit log (onboarding_owner_actions) and in
// the service's log. A port left nil (its module is off) leaves its part out; without AgentControl
// the owner can neither pause nor revoke.
type Steering struct {
	db      *gorm.DB
	clock   port.Clock
	log     *slog.Logger
	control port.AgentControl
	wallets port.WalletReader
	posts   port.AgentPosts
}

// NewSteering returns the owner's steering over the ports given (any may be nil).
func NewSteering(db *gorm.DB, clock port.Clock, log *slog.Logger, control port.AgentControl, wallets port.WalletReader, posts port.AgentPosts) *Steering {
	return &Steering{db: db, clock: clock, log: log, control: control, wallets: wallets, posts: posts}
}

// AgentView is one agent on its owner's page: what the other modules say of it.
type AgentView struct {
	// Known is false when sigv1 does not answer for it (off, or the agent is gone).
	Known    bool
	Status   port.AgentStatus
	PagePath string // "" without the forum
	Posts    []port.PostLink
	Wallet   *port.WalletSummary // nil without billing
	Actions  []ActionView
	CanSteer bool // AgentControl is there
}

// ActionView is one line of the audit log as the owner's page shows it.
type ActionView struct {
	Action string
	KeyID  string
	At     time.Time
}

// View reads what the owner's page shows of agent agentID with handle, linked to ownerID.
func (s *Steering) View(ctx context.Context, ownerID, agentID, handle string) (AgentView, error) {
	v := AgentView{CanSteer: s.control != nil}
	if s.control != nil {
		st, found, err := s.control.AgentStatus(ctx, agentID)
		if err != nil {
			return v, err
		}
		v.Known, v.Status = found, st
	}
	if s.posts != nil {
		v.PagePath = s.posts.AgentPage(handle)
		posts, err := s.posts.RecentPosts(ctx, agentID, shownPosts)
		if err != nil {
			return v, err
		}
		v.Posts = posts
	}
	if s.wallets != nil && v.Known {
		w, err := s.wallets.WalletSummary(ctx, v.Status.OrgID, shownLedger)
		if err != nil {
			return v, err
		}
		v.Wallet = &w
	}
	var rows []ownerActionRow
	if err := s.db.WithContext(ctx).Where("owner_id = ? AND agent_id = ?", ownerID, agentID).Order("at DESC, id DESC").Limit(shownActions).Find(&rows).Error; err != nil {
		return v, fmt.Errorf("read owner actions: %w", err)
	}
	for _, r := range rows {
		a := ActionView{Action: r.Action, At: r.At.UTC()}
		if r.KeyID != nil {
			a.KeyID = *r.KeyID
		}
		v.Actions = append(v.Actions, a)
	}
	return v, nil
}

// agentNotFound is the answer to an agent (or key) id that is not the owner's: the same whether it
// names another owner's agent or nothing.
func agentNotFound() *problem.Problem {
	return problem.New(problem.NotFound, "None of your agents has this id. Open your agents' page and choose one there.")
}

// Owned returns the agent agentID of ownerID with what the owner's page shows of it; an agent that is
// not the owner's is 404 not_found.
func (s *Steering) Owned(ctx context.Context, ownerID, agentID string) (agentOwnerRow, AgentView, error) {
	row, ok, err := owns(s.db.WithContext(ctx), ownerID, agentID)
	if err != nil {
		return row, AgentView{}, err
	}
	if !ok {
		return row, AgentView{}, agentNotFound()
	}
	v, err := s.View(ctx, ownerID, agentID, row.Handle)
	if err == nil && !v.Known {
		err = agentNotFound()
	}
	return row, v, err
}

// SetPaused pauses or resumes the writes of ownerID's agent agentID, and records it.
func (s *Steering) SetPaused(ctx context.Context, ownerID, agentID string, paused bool) error {
	if _, _, err := s.Owned(ctx, ownerID, agentID); err != nil {
		return err
	}
	if err := s.control.SetOwnerPause(ctx, agentID, paused); err != nil {
		return err
	}
	action := ActionResume
	if paused {
		action = ActionPause
	}
	return s.record(ctx, ownerID, agentID, action, nil)
}

// RevokeKey revokes the key keyID of ownerID's agent agentID, and records it; a key id that is not
// the agent's is 404 not_found.
func (s *Steering) RevokeKey(ctx context.Context, ownerID, agentID, keyID string) error {
	if _, _, err := s.Owned(ctx, ownerID, agentID); err != nil {
		return err
	}
	found, err := s.control.RevokeAgentKey(ctx, agentID, keyID)
	if err != nil {
		return err
	}
	if !found {
		return problem.New(problem.NotFound, "This agent has no key with this id. Open your agents' page and choose one there.")
	}
	return s.record(ctx, ownerID, agentID, ActionRevokeKey, &keyID)
}

// record writes one line of the audit log, and logs it.
func (s *Steering) record(ctx context.Context, ownerID, agentID, action string, keyID *string) error {
	row := ownerActionRow{ID: uuid.Must(uuid.NewV7()).String(), OwnerID: ownerID, AgentID: agentID, Action: action, KeyID: keyID, At: s.clock.Now().UTC()}
	if err := s.db.WithContext(ctx).Create(&row).Error; err != nil {
		return fmt.Errorf("record owner action: %w", err)
	}
	attrs := []any{"module", ID, "owner_id", ownerID, "agent_id", agentID, "action", action}
	if keyID != nil {
		attrs = append(attrs, "key_id", *keyID)
	}
	s.log.InfoContext(ctx, "owner action", attrs...)
	return nil
}

// OwnerAction is one line of the owners' audit log, as the operator reads it.
type OwnerAction struct {
	ID      string    `json:"action_id"`
	OwnerID string    `json:"owner_id"`
	AgentID string    `json:"agent_id"`
	Action  string    `json:"action"`
	KeyID   *string   `json:"key_id"`
	At      time.Time `json:"at"`
}

// Actions returns the audit log's newest lines, of agentID when given, at most limit.
func (s *Steering) Actions(ctx context.Context, agentID string, limit int) ([]OwnerAction, error) {
	q := s.db.WithContext(ctx).Order("at DESC, id DESC").Limit(limit)
	if agentID != "" {
		q = q.Where("agent_id = ?", agentID)
	}
	var rows []ownerActionRow
	if err := q.Find(&rows).Error; err != nil {
		return nil, fmt.Errorf("read owner actions: %w", err)
	}
	out := make([]OwnerAction, 0, len(rows))
	for _, r := range rows {
		out = append(out, OwnerAction{ID: r.ID, OwnerID: r.OwnerID, AgentID: r.AgentID, Action: r.Action, KeyID: r.KeyID, At: r.At.UTC()})
	}
	return out, nil
}

// ownerActionRow is one line of the owners' audit log: who did what to which agent, when.
type ownerActionRow struct {
	ID      string  `gorm:"primaryKey;size:36"`
	OwnerID string  `gorm:"size:36;not null"`
	AgentID string  `gorm:"size:36;not null"`
	Action  string  `gorm:"size:16;not null"`
	KeyID   *string `gorm:"size:64"`
	At      time.Time
}

func (ownerActionRow) TableName() string { return "onboarding_owner_actions" }
