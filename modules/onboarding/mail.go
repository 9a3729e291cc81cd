package onboarding

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"strconv"
	"time"

	"github.com/svcforum/svc/contracts/write"

	"github.com/google/uuid"
	"github.com/riverqueue/river"
	gomail "github.com/wneessen/go-mail"
	"gorm.io/gorm"

	"github.com/svcforum/svc/contracts/plugin"
	"github.com/svcforum/svc/contracts/port"
)

// smtpServer is a parsed --onboarding-smtp-url.
type smtpServer struct {
	host     string
	port     int
	tls      gomail.TLSPolicy
	ssl      bool
	user     string
	password string
}

// parseSMTP reads smtp://[user:password@]host[:port][?tls=required|opportunistic|none] and
// smtps://[user:password@]host[:port]. Its errors never repeat the password.
func parseSMTP(raw string) (smtpServer, error) {
	u, err := url.Parse(raw)
	if err != nil || u.Hostname() == "" {
		return smtpServer{}, errors.New("--onboarding-smtp-url must be smtp://[user:password@]host[:port] or smtps://[user:password@]host[:port]")
	}
	s := smtpServer{host: u.Hostname(), tls: gomail.TLSOpportunistic}
	switch u.Scheme {
	case "smtp":
		s.port = 587
	case "smtps":
		s.port, s.ssl, s.tls = 465, true, gomail.TLSMandatory
	default:
		return smtpServer{}, fmt.Errorf("--onboarding-smtp-url has the scheme %q; use smtp or smtps", u.Scheme)
	}
	if p := u.Port(); p != "" {
		n, err := strconv.Atoi(p)
		if err != nil || n < 1 || n > 65535 {
			return smtpServer{}, fmt.Errorf("--onboarding-smtp-url has the port %q", p)
		}
		s.port = n
	}
	switch t := u.Query().Get("tls"); t {
	case "", "opportunistic":
	case "required":
		s.tls = gomail.TLSMandatory
	case "none":
		if s.ssl {
			return smtpServer{}, errors.New("--onboarding-smtp-url: smtps always uses TLS; tls=none applies to smtp only")
		}
		s.tls = gomail.NoTLS
	default:
		return smtpServer{}, fmt.Errorf("--onboarding-smtp-url: tls must be required, opportunistic or none, got %q", t)
	}
	if u.User != nil {
		s.user = u.User.Username()
		s.password, _ = u.User.Password()
	}
	return s, nil
}

// Mailer queues messages, each with the job that sends it, in the caller's transaction (or planned
// write, EnqueueIn), so that a message exists exactly when the write that needs it commits. Whether it
// is sent or kept in the outbox is the serving replica's decision (its --onboarding-smtp-url), never
// that of the process that queued it: an operator's `svc admin` shell may lack the server's mail
// settings.
type Mailer struct {
	cfg   Config
	jobs  port.Jobs
	clock port.Clock
}

// NewMailer returns the mailer.
func NewMailer(cfg Config, jobs port.Jobs, clock port.Clock) *Mailer {
	return &Mailer{cfg: cfg, jobs: jobs, clock: clock}
}

// Queue writes one message about an application on tx.
func (m *Mailer) Queue(ctx context.Context, tx *gorm.DB, applicationID, kind, to, subject, body string) error {
	return m.queue(ctx, tx, mailRow{ApplicationID: &applicationID, Kind: kind, Recipient: to, Subject: subject, Body: body})
}

// EnqueueIn adds to p, a planned write, a job that sends mail of its own (with the mail's attempts).
func (m *Mailer) EnqueueIn(p *write.Plan, args river.JobArgs) error {
	return m.jobs.InsertIn(p, args, &river.InsertOpts{MaxAttempts: m.cfg.MailAttempts})
}

// QueueOwner writes one message to an owner on tx; ref names its sign-in or link row.
func (m *Mailer) QueueOwner(ctx context.Context, tx *gorm.DB, ref, kind, to, subject, body string) error {
	return m.queue(ctx, tx, mailRow{RefID: &ref, Kind: kind, Recipient: to, Subject: subject, Body: body})
}

func (m *Mailer) queue(ctx context.Context, tx *gorm.DB, row mailRow) error {
	id, err := writeMail(ctx, tx, row, m.clock.Now())
	if err != nil {
		return err
	}
	return m.jobs.InsertTx(ctx, tx, SendArgs{MailID: id}, &river.InsertOpts{MaxAttempts: m.cfg.MailAttempts})
}

