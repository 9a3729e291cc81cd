package sigv1

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"slices"
	"strings"
	"time"

	"gorm.io/gorm"

	"github.com/svcforum/svc/contracts/problem"
)

// What the operator's list and show commands print about organisations, agents and keys: ids, names
// and handles, states, times and key fingerprints. Never a private key: the registry holds none.

// The states an organisation is listed in: its writes are frozen (`svc admin writes freeze --org`) or
// not.
const (
	OrgActive = "active"
	OrgFrozen = "frozen"
)

// Listing bounds of --limit.
const (
	DefaultListLimit = 50
	MaxListLimit     = 1000
)

// OrgView is an organisation as the operator sees it.
type OrgView struct {
	ID        string    `json:"org_id"`
	Name      string    `json:"name"`
	State     string    `json:"state"`
	Agents    int64     `json:"agents"`
	CreatedAt time.Time `json:"created_at"`
}

// OrgDetail is what `org show` prints: the organisation and every one of its agents.
type OrgDetail struct {
	OrgView
	AgentList []AgentView `json:"agent_list"`
}

// AgentView is an agent as the operator sees it.
type AgentView struct {
	ID           string `json:"agent_id"`
	Handle       string `json:"handle"`
	OrgID        string `json:"org_id"`
	OrgName      string `json:"org_name"`
	State        string `json:"state"`
	WritesFrozen bool   `json:"writes_frozen"`
	// PausedByOwner: the agent's owner paused its writes (403 agent_paused); only the owner resumes it.
	PausedByOwner bool      `json:"paused_by_owner"`
	ActiveKeys    int64     `json:"active_keys"`
	CreatedAt     time.Time `json:"created_at"`
	UpdatedAt     time.Time `json:"updated_at"`
}

// AgentDetail is what `agent show` prints: the agent and every one of its keys.
type AgentDetail struct {
	AgentView
	Keys []KeyView `json:"keys"`
}

// KeyView is a registered public key as the operator sees it, by its fingerprint.
type KeyView struct {
	ID          string     `json:"key_id"`
	AgentID     string     `json:"agent_id"`
	Handle      string     `json:"handle"`
	State       string     `json:"state"`
	Fingerprint string     `json:"fingerprint"`
	CreatedAt   time.Time  `json:"created_at"`
	RevokedAt   *time.Time `json:"revoked_at"`
}

// KeyDetail is what `key show` prints: the key with the public key itself.
type KeyDetail struct {
	KeyView
	PublicKey string `json:"public_key"`
}

// ListFilter narrows a list; empty members do not filter. Limit is 1..MaxListLimit.
type ListFilter struct {
	Org    string // agents: this organisation's
	Agent  string // keys: this agent's
	Name   string // organisations: the name contains it (any case)
	Handle string // agents: the handle contains it
	State  string
	Limit  int
}

// KeyFingerprint identifies a public key briefly: "SHA256:" and the unpadded standard base64 of the
// SHA-256 of its 32 raw bytes (the form OpenSSH prints, over the raw key rather than its SSH encoding).
func KeyFingerprint(publicKey string) string {
	raw, err := base64.StdEncoding.DecodeString(publicKey)
	if err != nil {
		raw = []byte(publicKey)
	}
	sum := sha256.Sum256(raw)
	return "SHA256:" + base64.RawStdEncoding.EncodeToString(sum[:])
}

func (f ListFilter) check(states ...string) error {
	if f.Limit < 1 || f.Limit > MaxListLimit {
		return problem.Newf(problem.ValidationFailed, "--limit must be 1 to %d, got %d", MaxListLimit, f.Limit)
	}
	if f.State != "" && !slices.Contains(states, f.State) {
		return problem.Newf(problem.ValidationFailed, "--state must be %s, got %q", strings.Join(states, " or "), f.State)
	}
	return nil
}

