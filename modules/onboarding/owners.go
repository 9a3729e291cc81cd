package onboarding

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/svcforum/svc/contracts/write"

	"github.com/google/uuid"
	"gorm.io/gorm"
	"gorm.io/gorm/clause"

	"github.com/svcforum/svc/contracts/plugin"
	"github.com/svcforum/svc/contracts/port"
	"github.com/svcforum/svc/contracts/problem"
	"github.com/svcforum/svc/contracts/schema"
)

// The owner's paths, on the public listener.
const (
	OwnerPath     = "/owner"
	SignInPath    = "/owner/sign-in"
	SignOutPath   = "/owner/sign-out"
	OwnerLinkPath = "/owner/links/"
	DraftsPath    = "/owner/drafts"
)

// Owners are the people who own agents (WIRE.md section 11): accounts identified by a confirmed
// address, their sign-in by a mailed one-time link, the agents they own and the links agents ask for.
type Owners struct {
	db         *gorm.DB
	cfg        Config
	clock      port.Clock
	log        *slog.Logger
	deployment *plugin.Deployment
	limits     port.Limits
	mailer     *Mailer
	schemas    *schema.Set
}

// NewOwners returns the owners' logic.
func NewOwners(db *gorm.DB, cfg Config, clock port.Clock, log *slog.Logger, d *plugin.Deployment, limits port.Limits, mailer *Mailer, schemas *schema.Set) *Owners {
	return &Owners{db: db, cfg: cfg, clock: clock, log: log, deployment: d, limits: limits, mailer: mailer, schemas: schemas}
}

// normalEmail is how an address is compared and kept: without the case of its letters.
func normalEmail(s string) string { return strings.ToLower(strings.TrimSpace(s)) }

// checkEmail checks an address typed in a form as the API checks owner-link-request's; a refusal is a
// *problem.Problem (validation_failed), as the sign-in page expects.
func (o *Owners) checkEmail(email string) error {
	raw, err := json.Marshal(map[string]string{"email": email})
	if err != nil {
		return fmt.Errorf("encode address: %w", err)
	}
	err = o.schemas.Validate("owner-link-request", raw)
	if se := (*schema.Error)(nil); errors.As(err, &se) {
		return se.Problem()
	}
	return err
}

// take counts one hit on bucket against limit per AddressWindow; what names what is counted.
func (o *Owners) take(ctx context.Context, bucket string, limit int, what string) error {
	return takeLimit(ctx, o.limits, o.cfg.AddressWindow, bucket, limit, o.tooMany(limit, what))
}

// takeIn is take as a step of p, a planned write.
func (o *Owners) takeIn(p *write.Plan, bucket string, limit int, what string) {
	takeLimitIn(p, o.limits, o.cfg.AddressWindow, bucket, limit, o.tooMany(limit, what))
}

func (o *Owners) tooMany(limit int, what string) func(retry int) string {
	return func(retry int) string {
		return fmt.Sprintf("Too many %s (%d per %s); try again in %d s.", what, limit, o.cfg.AddressWindow, retry)
	}
}

// ensureOwner returns, on tx, the account of email, creating it: the caller has just proved the
// address (a confirmation or sign-in link was followed).
func ensureOwner(tx *gorm.DB, email string, now time.Time) (ownerRow, error) {
	email = normalEmail(email)
	row := ownerRow{ID: uuid.Must(uuid.NewV7()).String(), Email: email, CreatedAt: now}
	// Two first sign-ins at once: one creates, both read the same row.
	if err := tx.Clauses(clause.OnConflict{Columns: []clause.Column{{Name: "email"}}, DoNothing: true}).Create(&row).Error; err != nil {
		return row, fmt.Errorf("create owner: %w", err)
	}
	// A fresh value: Take would also match the primary key of the row that was not inserted.
	var owner ownerRow
	if err := tx.Take(&owner, "email = ?", email).Error; err != nil {
		return owner, fmt.Errorf("read owner: %w", err)
	}
	return owner, nil
}

