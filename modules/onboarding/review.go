package onboarding

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"gorm.io/gorm"

	"github.com/svcforum/svc/contracts/plugin"
	"github.com/svcforum/svc/contracts/problem"
)

// Application is an application as the operator sees it: everything but its secrets.
type Application struct {
	ApplicationID       string     `json:"application_id"`
	Status              string     `json:"status"`
	Handle              string     `json:"handle"`
	OrganisationName    string     `json:"organisation_name"`
	Email               string     `json:"email"`
	EmailConfirmed      bool       `json:"email_confirmed"`
	SetupScope          string     `json:"setup_scope"`
	IntendedUse         string     `json:"intended_use"`
	InvitationExpiresAt *time.Time `json:"invitation_expires_at"`
	InvitationSentAt    *time.Time `json:"invitation_sent_at"`
	DecidedBy           *string    `json:"decided_by"`
	DecidedAt           *time.Time `json:"decided_at"`
	DecisionReason      *string    `json:"decision_reason"`
	AgentID             *string    `json:"agent_id"`
	OrgID               *string    `json:"org_id"`
	RedeemedAt          *time.Time `json:"redeemed_at"`
	CreatedAt           time.Time  `json:"created_at"`
}

func (a *Applications) view(row applicationRow) Application {
	return Application{ApplicationID: row.ID, Status: a.state(row), Handle: row.Handle, OrganisationName: row.OrgName,
		Email: row.Email, EmailConfirmed: row.EmailConfirmedAt != nil, SetupScope: row.SetupScope, IntendedUse: row.IntendedUse,
		InvitationExpiresAt: utc(row.InvitationExpiry), InvitationSentAt: utc(row.InvitationSentAt), DecidedBy: row.DecidedBy,
		DecidedAt: utc(row.DecidedAt), DecisionReason: row.DecisionReason, AgentID: row.AgentID, OrgID: row.OrgID,
		RedeemedAt: utc(row.RedeemedAt), CreatedAt: row.CreatedAt.UTC()}
}

// List returns a page of the applications, newest first, optionally of one state, and the cursor of
// the next page (nil at the end).
func (a *Applications) List(ctx context.Context, state string, page plugin.ListPage) ([]Application, *string, error) {
	if state != "" && !slices.Contains(States, state) {
		return nil, nil, problem.Newf(problem.ValidationFailed, "--status must be one of %s, got %q", strings.Join(States, ", "), state)
	}
	if err := a.expire(ctx); err != nil {
		return nil, nil, err
	}
	q := a.db.WithContext(ctx)
	if state != "" {
		q = q.Where("state = ?", state)
	}
	var rows []applicationRow
	if err := page.Query(q, "created_at", "id").Find(&rows).Error; err != nil {
		return nil, nil, fmt.Errorf("list applications: %w", err)
	}
	rows, next := plugin.Cut(page, rows, func(r applicationRow) plugin.ListPosition {
		return plugin.ListPosition{CreatedAt: r.CreatedAt, ID: r.ID}
	})
	out := make([]Application, 0, len(rows))
	for _, r := range rows {
		out = append(out, a.view(r))
	}
	return out, next, nil
}

// Show returns one application.
func (a *Applications) Show(ctx context.Context, id string) (Application, error) {
	row, err := readRow(a.db.WithContext(ctx), id)
	if err != nil {
		return Application{}, err
	}
	return a.view(row), nil
}

// Approve issues an invitation for a pending application whose address is confirmed, or a new one for
// an application whose invitation expired or never went out (its mail failed, or sits in an outbox
// nobody delivered), and queues its mail; an earlier invitation stops working. The invitation is
// returned for --show-invitation only; it is stored hashed.
func (a *Applications) Approve(ctx context.Context, id, actor, reason string) (Application, string, error) {
	invitation := newInvitation()
	var out applicationRow
	err := a.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		row, err := lockRow(tx, id)
		if err != nil {
			return err
		}
		switch st := a.state(row); {
		case st == StateApproved && row.InvitationSentAt != nil:
			return problem.Newf(problem.Conflict, "application %s is approved and its invitation was sent on %s; it can be approved again once that invitation expires", id, row.InvitationSentAt.UTC().Format(time.RFC3339))
		case st != StatePending && st != StateExpired && st != StateApproved:
			return problem.Newf(problem.Conflict, "application %s is %s; only a pending application, or one whose invitation expired or was never sent, can be approved", id, st)
		case row.EmailConfirmedAt == nil:
			return problem.Newf(problem.Conflict, "application %s waits for its address to be confirmed (the applicant follows the link mailed to them); approve it after that", id)
		}
		taken, err := a.enrolment.HandleTaken(ctx, row.Handle)
		if err != nil {
			return err
		}
		if taken {
			return problem.Newf(problem.Conflict, "the handle %q of application %s is held by an agent now; reject the application", row.Handle, id)
		}
		now := a.clock.Now()
		expiry := now.Add(a.cfg.InvitationTTL)
		hash := hashToken(invitation)
		row.State, row.InvitationHash, row.InvitationExpiry, row.InvitationSentAt = StateApproved, &hash, &expiry, nil
		row.DecidedBy, row.DecidedAt, row.DecisionReason, row.UpdatedAt = &actor, &now, optional(reason), now
		res := tx.Model(&applicationRow{}).Where("id = ?", id).Updates(map[string]any{
			"state": StateApproved, "invitation_hash": hash, "invitation_expiry": expiry, "invitation_sent_at": nil,
			"decided_by": actor, "decided_at": now, "decision_reason": optional(reason), "updated_at": now})
		if errors.Is(res.Error, gorm.ErrDuplicatedKey) {
			return problem.Newf(problem.Conflict, "the handle %q of application %s is held by another live application now; reject this one", row.Handle, id)
		}
		if res.Error != nil {
			return fmt.Errorf("approve application: %w", res.Error)
		}
		if err := cancelMail(tx, row.ID, MailInvitation); err != nil {
			return err
		}
		out = row
		// Queued as the invitation alone: the serving deployment's sender words the mail, with its own
		// base URL and release (an operator's shell may have neither).
		return a.mailer.Queue(ctx, tx, row.ID, MailInvitation, row.Email, "Your svc invitation for "+row.Handle, invitation)
	})
	if err != nil {
		return Application{}, "", err
	}
	return a.view(out), invitation, nil
}

// Reject closes an application that is not redeemed; its invitation, if any, stops working and its
// handle is free again.
func (a *Applications) Reject(ctx context.Context, id, actor, reason string) (Application, error) {
	var out applicationRow
	err := a.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		row, err := lockRow(tx, id)
		if err != nil {
			return err
		}
		switch a.state(row) {
		case StateRejected:
			out = row
			return nil
		case StateRedeemed:
			return problem.Newf(problem.Conflict, "application %s is redeemed: its agent exists (suspend it with svc admin agent suspend)", id)
		}
		now := a.clock.Now()
		if err := tx.Model(&applicationRow{}).Where("id = ?", id).Updates(map[string]any{
			"state": StateRejected, "decided_by": actor, "decided_at": now, "decision_reason": optional(reason), "updated_at": now}).Error; err != nil {
			return fmt.Errorf("reject application: %w", err)
		}
		// An invitation that has not gone out never will.
		if err := cancelMail(tx, row.ID, MailInvitation); err != nil {
			return err
		}
		row.State, row.DecidedBy, row.DecidedAt, row.DecisionReason, row.UpdatedAt = StateRejected, &actor, &now, optional(reason), now
		out = row
		return nil
	})
	if err != nil {
		return Application{}, err
	}
	return a.view(out), nil
}

func optional(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}
