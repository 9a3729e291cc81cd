package sigv1

import (
	"context"
	"fmt"
	"slices"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"

	"github.com/svcforum/svc/contracts/plugin"
	"github.com/svcforum/svc/contracts/port"
	"github.com/svcforum/svc/contracts/problem"
)

// Switches are the operator's switches, kept in the database (and in every replica's Memory, within
// StaleBound of a change): the channel gates, the global writes pause, and frozen writes (global, per
// organisation, per agent). A switch is on while its row exists.
type Switches struct {
	db    *gorm.DB
	clock port.Clock
}

// NewSwitches returns the switches on db.
func NewSwitches(db *gorm.DB, clock port.Clock) *Switches {
	return &Switches{db: db, clock: clock}
}

// Channels are the agent channels a gate can close.
var Channels = []string{plugin.ChannelEdge, plugin.ChannelPrivate}

// The scopes of a freeze.
const (
	ScopeAll   = "all"
	ScopeOrg   = "org"
	ScopeAgent = "agent"
)

const pausedSwitch = "writes:paused"

// pausedRetryAfter is the Retry-After of writes_unavailable: a pause is an operator's act, lifted in
// minutes rather than seconds, so clients are asked not to hammer.
const pausedRetryAfter = 30

// ownerPauseSwitch is on while the agent's owner has paused its writes (403 agent_paused). It is the
// owner's own switch: the operator's freezes, suspension and their lifting never touch it, and the
// owner can lift nothing else.
func ownerPauseSwitch(agentID string) string { return "owner-pause:" + agentID }

func gateSwitch(channel string) string { return "gate:" + channel + ":closed" }

func freezeSwitch(scope, id string) string {
	if scope == ScopeAll {
		return "freeze:all"
	}
	return "freeze:" + scope + ":" + id
}

// SetGate opens or closes the gate of an agent channel; a closed gate answers 503 channel_closed.
func (s *Switches) SetGate(ctx context.Context, channel string, open bool) error {
	if !slices.Contains(Channels, channel) {
		return problem.Newf(problem.ValidationFailed, "unknown channel %q: the channels are %s and %s", channel, plugin.ChannelEdge, plugin.ChannelPrivate)
	}
	return s.set(ctx, gateSwitch(channel), !open)
}

// GateOpen reports whether the gate of channel is open.
func (s *Switches) GateOpen(ctx context.Context, channel string) (bool, error) {
	on, err := s.on(ctx, gateSwitch(channel))
	return !on, err
}

// SetFrozen freezes or unfreezes writes in scope (ScopeAll, or ScopeOrg/ScopeAgent with the id, which
// must exist). Frozen writes get 403 writes_frozen; reads go on.
func (s *Switches) SetFrozen(ctx context.Context, scope, id string, frozen bool) error {
	switch scope {
	case ScopeAll:
	case ScopeOrg:
		if err := s.db.WithContext(ctx).First(&Org{}, "id = ?", id).Error; err != nil {
			return notFound(err, "organisation", id)
		}
	case ScopeAgent:
		if err := s.db.WithContext(ctx).First(&Agent{}, "id = ?", id).Error; err != nil {
			return notFound(err, "agent", id)
		}
	default:
		return fmt.Errorf("freeze scope %q is not %s, %s or %s", scope, ScopeAll, ScopeOrg, ScopeAgent)
	}
	return s.set(ctx, freezeSwitch(scope, id), frozen)
}

// SetPaused turns "signed agent writes temporarily unavailable" on or off: while on, every write gets
// 503 writes_unavailable.
func (s *Switches) SetPaused(ctx context.Context, paused bool) error {
	return s.set(ctx, pausedSwitch, paused)
}

// writeBlock returns the problem that stops a write by agentID of orgID right now, or nil (see blockOf).
func (s *Switches) writeBlock(ctx context.Context, agentID, orgID string) (*problem.Problem, error) {
	var on []string
	if err := s.db.WithContext(ctx).Model(&switchRow{}).Where("name IN ?", blockSwitches(agentID, orgID)).Pluck("name", &on).Error; err != nil {
		return nil, fmt.Errorf("read switches: %w", err)
	}
	return blockOf(agentID, orgID, func(name string) bool { return slices.Contains(on, name) }), nil
}

// blockSwitches are the switches that can stop a write by agentID of orgID, in blockOf's order.
func blockSwitches(agentID, orgID string) []string {
	return []string{freezeSwitch(ScopeAgent, agentID), freezeSwitch(ScopeOrg, orgID), freezeSwitch(ScopeAll, ""), ownerPauseSwitch(agentID), pausedSwitch}
}

// blockOf returns the problem that stops a write by agentID of orgID when the switches for which on
// is true are on, or nil: a freeze (the agent's, then its organisation's, then the global one: 403),
// then its owner's pause (403 agent_paused: the operator's refusals come first, as only the operator
// lifts them), then the operator's pause (503).
func blockOf(agentID, orgID string, on func(name string) bool) *problem.Problem {
	for i, name := range blockSwitches(agentID, orgID) {
		if !on(name) {
			continue
		}
		switch i {
		case 0:
			return problem.New(problem.WritesFrozen, "Writes by this agent are frozen by the operator.").With("scope", ScopeAgent)
		case 1:
			return problem.New(problem.WritesFrozen, "Writes by this agent's organisation are frozen by the operator.").With("scope", ScopeOrg)
		case 2:
			return problem.New(problem.WritesFrozen, "Writes are frozen service-wide by the operator.").With("scope", ScopeAll)
		case 3:
			return problem.New(problem.AgentPaused, "This agent's writes are paused by its owner: only the owner can resume them, on the owner's page. Reads go on.")
		default:
			return problem.New(problem.WritesUnavailable, "Signed agent writes are temporarily unavailable; retry later.").With("retry_after_seconds", pausedRetryAfter)
		}
	}
	return nil
}

func (s *Switches) on(ctx context.Context, name string) (bool, error) {
	var n int64
	if err := s.db.WithContext(ctx).Model(&switchRow{}).Where("name = ?", name).Limit(1).Count(&n).Error; err != nil {
		return false, fmt.Errorf("read switch: %w", err)
	}
	return n > 0, nil
}

func (s *Switches) set(ctx context.Context, name string, on bool) error {
	db := s.db.WithContext(ctx)
	var err error
	if on {
		err = db.Clauses(clause.OnConflict{DoNothing: true}).Create(&switchRow{Name: name, SetAt: s.clock.Now()}).Error
	} else {
		err = db.Where("name = ?", name).Delete(&switchRow{}).Error
	}
	if err != nil {
		return fmt.Errorf("set switch %s: %w", name, err)
	}
	changedLocally()
	return nil
}
