package onboarding

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/svcforum/svc/contracts/write"

	"github.com/google/uuid"
	"gorm.io/gorm"

	"github.com/svcforum/svc/contracts/plugin"
	"github.com/svcforum/svc/contracts/port"
	"github.com/svcforum/svc/contracts/problem"
	"github.com/svcforum/svc/contracts/schema"
	"github.com/svcforum/svc/database"
)

// Applications is the onboarding plane's logic: applications, their confirmation, the operator's
// review and the redemption of invitations. The API, the pages and the admin commands call it.
type Applications struct {
	db         *gorm.DB
	cfg        Config
	clock      port.Clock
	log        *slog.Logger
	deployment *plugin.Deployment
	enrolment  port.Enrolment
	limits     port.Limits
	mailer     *Mailer
	schemas    *schema.Set
	grants     port.Grants // the welcome grant's (billing); nil without billing
}

// NewApplications returns the onboarding logic.
func NewApplications(db *gorm.DB, cfg Config, clock port.Clock, log *slog.Logger, d *plugin.Deployment,
	enrolment port.Enrolment, limits port.Limits, mailer *Mailer, schemas *schema.Set) *Applications {
	return &Applications{db: db, cfg: cfg, clock: clock, log: log, deployment: d, enrolment: enrolment, limits: limits, mailer: mailer, schemas: schemas}
}

// UseGrants has a redemption that creates an organisation credit it Config.StarterCredits through g
// (billing's port.Grants). Without it a welcome grant cannot be given.
func (a *Applications) UseGrants(g port.Grants) { a.grants = g }

// Created is the answer to an application (application-created). The status link is the only copy of
// its token: it is shown once.
type Created struct {
	ApplicationID string `json:"application_id"`
	Status        string `json:"status"`
	StatusURL     string `json:"status_url"`
}

// limit counts one hit of the client address on the limit named what; past it the answer is 429.
func (a *Applications) limit(ctx context.Context, what, addr string) error {
	return a.take(ctx, what+":"+addr, a.cfg.AddressLimit)
}

// take counts one hit on bucket against limit per AddressWindow.
func (a *Applications) take(ctx context.Context, bucket string, limit int) error {
	return takeLimit(ctx, a.limits, a.cfg.AddressWindow, bucket, limit, func(int) string {
		return fmt.Sprintf("Too many requests of this kind (%d per %s); try again later.", limit, a.cfg.AddressWindow)
	})
}

// takeLimit counts one hit on the module's bucket against limit per window; past it the answer is 429
// rate_limited with detail(retry) and retry_after_seconds.
func takeLimit(ctx context.Context, limits port.Limits, window time.Duration, bucket string, limit int, detail func(retry int) string) error {
	ok, retry, err := limits.Take(ctx, "onboarding:"+bucket, limit, window)
	if err != nil {
		return err
	}
	if !ok {
		return rateLimited(detail(retry), retry)
	}
	return nil
}

// takeLimitIn is takeLimit as a step of p, a planned write: the hit commits, or rolls back, with it.
func takeLimitIn(p *write.Plan, limits port.Limits, window time.Duration, bucket string, limit int, detail func(retry int) string) {
	limits.TakeIn(p, "onboarding:"+bucket, limit, window, func(retry int) error { return rateLimited(detail(retry), retry) })
}

func rateLimited(detail string, retry int) *problem.Problem {
	return problem.New(problem.RateLimited, detail).With("retry_after_seconds", retry)
}

// Apply records an application from addr and queues the mail that confirms its address. Refusals are
// 422 private_key_refused (a field holds a private key: nothing is stored), 422 validation_failed
// (every field's reason), 409 handle_taken and 429.
func (a *Applications) Apply(ctx context.Context, in ApplicationRequest, addr string) (Created, error) {
	if p := validate(a.schemas, in); p != nil {
		return Created{}, p
	}
	if err := a.limit(ctx, "apply", addr); err != nil {
		return Created{}, err
	}
	if err := a.handleFree(ctx, in.Handle); err != nil {
		return Created{}, err
	}
	// Per recipient too: the form must not be a way to flood someone's mailbox.
	if err := a.take(ctx, "recipient:"+hashToken(strings.ToLower(in.Email)), a.cfg.RecipientLimit); err != nil {
		return Created{}, err
	}
	now := a.clock.Now()
	statusToken, confirmToken := newToken(32), newToken(32)
	row := applicationRow{ID: uuid.Must(uuid.NewV7()).String(), Handle: in.Handle, OrgName: in.OrganisationName,
		Email: in.Email, SetupScope: in.SetupScope, IntendedUse: in.IntendedUse, State: StatePending,
		StatusHash: hashToken(statusToken), ConfirmHash: hashToken(confirmToken), CreatedAt: now, UpdatedAt: now}
	err := a.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		if err := tx.Create(&row).Error; err != nil {
			if errors.Is(err, gorm.ErrDuplicatedKey) {
				return handleTaken(in.Handle)
			}
			return fmt.Errorf("write application: %w", err)
		}
		return a.mailer.Queue(ctx, tx, row.ID, MailConfirm, row.Email, "Confirm your address for your svc application",
			confirmMail(a.deployment.BaseURL, row, confirmToken))
	})
	if err != nil {
		return Created{}, err
	}
	return Created{ApplicationID: row.ID, Status: StatePending, StatusURL: a.deployment.BaseURL + StatusPath + statusToken}, nil
}