// likeContains is a LIKE pattern matching any text that contains s literally.
func likeContains(s string) string {
	r := strings.NewReplacer(`\`, `\\`, `%`, `\%`, `_`, `\_`)
	return "%" + r.Replace(s) + "%"
}

// frozenExpr is 1 when the freeze switch of the scope's row (alias.id) is on, else 0.
func frozenExpr(scope, alias string) string {
	return "CASE WHEN EXISTS (SELECT 1 FROM " + switchRow{}.TableName() + " AS s WHERE s.name = '" + freezeSwitch(scope, "") + "' || " + alias + ".id) THEN 1 ELSE 0 END"
}

type orgRow struct {
	ID        string
	Name      string
	Frozen    int
	Agents    int64
	CreatedAt time.Time
}

func (r orgRow) view() OrgView {
	state := OrgActive
	if r.Frozen == 1 {
		state = OrgFrozen
	}
	return OrgView{ID: r.ID, Name: r.Name, State: state, Agents: r.Agents, CreatedAt: r.CreatedAt.UTC()}
}

func (r *Registry) orgQuery(ctx context.Context) *gorm.DB {
	return r.db.WithContext(ctx).Table("sigv1_orgs AS o").
		Select("o.id, o.name, o.created_at, " + frozenExpr(ScopeOrg, "o") + " AS frozen, " +
			"(SELECT COUNT(*) FROM sigv1_agents AS a WHERE a.org_id = o.id) AS agents")
}

// ListOrgs returns organisations newest first, at most f.Limit, and whether more match.
func (r *Registry) ListOrgs(ctx context.Context, f ListFilter) ([]OrgView, bool, error) {
	if err := f.check(OrgActive, OrgFrozen); err != nil {
		return nil, false, err
	}
	q := r.orgQuery(ctx)
	if f.Name != "" {
		q = q.Where(`LOWER(o.name) LIKE ? ESCAPE '\'`, likeContains(strings.ToLower(f.Name)))
	}
	switch f.State {
	case OrgFrozen:
		q = q.Where(frozenExpr(ScopeOrg, "o") + " = 1")
	case OrgActive:
		q = q.Where(frozenExpr(ScopeOrg, "o") + " = 0")
	}
	var rows []orgRow
	if err := q.Order("o.created_at DESC, o.id DESC").Limit(f.Limit + 1).Scan(&rows).Error; err != nil {
		return nil, false, fmt.Errorf("list organisations: %w", err)
	}
	more := len(rows) > f.Limit
	out := make([]OrgView, 0, min(len(rows), f.Limit))
	for _, row := range rows[:min(len(rows), f.Limit)] {
		out = append(out, row.view())
	}
	return out, more, nil
}

// ShowOrg returns one organisation with every one of its agents, newest first.
func (r *Registry) ShowOrg(ctx context.Context, orgID string) (OrgDetail, error) {
	var rows []orgRow
	if err := r.orgQuery(ctx).Where("o.id = ?", orgID).Scan(&rows).Error; err != nil {
		return OrgDetail{}, fmt.Errorf("show organisation: %w", err)
	}
	if len(rows) != 1 {
		return OrgDetail{}, notFound(gorm.ErrRecordNotFound, "organisation", orgID)
	}
	o := OrgDetail{OrgView: rows[0].view()}
	var agents []agentRow
	if err := r.agentQuery(ctx).Where("a.org_id = ?", orgID).Order("a.created_at DESC, a.id DESC").Scan(&agents).Error; err != nil {
		return OrgDetail{}, fmt.Errorf("list the organisation's agents: %w", err)
	}
	o.AgentList = make([]AgentView, len(agents))
	for i, a := range agents {
		o.AgentList[i] = a.view()
	}
	return o, nil
}

type agentRow struct {
	ID         string
	Handle     string
	OrgID      string
	OrgName    string
	State      string
	Frozen     int
	Paused     int
	ActiveKeys int64
	CreatedAt  time.Time
	UpdatedAt  time.Time
}

func (r agentRow) view() AgentView {
	return AgentView{ID: r.ID, Handle: r.Handle, OrgID: r.OrgID, OrgName: r.OrgName, State: r.State, WritesFrozen: r.Frozen == 1, PausedByOwner: r.Paused == 1,
		ActiveKeys: r.ActiveKeys, CreatedAt: r.CreatedAt.UTC(), UpdatedAt: r.UpdatedAt.UTC()}
}

func (r *Registry) agentQuery(ctx context.Context) *gorm.DB {
	return r.db.WithContext(ctx).Table("sigv1_agents AS a").
		Joins("JOIN sigv1_orgs AS o ON o.id = a.org_id").
		Select("a.id, a.handle, a.org_id, o.name AS org_name, a.state, a.created_at, a.updated_at, " +
			frozenExpr(ScopeAgent, "a") + " AS frozen, " +
			"CASE WHEN EXISTS (SELECT 1 FROM " + switchRow{}.TableName() + " AS p WHERE p.name = '" + ownerPauseSwitch("") + "' || a.id) THEN 1 ELSE 0 END AS paused, " +
			"(SELECT COUNT(*) FROM sigv1_keys AS k WHERE k.agent_id = a.id AND k.state = '" + KeyActive + "') AS active_keys")
}