// writeMail writes row, queued, on tx and returns its id; the caller sees that a job sends it.
func writeMail(ctx context.Context, tx *gorm.DB, row mailRow, now time.Time) (string, error) {
	row.ID, row.State, row.CreatedAt = uuid.Must(uuid.NewV7()).String(), MailQueued, now
	if err := tx.WithContext(ctx).Create(&row).Error; err != nil {
		return "", fmt.Errorf("write mail: %w", err)
	}
	return row.ID, nil
}

// cancelMail cancels, on tx, an application's messages of kind that have not gone out, erasing them.
func cancelMail(tx *gorm.DB, applicationID, kind string) error {
	if err := tx.Model(&mailRow{}).Where("application_id = ? AND kind = ? AND state IN ?", applicationID, kind, []string{MailQueued, MailOutbox}).
		Updates(map[string]any{"state": MailCancelled, "body": ""}).Error; err != nil {
		return fmt.Errorf("cancel %s mail: %w", kind, err)
	}
	return nil
}

// eraseMail erases, on tx, the bodies of an application's messages of kind kept in the outbox: their
// secret has done its work.
func eraseMail(tx *gorm.DB, applicationID, kind string) error {
	if err := tx.Model(&mailRow{}).Where("application_id = ? AND kind = ? AND state = ?", applicationID, kind, MailOutbox).
		Update("body", "").Error; err != nil {
		return fmt.Errorf("erase %s mail: %w", kind, err)
	}
	return nil
}

// eraseOwnerMail erases, on tx, the bodies of the messages about ref kept in the outbox: their link
// has done its work.
func eraseOwnerMail(tx *gorm.DB, ref, kind string) error {
	if err := tx.Model(&mailRow{}).Where("ref_id = ? AND kind = ? AND state = ?", ref, kind, MailOutbox).
		Update("body", "").Error; err != nil {
		return fmt.Errorf("erase %s mail: %w", kind, err)
	}
	return nil
}

// SendArgs is the job that sends one message.
type SendArgs struct {
	MailID string `json:"mail_id"`
}

// Kind names the job in River.
func (SendArgs) Kind() string { return "onboarding_send_mail" }

// Sender works SendArgs: it hands the message to the SMTP server and erases its body. River retries
// a failed attempt with backoff; the last failure gives the message up.
//
// The messages the serving deployment must word itself are rendered here, from this replica's
// settings, never from those of the process that queued them: the invitation (approved by an
// operator's `svc admin` shell, whose base URL may be another) names this deployment's base URL and the
// release it publishes (releases, which may be nil), and the operator's notice of an application
// waiting for approval goes to this deployment's --operator-email.
type Sender struct {
	river.WorkerDefaults[SendArgs]
	db         *gorm.DB
	cfg        Config
	clock      port.Clock
	log        *slog.Logger
	deployment *plugin.Deployment
	releases   port.ConnectorReleases
	metrics    *mailMetrics
}

// NewSender returns the worker; releases may be nil (no release is named in the invitation).
func NewSender(db *gorm.DB, cfg Config, clock port.Clock, log *slog.Logger, d *plugin.Deployment, releases port.ConnectorReleases) *Sender {
	return &Sender{db: db, cfg: cfg, clock: clock, log: log, deployment: d, releases: releases, metrics: newMailMetrics()}
}

// Timeout bounds one attempt: a mail server that stops answering fails the attempt, not the worker.
func (s *Sender) Timeout(*river.Job[SendArgs]) time.Duration { return time.Minute }

// Work sends the message once; a message already sent or given up is left alone.
func (s *Sender) Work(ctx context.Context, job *river.Job[SendArgs]) error {
	return s.deliver(ctx, job.Args.MailID, job.Attempt, job.MaxAttempts)
}

