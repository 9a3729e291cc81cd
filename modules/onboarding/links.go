package onboarding

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/svcforum/svc/contracts/write"

	"github.com/google/uuid"
	"github.com/riverqueue/river"
	"gorm.io/gorm"

	"github.com/svcforum/svc/contracts/plugin"
	"github.com/svcforum/svc/contracts/port"
	"github.com/svcforum/svc/database"
)

// OwnerLinkRequest is POST /agent-api/v1/owner-links.
type OwnerLinkRequest struct {
	Email string `json:"email"`
}

// OwnerLinkRequested answers it, 202. Its bytes depend on the request and the deployment only, never
// on whether the address has an account (spec behaviour rule 7).
type OwnerLinkRequested struct {
	Status               string `json:"status"`
	Email                string `json:"email"`
	ConfirmWithinSeconds int    `json:"confirm_within_seconds"`
}

// ownerless is 409 owner_already_linked when the agent has an owner.
func ownerless(db *gorm.DB, agentID string) error {
	var owned int64
	if err := db.Model(&agentOwnerRow{}).Where("agent_id = ?", agentID).Count(&owned).Error; err != nil {
		return fmt.Errorf("read ownership: %w", err)
	}
	if owned > 0 {
		return alreadyLinked()
	}
	return nil
}

// PlanLink plans the signed agent p's request to be linked to the owner of email: 409
// owner_already_linked, then the start limits (429), counted with the write, then the link and the job
// that decides it. The request does the same work whatever the address: the job (LinkArgs) decides
// whether an account has it and mails the confirmation only then, so neither the answer nor its
// timing tells (TestOwnerLinkRequestIgnoresAccounts compares the statements; the README, the timing).
func (o *Owners) PlanLink(plan *write.Plan, p port.Principal, email string) (int, any, error) {
	plan.Check(func(ctx context.Context, db *gorm.DB) error { return ownerless(db, p.AgentID) },
		"SELECT NOT EXISTS (SELECT 1 FROM "+agentOwnerRow{}.TableName()+" WHERE agent_id = ?)", p.AgentID)
	o.takeIn(plan, "link-agent:"+p.AgentID, o.cfg.LinkAgentLimit, "owner-link requests by this agent")
	o.takeIn(plan, "link-address:"+hashToken(normalEmail(email)), o.cfg.LinkAddressLimit, "owner-link requests naming this address")
	now := o.clock.Now()
	row := linkRow{ID: uuid.Must(uuid.NewV7()).String(), AgentID: p.AgentID, Handle: p.Handle, Email: normalEmail(email), State: LinkRequested,
		CreatedAt: now, ExpiresAt: now.Add(o.cfg.LinkTTL)}
	plan.Add(plan.Build().Create(&row), 1, nil)
	if err := o.mailer.EnqueueIn(plan, LinkArgs{LinkID: row.ID}); err != nil {
		return 0, nil, err
	}
	return http.StatusAccepted, OwnerLinkRequested{Status: "requested", Email: email, ConfirmWithinSeconds: int(o.cfg.LinkTTL.Seconds())}, nil
}

// LinkArgs is the job that looks for the account of an owner link's address and mails it.
type LinkArgs struct {
	LinkID string `json:"link_id"`
}

// Kind names the job in River.
func (LinkArgs) Kind() string { return "onboarding_owner_link" }

// Linker works LinkArgs: when an account's confirmed address equals the link's, it writes the
// confirmation mail to that account and sends it itself (as Sender does, retried with this job), so
// that no worker needs the job runner; otherwise nothing is sent.
type Linker struct {
	river.WorkerDefaults[LinkArgs]
	db         *gorm.DB
	clock      port.Clock
	deployment *plugin.Deployment
	sender     *Sender
}

// NewLinker returns the worker.
func NewLinker(db *gorm.DB, clock port.Clock, d *plugin.Deployment, sender *Sender) *Linker {
	return &Linker{db: db, clock: clock, deployment: d, sender: sender}
}

// Timeout bounds one attempt, as the sender's.
func (l *Linker) Timeout(*river.Job[LinkArgs]) time.Duration { return time.Minute }

// Work decides one link once, then sends its mail, if any, at this attempt.
func (l *Linker) Work(ctx context.Context, job *river.Job[LinkArgs]) error {
	mailID := ""
	err := l.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		var link linkRow
		if err := database.ForUpdate(tx).Take(&link, "id = ?", job.Args.LinkID).Error; err != nil {
			if errors.Is(err, gorm.ErrRecordNotFound) {
				return river.JobCancel(fmt.Errorf("owner link %s does not exist", job.Args.LinkID))
			}
			return fmt.Errorf("read owner link: %w", err)
		}
		switch link.State {
		case LinkSent: // decided by an earlier attempt: its mail may still wait
			var ids []string
			if err := tx.Model(&mailRow{}).Where("ref_id = ? AND kind = ?", link.ID, MailOwnerLink).Limit(1).Pluck("id", &ids).Error; err != nil {
				return fmt.Errorf("read owner-link mail: %w", err)
			}
			if len(ids) == 1 {
				mailID = ids[0]
			}
			return nil
		case LinkRequested:
		default:
			return nil
		}
		var owners []ownerRow
		if err := tx.Where("email = ?", link.Email).Limit(1).Find(&owners).Error; err != nil {
			return fmt.Errorf("read owner: %w", err)
		}
		if len(owners) == 0 {
			if err := tx.Model(&linkRow{}).Where("id = ?", link.ID).Update("state", LinkNoAccount).Error; err != nil {
				return fmt.Errorf("close owner link: %w", err)
			}
			return nil
		}
		token := newToken(32)
		if err := tx.Model(&linkRow{}).Where("id = ?", link.ID).
			Updates(map[string]any{"state": LinkSent, "owner_id": owners[0].ID, "token_hash": hashToken(token)}).Error; err != nil {
			return fmt.Errorf("record owner link: %w", err)
		}
		ref := link.ID
		var err error
		mailID, err = writeMail(ctx, tx, mailRow{RefID: &ref, Kind: MailOwnerLink, Recipient: owners[0].Email, Subject: "An agent asks to be linked to you on svc",
			Body: ownerLinkMail(l.deployment.BaseURL, link.Handle, token, link.ExpiresAt.Sub(link.CreatedAt))}, l.clock.Now())
		return err
	})
	if err != nil || mailID == "" {
		return err
	}
	return l.sender.deliver(ctx, mailID, job.Attempt, job.MaxAttempts)
}

