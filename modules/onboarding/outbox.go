package onboarding

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"gorm.io/gorm"

	"github.com/svcforum/svc/contracts/plugin"
	"github.com/svcforum/svc/contracts/problem"
)

// Outbox is the operator's view of the mail: what is waiting, sent or given up, and in a deployment
// without SMTP the messages themselves, for the operator to deliver.
type Outbox struct{ db *gorm.DB }

// NewOutbox returns the outbox.
func NewOutbox(db *gorm.DB) *Outbox { return &Outbox{db: db} }

// Mail is one message as the operator sees it. Body is shown only while the message waits in the
// outbox for the operator, and erased once its secret has done its work.
type Mail struct {
	MailID        string     `json:"mail_id"`
	ApplicationID *string    `json:"application_id"`
	Kind          string     `json:"kind"`
	Recipient     string     `json:"recipient"`
	Subject       string     `json:"subject"`
	Body          string     `json:"body"`
	State         string     `json:"state"`
	Attempts      int        `json:"attempts"`
	LastError     *string    `json:"last_error"`
	CreatedAt     time.Time  `json:"created_at"`
	SentAt        *time.Time `json:"sent_at"`
}

var mailStates = []string{MailOutbox, MailQueued, MailSent, MailFailed, MailCancelled}

// List returns a page of the messages, newest first, optionally of one state, and the cursor of the
// next page (nil at the end).
func (o *Outbox) List(ctx context.Context, state string, page plugin.ListPage) ([]Mail, *string, error) {
	if state != "" && !slices.Contains(mailStates, state) {
		return nil, nil, problem.Newf(problem.ValidationFailed, "--state must be one of %s, got %q", strings.Join(mailStates, ", "), state)
	}
	q := o.db.WithContext(ctx)
	if state != "" {
		q = q.Where("state = ?", state)
	}
	var rows []mailRow
	if err := page.Query(q, "created_at", "id").Find(&rows).Error; err != nil {
		return nil, nil, fmt.Errorf("list mail: %w", err)
	}
	rows, next := plugin.Cut(page, rows, func(r mailRow) plugin.ListPosition { return plugin.ListPosition{CreatedAt: r.CreatedAt, ID: r.ID} })
	out := make([]Mail, 0, len(rows))
	for _, r := range rows {
		if r.State != MailOutbox {
			r.Body = "" // a queued message's secret is the sender's business, not the listing's
		}
		out = append(out, Mail{MailID: r.ID, ApplicationID: r.ApplicationID, Kind: r.Kind, Recipient: r.Recipient, Subject: r.Subject,
			Body: r.Body, State: r.State, Attempts: r.Attempts, LastError: r.LastError, CreatedAt: r.CreatedAt.UTC(), SentAt: utc(r.SentAt)})
	}
	return out, next, nil
}
