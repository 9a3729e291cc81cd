package sigv1

import (
	"context"
	"fmt"
	"time"

	"github.com/svcforum/svc/contracts/port"
)

// OwnerControl is what an agent's owner may do through sigv1 (port.AgentControl, which the onboarding
// module's owner pages consume): read the agent's state and keys, pause and resume its writes with a
// switch of its own (ownerPauseSwitch, distinct from the operator's freezes and suspension), and revoke
// one of its keys as the operator's `key revoke` does.
type OwnerControl struct {
	r *Registry
	s *Switches
}

// NewOwnerControl returns the owner's controls over the registry and the switches.
func NewOwnerControl(r *Registry, s *Switches) *OwnerControl { return &OwnerControl{r: r, s: s} }

// AgentStatus returns the agent, its organisation, its owner's pause and its keys, newest first.
func (o *OwnerControl) AgentStatus(ctx context.Context, agentID string) (port.AgentStatus, bool, error) {
	var rows []agentRow
	if err := o.r.agentQuery(ctx).Where("a.id = ?", agentID).Scan(&rows).Error; err != nil {
		return port.AgentStatus{}, false, fmt.Errorf("read agent: %w", err)
	}
	if len(rows) != 1 {
		return port.AgentStatus{}, false, nil
	}
	a := rows[0]
	st := port.AgentStatus{AgentID: a.ID, Handle: a.Handle, OrgID: a.OrgID, OrgName: a.OrgName, Suspended: a.State != AgentActive, Keys: []port.AgentKey{}}
	var pause []switchRow
	if err := o.r.db.WithContext(ctx).Where("name = ?", ownerPauseSwitch(agentID)).Limit(1).Find(&pause).Error; err != nil {
		return st, false, fmt.Errorf("read the owner's pause: %w", err)
	}
	if len(pause) == 1 {
		at := pause[0].SetAt.UTC()
		st.PausedAt = &at
	}
	var keys []Key
	if err := o.r.db.WithContext(ctx).Where("agent_id = ?", agentID).Order("created_at DESC, id DESC").Find(&keys).Error; err != nil {
		return st, false, fmt.Errorf("read the agent's keys: %w", err)
	}
	for _, k := range keys {
		var revoked *time.Time
		if k.RevokedAt != nil {
			at := k.RevokedAt.UTC()
			revoked = &at
		}
		st.Keys = append(st.Keys, port.AgentKey{KeyID: k.ID, State: k.State, CreatedAt: k.CreatedAt.UTC(), RevokedAt: revoked})
	}
	return st, true, nil
}

// SetOwnerPause turns the owner's pause of agentID on or off. The agent must exist.
func (o *OwnerControl) SetOwnerPause(ctx context.Context, agentID string, paused bool) error {
	if err := o.r.db.WithContext(ctx).First(&Agent{}, "id = ?", agentID).Error; err != nil {
		return notFound(err, "agent", agentID)
	}
	return o.s.set(ctx, ownerPauseSwitch(agentID), paused)
}

// RevokeAgentKey revokes keyID when it is a key of agentID (Registry.RevokeKey, the operator's path).
func (o *OwnerControl) RevokeAgentKey(ctx context.Context, agentID, keyID string) (bool, error) {
	var n int64
	if err := o.r.db.WithContext(ctx).Model(&Key{}).Where("id = ? AND agent_id = ?", keyID, agentID).Limit(1).Count(&n).Error; err != nil {
		return false, fmt.Errorf("find key: %w", err)
	}
	if n == 0 {
		return false, nil
	}
	if _, err := o.r.RevokeKey(ctx, keyID); err != nil {
		return false, err
	}
	return true, nil
}

var _ port.AgentControl = (*OwnerControl)(nil)