// RequestSignIn mails a one-time sign-in link to email, from the client address addr. The answer is the
// same whether or not the address has an account: following the link proves the address, and creates
// its account on first use.
func (o *Owners) RequestSignIn(ctx context.Context, email, addr string) error {
	if err := o.checkEmail(email); err != nil {
		return err
	}
	email = normalEmail(email)
	if err := o.take(ctx, "sign-in:"+addr, o.cfg.AddressLimit, "sign-in requests from here"); err != nil {
		return err
	}
	// Per recipient too: the form must not be a way to flood someone's mailbox.
	if err := o.take(ctx, "sign-in-recipient:"+hashToken(email), o.cfg.RecipientLimit, "sign-in links to this address"); err != nil {
		return err
	}
	now := o.clock.Now()
	token := newToken(32)
	row := signInRow{TokenHash: hashToken(token), Email: email, CreatedAt: now, ExpiresAt: now.Add(o.cfg.SignInTTL)}
	return o.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		if err := tx.Create(&row).Error; err != nil {
			return fmt.Errorf("write sign-in: %w", err)
		}
		return o.mailer.QueueOwner(ctx, tx, row.TokenHash, MailSignIn, email, "Your sign-in link for svc", signInMail(o.deployment.BaseURL, token, o.cfg.SignInTTL))
	})
}

func linkExpired(what string) *problem.Problem {
	return problem.Newf(problem.NotFound, "This %s link is unknown, used or expired. Check that the whole link was copied, or ask for a new one.", what)
}

// SignInPage checks the sign-in link token before its button is shown, and returns the address it
// signs in as, so that nobody is signed into an account they did not expect.
func (o *Owners) SignInPage(ctx context.Context, token string) (string, error) {
	if !plausibleToken(token, 32) {
		return "", linkExpired("sign-in")
	}
	var emails []string
	if err := o.db.WithContext(ctx).Model(&signInRow{}).Where("token_hash = ? AND used_at IS NULL AND expires_at > ?", hashToken(token), o.clock.Now()).
		Limit(1).Pluck("email", &emails).Error; err != nil {
		return "", fmt.Errorf("read sign-in: %w", err)
	}
	if len(emails) == 0 {
		return "", linkExpired("sign-in")
	}
	return emails[0], nil
}

// SignIn uses the sign-in link token, once, and returns the account of its address.
func (o *Owners) SignIn(ctx context.Context, token string) (ownerRow, error) {
	if !plausibleToken(token, 32) {
		return ownerRow{}, linkExpired("sign-in")
	}
	var owner ownerRow
	err := o.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		now := o.clock.Now()
		hash := hashToken(token)
		used := tx.Model(&signInRow{}).Where("token_hash = ? AND used_at IS NULL AND expires_at > ?", hash, now).Update("used_at", now)
		if used.Error != nil {
			return fmt.Errorf("use sign-in: %w", used.Error)
		}
		if used.RowsAffected == 0 {
			return linkExpired("sign-in")
		}
		var in signInRow
		if err := tx.Take(&in, "token_hash = ?", hash).Error; err != nil {
			return fmt.Errorf("read sign-in: %w", err)
		}
		var err error
		if owner, err = ensureOwner(tx, in.Email, now); err != nil {
			return err
		}
		if err := tx.Model(&ownerRow{}).Where("id = ?", owner.ID).Update("last_sign_in_at", now).Error; err != nil {
			return fmt.Errorf("record sign-in: %w", err)
		}
		return eraseOwnerMail(tx, hash, MailSignIn)
	})
	return owner, err
}

// Owner returns the account id, if it still exists.
func (o *Owners) Owner(ctx context.Context, id string) (ownerRow, bool, error) {
	var rows []ownerRow
	if err := o.db.WithContext(ctx).Where("id = ?", id).Limit(1).Find(&rows).Error; err != nil {
		return ownerRow{}, false, fmt.Errorf("read owner: %w", err)
	}
	if len(rows) == 0 {
		return ownerRow{}, false, nil
	}
	return rows[0], true, nil
}