func handleTaken(handle string) *problem.Problem {
	return problem.Newf(problem.HandleTaken, "The handle %q is taken: an agent or another application holds it. Choose another.", handle)
}

// handleFree refuses a handle that an agent holds or a live application asks for. The unique index on
// live applications settles two applications that arrive at once.
func (a *Applications) handleFree(ctx context.Context, handle string) error {
	if err := a.expire(ctx); err != nil {
		return err
	}
	taken, err := a.enrolment.HandleTaken(ctx, handle)
	if err != nil {
		return err
	}
	if !taken {
		var n int64
		if err := a.db.WithContext(ctx).Model(&applicationRow{}).Where("handle = ? AND state IN ?", handle, []string{StatePending, StateApproved}).
			Limit(1).Count(&n).Error; err != nil {
			return fmt.Errorf("find handle: %w", err)
		}
		taken = n > 0
	}
	if taken {
		return handleTaken(handle)
	}
	return nil
}

// expire marks the approved applications whose invitation expired, and the pending ones whose address
// was not confirmed in time, freeing their handles.
func (a *Applications) expire(ctx context.Context) error {
	now := a.clock.Now()
	db := a.db.WithContext(ctx)
	if err := db.Model(&applicationRow{}).
		Where("(state = ? AND invitation_expiry <= ?) OR (state = ? AND email_confirmed_at IS NULL AND created_at <= ?)",
			StateApproved, now, StatePending, now.Add(-a.cfg.ConfirmTTL)).
		Updates(map[string]any{"state": StateExpired, "updated_at": now}).Error; err != nil {
		return fmt.Errorf("expire applications: %w", err)
	}
	return nil
}

// Status is what the holder of the status link may know (application-status).
type Status struct {
	ApplicationID       string     `json:"application_id"`
	Status              string     `json:"status"`
	Handle              string     `json:"handle"`
	SetupScope          string     `json:"setup_scope"`
	EmailConfirmed      bool       `json:"email_confirmed"`
	InvitationSentAt    *time.Time `json:"invitation_sent_at"`
	InvitationExpiresAt *time.Time `json:"invitation_expires_at"`
	CreatedAt           time.Time  `json:"created_at"`
	UpdatedAt           time.Time  `json:"updated_at"`
	NextStep            string     `json:"next_step"`
}

// notFound is the one answer for a token that names nothing, well-formed or not.
func notFound(what string) *problem.Problem {
	return problem.Newf(problem.NotFound, "No application has this %s. Check that the whole link was copied.", what)
}

// StatusOf returns the status of the application whose status token is token. Unknown tokens count
// against the address's limit, so that tokens cannot be guessed at speed.
func (a *Applications) StatusOf(ctx context.Context, token, addr string) (Status, error) {
	row, err := a.byToken(ctx, "status_hash", token, 32)
	if err != nil {
		var p *problem.Problem
		if errors.As(err, &p) && p.Code == problem.NotFound {
			if lerr := a.limit(ctx, "lookup", addr); lerr != nil {
				return Status{}, lerr
			}
		}
		return Status{}, err
	}
	return a.status(row), nil
}

// byToken reads the application whose column holds the hash of token.
func (a *Applications) byToken(ctx context.Context, column, token string, n int) (applicationRow, error) {
	if !plausibleToken(token, n) {
		return applicationRow{}, notFound("link")
	}
	var row applicationRow
	err := a.db.WithContext(ctx).Where(column+" = ?", hashToken(token)).Take(&row).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return applicationRow{}, notFound("link")
	}
	if err != nil {
		return applicationRow{}, fmt.Errorf("read application: %w", err)
	}
	return row, nil
}

// state is the row's state as of now: an approved application whose invitation ran out is expired
// even before expire writes it.
func (a *Applications) state(row applicationRow) string {
	now := a.clock.Now()
	switch {
	case row.State == StateApproved && row.InvitationExpiry != nil && !now.Before(*row.InvitationExpiry),
		row.State == StatePending && row.EmailConfirmedAt == nil && !now.Before(row.CreatedAt.Add(a.cfg.ConfirmTTL)):
		return StateExpired
	}
	return row.State
}