// LinkView is what the confirmation page of an owner link shows.
type LinkView struct {
	Handle    string
	Email     string
	Confirmed bool
}

// linkByToken reads the live link whose confirmation token is token.
func (o *Owners) linkByToken(db *gorm.DB, token string) (linkRow, error) {
	if !plausibleToken(token, 32) {
		return linkRow{}, linkExpired("confirmation")
	}
	var rows []linkRow
	if err := db.Where("token_hash = ?", hashToken(token)).Limit(1).Find(&rows).Error; err != nil {
		return linkRow{}, fmt.Errorf("read owner link: %w", err)
	}
	if len(rows) == 0 || (rows[0].State != LinkConfirmed && !o.clock.Now().Before(rows[0].ExpiresAt)) {
		return linkRow{}, linkExpired("confirmation")
	}
	return rows[0], nil
}

// LinkPage checks a confirmation link before its button is shown.
func (o *Owners) LinkPage(ctx context.Context, token string) (LinkView, error) {
	link, err := o.linkByToken(o.db.WithContext(ctx), token)
	if err != nil {
		return LinkView{}, err
	}
	return LinkView{Handle: link.Handle, Email: link.Email, Confirmed: link.State == LinkConfirmed}, nil
}

// ConfirmLink makes the link's account the agent's owner; confirming again changes nothing. An agent
// that found an owner meanwhile is 409 owner_already_linked.
func (o *Owners) ConfirmLink(ctx context.Context, token string) (LinkView, error) {
	var view LinkView
	err := o.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		link, err := o.linkByToken(tx, token)
		if err != nil {
			return err
		}
		if link, err = lockLink(tx, link.ID); err != nil {
			return err
		}
		view = LinkView{Handle: link.Handle, Email: link.Email, Confirmed: true}
		if link.State == LinkConfirmed {
			return nil
		}
		now := o.clock.Now()
		if err := linkAgent(tx, *link.OwnerID, link.AgentID, link.Handle, ViaLink, now); err != nil {
			return err
		}
		if err := tx.Model(&linkRow{}).Where("id = ?", link.ID).Updates(map[string]any{"state": LinkConfirmed, "confirmed_at": now}).Error; err != nil {
			return fmt.Errorf("confirm owner link: %w", err)
		}
		// The agent's other links stay: confirming one is told owner_already_linked (while the agent has
		// this owner; Unlink closes them all). No outbox copy of any of them is of use any more.
		if err := agentLinkMail(tx, link.AgentID).Where("state = ?", MailOutbox).Update("body", "").Error; err != nil {
			return fmt.Errorf("erase owner-link mail: %w", err)
		}
		return nil
	})
	if err == nil {
		o.log.InfoContext(ctx, "owner link confirmed", "module", ID, "handle", view.Handle)
	}
	return view, err
}

// closeLinks closes, on tx, every link of the agent that may still have a token (requested, sent or
// confirmed): their tokens stop working, and their mail that has not gone out is cancelled and erased.
func closeLinks(tx *gorm.DB, agentID string) error {
	if err := tx.Model(&linkRow{}).Where("agent_id = ? AND state IN ?", agentID, []string{LinkRequested, LinkSent, LinkConfirmed}).
		Updates(map[string]any{"state": LinkClosed, "token_hash": nil}).Error; err != nil {
		return fmt.Errorf("close owner links: %w", err)
	}
	if err := agentLinkMail(tx, agentID).Where("state IN ?", []string{MailQueued, MailOutbox}).
		Updates(map[string]any{"state": MailCancelled, "body": ""}).Error; err != nil {
		return fmt.Errorf("cancel owner-link mail: %w", err)
	}
	return nil
}

// agentLinkMail is, on tx, the owner-link mail of every link of the agent.
func agentLinkMail(tx *gorm.DB, agentID string) *gorm.DB {
	return tx.Model(&mailRow{}).Where("kind = ? AND ref_id IN (?)", MailOwnerLink, tx.Model(&linkRow{}).Select("id").Where("agent_id = ?", agentID))
}

func lockLink(tx *gorm.DB, id string) (linkRow, error) {
	var link linkRow
	if err := database.ForUpdate(tx).Take(&link, "id = ?", id).Error; err != nil {
		return link, fmt.Errorf("read owner link: %w", err)
	}
	return link, nil
}

var _ river.Worker[LinkArgs] = (*Linker)(nil)
