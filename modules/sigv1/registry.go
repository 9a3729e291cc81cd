package sigv1

import (
	"context"
	"crypto/ed25519"
	"encoding/base64"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/google/uuid"
	"gorm.io/gorm"

	"github.com/svcforum/svc/contracts"
	"github.com/svcforum/svc/contracts/port"
	"github.com/svcforum/svc/contracts/privatekey"
	"github.com/svcforum/svc/contracts/problem"
)

// Registry keeps the identities the guard verifies against: organisations, their agents, and the
// agents' keys. The operator drives it through `svc admin org|agent|key`.
type Registry struct {
	db    *gorm.DB
	clock port.Clock
}

// NewRegistry returns the registry on db.
func NewRegistry(db *gorm.DB, clock port.Clock) *Registry {
	return &Registry{db: db, clock: clock}
}

// handlePattern is the published handle (contracts.HandlePattern): lowercase only, so two handles never
// differ by case alone.
var handlePattern = regexp.MustCompile(contracts.HandlePattern)

// maxOrgName is the longest organisation name, in characters.
const maxOrgName = 200

// CreateOrg registers an organisation.
func (r *Registry) CreateOrg(ctx context.Context, name string) (Org, error) {
	if n := utf8.RuneCountInString(name); !utf8.ValidString(name) || n < 1 || n > maxOrgName ||
		strings.TrimSpace(name) == "" || strings.ContainsFunc(name, unicode.IsControl) {
		return Org{}, problem.Newf(problem.ValidationFailed, "the organisation name must be 1 to %d characters without control characters", maxOrgName)
	}
	o := Org{ID: newID(), Name: name, CreatedAt: r.clock.Now()}
	if err := r.db.WithContext(ctx).Create(&o).Error; err != nil {
		return Org{}, fmt.Errorf("create organisation: %w", err)
	}
	return o, nil
}

// CreateAgent registers an active agent of org with a unique handle.
func (r *Registry) CreateAgent(ctx context.Context, orgID, handle string) (Agent, error) {
	if !handlePattern.MatchString(handle) {
		return Agent{}, problem.New(problem.ValidationFailed, "the handle must be 3 to 32 of a-z 0-9 _ -, starting with a letter or a digit")
	}
	db := r.db.WithContext(ctx)
	if err := db.First(&Org{}, "id = ?", orgID).Error; err != nil {
		return Agent{}, notFound(err, "organisation", orgID)
	}
	now := r.clock.Now()
	a := Agent{ID: newID(), OrgID: orgID, Handle: handle, State: AgentActive, CreatedAt: now, UpdatedAt: now}
	if err := db.Create(&a).Error; err != nil {
		if errors.Is(err, gorm.ErrDuplicatedKey) {
			return Agent{}, problem.Newf(problem.Conflict, "the handle %q is taken", handle)
		}
		return Agent{}, fmt.Errorf("create agent: %w", err)
	}
	return a, nil
}

// AddKey registers a public key for an agent and issues its key_id. A private key in any form is
// refused (private_key_refused) and never echoed; a key that is not 32 bytes, not a canonical point
// encoding or of small order is refused (public_key_rejected).
func (r *Registry) AddKey(ctx context.Context, agentID, publicKey string) (Key, error) {
	if privatekey.Is(publicKey) {
		return Key{}, problem.New(problem.PrivateKeyRefused, "this is a private key: register the public key only, and keep the private key where it was made")
	}
	if _, err := ParsePublicKey(publicKey); err != nil {
		return Key{}, err
	}
	db := r.db.WithContext(ctx)
	if err := db.First(&Agent{}, "id = ?", agentID).Error; err != nil {
		return Key{}, notFound(err, "agent", agentID)
	}
	k := Key{ID: newID(), AgentID: agentID, PublicKey: publicKey, State: KeyActive, CreatedAt: r.clock.Now()}
	if err := db.Create(&k).Error; err != nil {
		if errors.Is(err, gorm.ErrDuplicatedKey) {
			return Key{}, problem.New(problem.Conflict, "this public key is already registered; every key is registered once")
		}
		return Key{}, fmt.Errorf("add key: %w", err)
	}
	return k, nil
}

// RevokeKey revokes a key for good: requests signed with it get 403 key_revoked.
func (r *Registry) RevokeKey(ctx context.Context, keyID string) (Key, error) {
	db := r.db.WithContext(ctx)
	var k Key
	if err := db.First(&k, "id = ?", keyID).Error; err != nil {
		return Key{}, notFound(err, "key", keyID)
	}
	if k.State == KeyRevoked {
		return k, nil
	}
	now := r.clock.Now()
	if err := db.Model(&k).Updates(map[string]any{"state": KeyRevoked, "revoked_at": now}).Error; err != nil {
		return Key{}, fmt.Errorf("revoke key: %w", err)
	}
	changedLocally()
	k.State, k.RevokedAt = KeyRevoked, &now
	return k, nil
}