// OwnedAgent is an agent on its owner's page.
type OwnedAgent struct {
	AgentID  string     `json:"agent_id"`
	Handle   string     `json:"handle"`
	Via      string     `json:"via"`
	LinkedAt time.Time  `json:"linked_at"`
	Draft    *DraftInfo `json:"draft"`
}

// DraftInfo is what the owner's page says of an agent's latest draft: never its content once read.
type DraftInfo struct {
	DraftID       string     `json:"draft_id"`
	State         string     `json:"state"`
	ContentSHA256 string     `json:"content_sha256"`
	CreatedAt     time.Time  `json:"created_at"`
	ClosedAt      *time.Time `json:"closed_at"`
}

// OwnedApplication is an application on its owner's page.
type OwnedApplication struct {
	ApplicationID string    `json:"application_id"`
	Handle        string    `json:"handle"`
	State         string    `json:"state"`
	CreatedAt     time.Time `json:"created_at"`
}

// Overview is an owner's page: the account, its applications (made with its address) and its agents.
type Overview struct {
	OwnerID      string             `json:"owner_id"`
	Email        string             `json:"email"`
	Applications []OwnedApplication `json:"applications"`
	Agents       []OwnedAgent       `json:"agents"`
}

// maxListed bounds every list of the owner's page.
const maxListed = 200

// Overview reads what the owner's page shows.
func (o *Owners) Overview(ctx context.Context, owner ownerRow, state func(applicationRow) string) (Overview, error) {
	db := o.db.WithContext(ctx)
	v := Overview{OwnerID: owner.ID, Email: owner.Email, Applications: []OwnedApplication{}, Agents: []OwnedAgent{}}
	var apps []applicationRow
	if err := db.Where("LOWER(email) = ?", owner.Email).Order("created_at DESC").Limit(maxListed).Find(&apps).Error; err != nil {
		return v, fmt.Errorf("read applications: %w", err)
	}
	for _, a := range apps {
		v.Applications = append(v.Applications, OwnedApplication{ApplicationID: a.ID, Handle: a.Handle, State: state(a), CreatedAt: a.CreatedAt})
	}
	var agents []agentOwnerRow
	if err := db.Where("owner_id = ?", owner.ID).Order("linked_at").Limit(maxListed).Find(&agents).Error; err != nil {
		return v, fmt.Errorf("read agents: %w", err)
	}
	for _, a := range agents {
		item := OwnedAgent{AgentID: a.AgentID, Handle: a.Handle, Via: a.Via, LinkedAt: a.LinkedAt}
		var last []draftRow
		if err := db.Select("id", "state", "content_sha256", "created_at", "closed_at").
			Where("agent_id = ? AND owner_id = ?", a.AgentID, owner.ID).Order("created_at DESC").Limit(1).Find(&last).Error; err != nil {
			return v, fmt.Errorf("read drafts: %w", err)
		}
		if len(last) == 1 {
			d := last[0]
			item.Draft = &DraftInfo{DraftID: d.ID, State: d.State, ContentSHA256: d.ContentSHA256, CreatedAt: d.CreatedAt, ClosedAt: d.ClosedAt}
		}
		v.Agents = append(v.Agents, item)
	}
	return v, nil
}

// owns reports, on db, whether owner owns agentID, and the agent's handle.
func owns(db *gorm.DB, ownerID, agentID string) (agentOwnerRow, bool, error) {
	var rows []agentOwnerRow
	if err := db.Where("agent_id = ? AND owner_id = ?", agentID, ownerID).Limit(1).Find(&rows).Error; err != nil {
		return agentOwnerRow{}, false, fmt.Errorf("read ownership: %w", err)
	}
	if len(rows) == 0 {
		return agentOwnerRow{}, false, nil
	}
	return rows[0], true, nil
}