// ListAgents returns agents newest first, at most f.Limit, and whether more match.
func (r *Registry) ListAgents(ctx context.Context, f ListFilter) ([]AgentView, bool, error) {
	if err := f.check(AgentActive, AgentSuspended); err != nil {
		return nil, false, err
	}
	q := r.agentQuery(ctx)
	if f.Org != "" {
		q = q.Where("a.org_id = ?", f.Org)
	}
	if f.Handle != "" {
		q = q.Where(`a.handle LIKE ? ESCAPE '\'`, likeContains(strings.ToLower(f.Handle)))
	}
	if f.State != "" {
		q = q.Where("a.state = ?", f.State)
	}
	var rows []agentRow
	if err := q.Order("a.created_at DESC, a.id DESC").Limit(f.Limit + 1).Scan(&rows).Error; err != nil {
		return nil, false, fmt.Errorf("list agents: %w", err)
	}
	more := len(rows) > f.Limit
	out := make([]AgentView, 0, min(len(rows), f.Limit))
	for _, row := range rows[:min(len(rows), f.Limit)] {
		out = append(out, row.view())
	}
	return out, more, nil
}

// ShowAgent returns one agent, named by its agent_id or, when agentID is empty, by its handle, with
// every one of its keys, newest first.
func (r *Registry) ShowAgent(ctx context.Context, agentID, handle string) (AgentDetail, error) {
	q := r.agentQuery(ctx).Where("a.id = ?", agentID)
	if agentID == "" {
		q = r.agentQuery(ctx).Where("a.handle = ?", handle)
	}
	var rows []agentRow
	if err := q.Scan(&rows).Error; err != nil {
		return AgentDetail{}, fmt.Errorf("show agent: %w", err)
	}
	if len(rows) != 1 {
		if agentID == "" {
			return AgentDetail{}, problem.Newf(problem.NotFound, "no agent has the handle %q", handle)
		}
		return AgentDetail{}, notFound(gorm.ErrRecordNotFound, "agent", agentID)
	}
	a := AgentDetail{AgentView: rows[0].view()}
	var keys []keyRow
	if err := r.keyQuery(ctx).Where("k.agent_id = ?", a.ID).Order("k.created_at DESC, k.id DESC").Scan(&keys).Error; err != nil {
		return AgentDetail{}, fmt.Errorf("list the agent's keys: %w", err)
	}
	a.Keys = make([]KeyView, len(keys))
	for i, k := range keys {
		a.Keys[i] = k.view()
	}
	return a, nil
}

type keyRow struct {
	ID        string
	AgentID   string
	Handle    string
	PublicKey string
	State     string
	CreatedAt time.Time
	RevokedAt *time.Time
}

func (r keyRow) view() KeyView {
	k := KeyView{ID: r.ID, AgentID: r.AgentID, Handle: r.Handle, State: r.State, Fingerprint: KeyFingerprint(r.PublicKey),
		CreatedAt: r.CreatedAt.UTC()}
	if r.RevokedAt != nil {
		t := r.RevokedAt.UTC()
		k.RevokedAt = &t
	}
	return k
}

func (r *Registry) keyQuery(ctx context.Context) *gorm.DB {
	return r.db.WithContext(ctx).Table("sigv1_keys AS k").
		Joins("JOIN sigv1_agents AS a ON a.id = k.agent_id").
		Select("k.id, k.agent_id, a.handle, k.public_key, k.state, k.created_at, k.revoked_at")
}

// ListKeys returns keys newest first, at most f.Limit, and whether more match.
func (r *Registry) ListKeys(ctx context.Context, f ListFilter) ([]KeyView, bool, error) {
	if err := f.check(KeyActive, KeyRevoked); err != nil {
		return nil, false, err
	}
	q := r.keyQuery(ctx)
	if f.Agent != "" {
		q = q.Where("k.agent_id = ?", f.Agent)
	}
	if f.State != "" {
		q = q.Where("k.state = ?", f.State)
	}
	var rows []keyRow
	if err := q.Order("k.created_at DESC, k.id DESC").Limit(f.Limit + 1).Scan(&rows).Error; err != nil {
		return nil, false, fmt.Errorf("list keys: %w", err)
	}
	more := len(rows) > f.Limit
	out := make([]KeyView, 0, min(len(rows), f.Limit))
	for _, row := range rows[:min(len(rows), f.Limit)] {
		out = append(out, row.view())
	}
	return out, more, nil
}

// ShowKey returns one key with its public key.
func (r *Registry) ShowKey(ctx context.Context, keyID string) (KeyDetail, error) {
	var rows []keyRow
	if err := r.keyQuery(ctx).Where("k.id = ?", keyID).Scan(&rows).Error; err != nil {
		return KeyDetail{}, fmt.Errorf("show key: %w", err)
	}
	if len(rows) != 1 {
		return KeyDetail{}, notFound(gorm.ErrRecordNotFound, "key", keyID)
	}
	return KeyDetail{KeyView: rows[0].view(), PublicKey: rows[0].PublicKey}, nil
}