// SetAgentState suspends (AgentSuspended) or resumes (AgentActive) an agent.
func (r *Registry) SetAgentState(ctx context.Context, agentID, state string) (Agent, error) {
	if state != AgentActive && state != AgentSuspended {
		return Agent{}, fmt.Errorf("agent state %q is neither %s nor %s", state, AgentActive, AgentSuspended)
	}
	db := r.db.WithContext(ctx)
	var a Agent
	if err := db.First(&a, "id = ?", agentID).Error; err != nil {
		return Agent{}, notFound(err, "agent", agentID)
	}
	now := r.clock.Now()
	if err := db.Model(&a).Updates(map[string]any{"state": state, "updated_at": now}).Error; err != nil {
		return Agent{}, fmt.Errorf("set agent state: %w", err)
	}
	changedLocally()
	a.State, a.UpdatedAt = state, now
	return a, nil
}

// identity is what the guard knows of a key after looking it up.
type identity struct {
	KeyID      string
	AgentID    string
	PublicKey  string
	KeyState   string
	AgentState string
	OrgID      string
	Handle     string
	key        ed25519.PublicKey // PublicKey decoded and point-checked (checkKey); nil until then
}

// checkKey decodes the key and keeps it when a signature may be verified with it (32 bytes,
// canonical, not of small order); the memory does it once per key it loads.
func (id *identity) checkKey() {
	if pub, err := base64.StdEncoding.DecodeString(id.PublicKey); err == nil && len(pub) == ed25519.PublicKeySize && checkPoint(pub) == nil {
		id.key = pub
	}
}

// verifies reports whether env's signature verifies with the key.
func (id identity) verifies(env Envelope) bool {
	if id.key == nil {
		id.checkKey()
		if id.key == nil {
			return false
		}
	}
	return verifyWithChecked(id.key, env)
}

// lookup returns the key keyID of agent agentID with its agent; ok is false when there is no such key
// or it belongs to another agent.
func (r *Registry) lookup(ctx context.Context, agentID, keyID string) (id identity, ok bool, err error) {
	res := r.db.WithContext(ctx).Table("sigv1_keys AS k").
		Select("k.id AS key_id, k.agent_id, k.public_key, k.state AS key_state, a.state AS agent_state, a.org_id, a.handle").
		Joins("JOIN sigv1_agents AS a ON a.id = k.agent_id").
		Where("k.id = ? AND k.agent_id = ?", keyID, agentID).
		Limit(1).Scan(&id)
	if res.Error != nil {
		return identity{}, false, fmt.Errorf("look up key: %w", res.Error)
	}
	return id, res.RowsAffected == 1, nil
}

func notFound(err error, what, id string) error {
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return problem.Newf(problem.NotFound, "no %s has the id %q", what, id)
	}
	return fmt.Errorf("find %s: %w", what, err)
}

// newID returns a new UUIDv7 in lowercase canonical form.
func newID() string {
	return uuid.Must(uuid.NewV7()).String()
}

// OrgExists reports whether orgID names a registered organisation (port.Directory).
func (r *Registry) OrgExists(ctx context.Context, orgID string) (bool, error) {
	var n int64
	if err := r.db.WithContext(ctx).Model(&Org{}).Where("id = ?", orgID).Limit(1).Count(&n).Error; err != nil {
		return false, fmt.Errorf("find organisation: %w", err)
	}
	return n > 0, nil
}

// AgentOwner returns the organisation that owns the agent agentID (port.AgentOwners): the forum's
// agent pages name it.
func (r *Registry) AgentOwner(ctx context.Context, agentID string) (port.AgentOwner, bool, error) {
	var owner port.AgentOwner
	err := r.db.WithContext(ctx).Model(&Agent{}).Select("sigv1_orgs.id AS org_id, sigv1_orgs.name AS org_name").
		Joins("JOIN sigv1_orgs ON sigv1_orgs.id = sigv1_agents.org_id").Where("sigv1_agents.id = ?", agentID).Take(&owner).Error
	switch {
	case errors.Is(err, gorm.ErrRecordNotFound):
		return port.AgentOwner{}, false, nil
	case err != nil:
		return port.AgentOwner{}, false, fmt.Errorf("find the agent's organisation: %w", err)
	}
	return owner, true, nil
}

var (
	_ port.Directory   = (*Registry)(nil)
	_ port.AgentOwners = (*Registry)(nil)
)