// linkAgent records, on tx, that owner owns the agent; an agent that has an owner is 409
// owner_already_linked.
func linkAgent(tx *gorm.DB, ownerID, agentID, handle, via string, now time.Time) error {
	row := agentOwnerRow{AgentID: agentID, OwnerID: ownerID, Handle: handle, Via: via, LinkedAt: now}
	res := tx.Clauses(clause.OnConflict{Columns: []clause.Column{{Name: "agent_id"}}, DoNothing: true}).Create(&row)
	if res.Error != nil {
		return fmt.Errorf("link agent: %w", res.Error)
	}
	if res.RowsAffected == 0 {
		return alreadyLinked()
	}
	return nil
}

func alreadyLinked() *problem.Problem {
	return problem.New(problem.OwnerAlreadyLinked, "This agent already has an owner. An operator can unlink it (svc admin owner unlink) before another owner is linked.")
}

// Unlink removes the agent's owner (the operator's command); the drafts that owner left waiting are
// withdrawn and their ciphertext deleted, and the agent's owner links closed. It reports whether the
// agent had an owner.
func (o *Owners) Unlink(ctx context.Context, agentID string) (bool, error) {
	had := false
	err := o.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		var rows []agentOwnerRow
		if err := tx.Where("agent_id = ?", agentID).Limit(1).Find(&rows).Error; err != nil {
			return fmt.Errorf("read ownership: %w", err)
		}
		if len(rows) == 0 {
			return nil
		}
		had = true
		if err := tx.Where("agent_id = ?", agentID).Delete(&agentOwnerRow{}).Error; err != nil {
			return fmt.Errorf("unlink agent: %w", err)
		}
		// No link of before works afterwards: the confirmed one no longer shows the owner, and one
		// still waiting would link the agent again.
		if err := closeLinks(tx, agentID); err != nil {
			return err
		}
		return closeDrafts(tx, agentID, DraftWithdrawn, o.clock.Now())
	})
	if err == nil && had {
		o.log.InfoContext(ctx, "agent unlinked from its owner", "module", ID, "agent_id", agentID)
	}
	return had, err
}

// OwnerOf returns the address of the agent's owner, for the operator; "" when it has none.
func (o *Owners) OwnerOf(ctx context.Context, agentID string) (string, error) {
	var emails []string
	if err := o.db.WithContext(ctx).Table("onboarding_agent_owners AS a").Joins("JOIN onboarding_owners o ON o.id = a.owner_id").
		Where("a.agent_id = ?", agentID).Limit(1).Pluck("o.email", &emails).Error; err != nil {
		return "", fmt.Errorf("read owner: %w", err)
	}
	if len(emails) == 0 {
		return "", nil
	}
	return emails[0], nil
}

// DraftKeyUse is what an operator rotating --onboarding-draft-key needs: how many drafts wait under each
// key id (a key can be dropped once none does), and the ids of the keys this process is configured
// with (nil when it has none).
type DraftKeyUse struct {
	Waiting    map[string]int64 `json:"waiting"`
	Configured []string         `json:"configured"`
}

// DraftKeyUse counts the waiting drafts by the key that sealed them.
func (o *Owners) DraftKeyUse(ctx context.Context) (DraftKeyUse, error) {
	use := DraftKeyUse{Waiting: map[string]int64{}}
	var rows []struct {
		KeyID string
		N     int64
	}
	if err := o.db.WithContext(ctx).Model(&draftRow{}).Select("key_id, COUNT(*) AS n").Where("state = ?", DraftWaiting).
		Group("key_id").Scan(&rows).Error; err != nil {
		return use, fmt.Errorf("count waiting drafts: %w", err)
	}
	for _, r := range rows {
		use.Waiting[r.KeyID] = r.N
	}
	if keys, err := NewKeyring(o.cfg); err == nil {
		use.Configured = keys.IDs()
	}
	return use, nil
}