// deliver is one attempt of a job at sending the message mailID: the attempt'th of at most attempts.
func (s *Sender) deliver(ctx context.Context, mailID string, attempt, attempts int) error {
	db := s.db.WithContext(ctx)
	var m mailRow
	if err := db.First(&m, "id = ?", mailID).Error; err != nil {
		if errors.Is(err, gorm.ErrRecordNotFound) {
			return river.JobCancel(fmt.Errorf("mail %s does not exist", mailID))
		}
		return fmt.Errorf("read mail: %w", err)
	}
	if m.State != MailQueued {
		return nil
	}
	if m.Kind == MailInvitation && m.ApplicationID != nil {
		// Only the current invitation of an approved application goes out (a rejection or a new
		// invitation cancels the mail in its own transaction; this is the last look).
		var app applicationRow
		if err := db.Take(&app, "id = ?", *m.ApplicationID).Error; err != nil {
			return fmt.Errorf("read application: %w", err)
		}
		if app.State != StateApproved {
			return cancelMail(db, app.ID, MailInvitation)
		}
		if plausibleInvitation(m.Body) && app.InvitationExpiry != nil {
			// Queued as the invitation alone (Approve): worded here, from this deployment's settings.
			m.Body = invitationMail(newSetupSteps(s.deployment, s.releases, app.Handle, app.SetupScope), m.Body, *app.InvitationExpiry)
		}
	}
	if m.Kind == MailOperatorApplication && m.ApplicationID != nil && m.Body == "" {
		if err := s.wordOperatorMail(db, &m); err != nil {
			return err
		}
	}
	if s.cfg.SMTPURL == "" {
		// No mail server here: the operator delivers it (svc admin mail list --state outbox).
		if err := db.Model(&mailRow{}).Where("id = ? AND state = ?", m.ID, MailQueued).Updates(map[string]any{"state": MailOutbox, "body": m.Body}).Error; err != nil {
			return fmt.Errorf("keep mail in the outbox: %w", err)
		}
		return nil
	}
	err := s.send(ctx, m)
	s.countSend(m.Kind, err)
	now := s.clock.Now()
	if err == nil {
		return db.Transaction(func(tx *gorm.DB) error {
			res := tx.Model(&mailRow{}).Where("id = ? AND state = ?", m.ID, MailQueued).
				Updates(map[string]any{"state": MailSent, "body": "", "sent_at": now, "attempts": attempt, "last_error": nil})
			if res.Error != nil {
				return fmt.Errorf("mark mail sent: %w", res.Error)
			}
			if res.RowsAffected == 0 {
				// Cancelled while it was being sent (a new invitation replaced it): it went out, but
				// what it says is dead, and the application's invitation is another one.
				return nil
			}
			if m.Kind == MailInvitation && m.ApplicationID != nil {
				if err := tx.Model(&applicationRow{}).Where("id = ?", *m.ApplicationID).Update("invitation_sent_at", now).Error; err != nil {
					return fmt.Errorf("mark invitation sent: %w", err)
				}
			}
			return nil
		})
	}
	msg := err.Error()
	update := map[string]any{"attempts": attempt, "last_error": msg}
	if attempt >= attempts {
		update["state"], update["body"] = MailFailed, ""
		s.log.ErrorContext(ctx, "mail given up", "module", ID, "mail_id", m.ID, "kind", m.Kind, "attempts", attempt, "error", err)
	}
	if uerr := db.Model(&mailRow{}).Where("id = ?", m.ID).Updates(update).Error; uerr != nil {
		return errors.Join(err, uerr)
	}
	return err
}

// send hands m to the SMTP server.
func (s *Sender) send(ctx context.Context, m mailRow) error {
	srv, err := parseSMTP(s.cfg.SMTPURL)
	if err != nil {
		return err
	}
	msg := gomail.NewMsg()
	if err := msg.From(s.cfg.MailFrom); err != nil {
		return fmt.Errorf("sender: %w", err)
	}
	if err := msg.To(m.Recipient); err != nil {
		return fmt.Errorf("recipient: %w", err)
	}
	msg.Subject(m.Subject)
	msg.SetMessageIDWithValue(m.ID + "@svc")
	msg.SetDate()
	msg.SetBodyString(gomail.TypeTextPlain, m.Body)
	opts := []gomail.Option{gomail.WithPort(srv.port), gomail.WithTLSPolicy(srv.tls), gomail.WithTimeout(30 * time.Second)}
	if srv.ssl {
		opts = append(opts, gomail.WithSSL())
	}
	if srv.user != "" {
		opts = append(opts, gomail.WithSMTPAuth(gomail.SMTPAuthAutoDiscover), gomail.WithUsername(srv.user), gomail.WithPassword(srv.password))
	}
	c, err := gomail.NewClient(srv.host, opts...)
	if err != nil {
		return fmt.Errorf("mail client: %w", err)
	}
	if err := c.DialAndSendWithContext(ctx, msg); err != nil {
		return fmt.Errorf("send mail to %s:%d: %w", srv.host, srv.port, err)
	}
	return nil
}

var _ river.Worker[SendArgs] = (*Sender)(nil)