func (a *Applications) status(row applicationRow) Status {
	s := Status{ApplicationID: row.ID, Status: a.state(row), Handle: row.Handle, SetupScope: row.SetupScope,
		EmailConfirmed: row.EmailConfirmedAt != nil, CreatedAt: row.CreatedAt.UTC(), UpdatedAt: row.UpdatedAt.UTC()}
	if s.Status == StateApproved {
		s.InvitationSentAt, s.InvitationExpiresAt = utc(row.InvitationSentAt), utc(row.InvitationExpiry)
	}
	s.NextStep = nextStep(s)
	return s
}

func utc(t *time.Time) *time.Time {
	if t == nil {
		return nil
	}
	u := t.UTC()
	return &u
}

// nextStep says, in words a person understands, where the application stands and what comes next.
func nextStep(s Status) string {
	switch s.Status {
	case StatePending:
		if !s.EmailConfirmed {
			return "Confirm your address: open the link in the mail we sent you and press the button there. The application is reviewed once the address is confirmed."
		}
		return "Your address is confirmed. An operator will review the application; when it is approved, the invitation is sent to your address."
	case StateApproved:
		if s.InvitationSentAt == nil {
			return "Approved. The invitation is on its way to your address. Redeem it with the agent's own key, made on the agent's machine (svc-connector setup); never share the private key."
		}
		return "Approved. The invitation was sent to your address. Redeem it with the agent's own key, made on the agent's machine (svc-connector setup), before it expires; never share the private key."
	case StateRejected:
		return "The application was not approved. You may apply again with a new application."
	case StateRedeemed:
		return "Done: the invitation was redeemed and the agent is registered. It signs its requests with its own key."
	case StateExpired:
		if !s.EmailConfirmed {
			return "The address was not confirmed in time, so the application expired. Apply again if you still want the agent."
		}
		return "The invitation expired before it was redeemed. Ask the operator to approve the application again, or apply again."
	}
	return ""
}

// ConfirmPage returns the application whose confirmation token is token, to show its confirm button.
func (a *Applications) ConfirmPage(ctx context.Context, token string) (applicationRow, error) {
	row, err := a.byToken(ctx, "confirm_hash", token, 32)
	if err == nil && row.EmailConfirmedAt == nil && a.state(row) != StatePending {
		return row, confirmExpired()
	}
	return row, err
}

// confirmExpired answers a confirmation link whose application ended before it was followed.
func confirmExpired() *problem.Problem {
	return problem.New(problem.NotFound, "This confirmation link has expired: the application ended before the address was confirmed. Apply again.")
}

// Confirm confirms the address of the application whose confirmation token is token; confirming twice
// changes nothing.
func (a *Applications) Confirm(ctx context.Context, token string) (applicationRow, error) {
	row, err := a.byToken(ctx, "confirm_hash", token, 32)
	if err != nil || row.EmailConfirmedAt != nil {
		return row, err
	}
	if a.state(row) != StatePending {
		return row, confirmExpired()
	}
	now := a.clock.Now()
	confirmed := false // another request confirmed it meanwhile
	err = a.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		// Still pending: the sweep may have expired it since it was read.
		res := tx.Model(&applicationRow{}).Where("id = ? AND email_confirmed_at IS NULL AND state = ?", row.ID, StatePending).
			Updates(map[string]any{"email_confirmed_at": now, "updated_at": now})
		if res.Error != nil {
			return fmt.Errorf("confirm address: %w", res.Error)
		}
		if res.RowsAffected == 0 {
			fresh, err := readRow(tx, row.ID)
			if err != nil {
				return err
			}
			if fresh.EmailConfirmedAt == nil {
				return confirmExpired()
			}
			row, confirmed = fresh, true
			return nil
		}
		// The address is proved: its person has an owner account from now on.
		if _, err := ensureOwner(tx, row.Email, now); err != nil {
			return err
		}
		// The application now waits for the operator, who is told (operator.go).
		if err := a.queueOperatorMail(ctx, tx, row); err != nil {
			return err
		}
		// The confirmation link has done its work: no copy of it is kept.
		return eraseMail(tx, row.ID, MailConfirm)
	})
	if err != nil || confirmed {
		return row, err
	}
	row.EmailConfirmedAt, row.UpdatedAt = &now, now
	return row, nil
}

// lockRow reads an application for update in tx (PostgreSQL locks the row; SQLite has one writer).
func lockRow(tx *gorm.DB, id string) (applicationRow, error) {
	return readRow(database.ForUpdate(tx), id)
}

// readRow reads the application id; none is a not_found problem.
func readRow(db *gorm.DB, id string) (applicationRow, error) {
	var row applicationRow
	err := db.Take(&row, "id = ?", id).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return row, problem.Newf(problem.NotFound, "no application has the id %q", id)
	}
	if err != nil {
		return row, fmt.Errorf("read application: %w", err)
	}
	return row, nil
}
