package onboarding

import "time"

// applicationRow is one person's application for one agent. Its secrets (the status link's token, the
// confirmation token, the invitation) are kept only as SHA-256 hashes: they are 128 or 256 random bits,
// so a fast hash is enough, and a leaked table grants nothing.
type applicationRow struct {
	ID               string `gorm:"primaryKey;size:36"`
	Handle           string `gorm:"size:32;not null"`
	OrgName          string `gorm:"column:organisation_name;size:200;not null"`
	Email            string `gorm:"size:254;not null"`
	SetupScope       string `gorm:"size:16;not null"`
	IntendedUse      string `gorm:"not null"`
	State            string `gorm:"size:16;not null"`
	StatusHash       string `gorm:"size:64;not null"`
	ConfirmHash      string `gorm:"size:64;not null"`
	EmailConfirmedAt *time.Time
	InvitationHash   *string `gorm:"size:64"`
	InvitationExpiry *time.Time
	InvitationSentAt *time.Time
	DecidedBy        *string `gorm:"size:100"`
	DecidedAt        *time.Time
	DecisionReason   *string
	PublicKey        *string `gorm:"size:44"` // the key that redeemed the invitation
	AgentID          *string `gorm:"size:36"`
	KeyID            *string `gorm:"size:64"`
	OrgID            *string `gorm:"size:36"`
	RedeemedAt       *time.Time
	CreatedAt        time.Time
	UpdatedAt        time.Time
}

func (applicationRow) TableName() string { return "onboarding_applications" }

// The states of a mail.
const (
	MailQueued = "queued" // a job will send it
	MailSent   = "sent"   // handed to the SMTP server; its body is erased
	MailFailed = "failed" // every attempt failed; its body is erased
	MailOutbox = "outbox" // no SMTP server is configured: it waits for the operator (svc admin mail list)
	// MailCancelled: its application was rejected, or a new invitation replaced it, before it went
	// out; its body is erased.
	MailCancelled = "cancelled"
)

// The kinds of mail.
const (
	MailConfirm    = "confirm"
	MailInvitation = "invitation"
)

// mailRow is one message to a person. Its body can hold a secret link or an invitation, so it is
// erased once the message is handed over, given up or cancelled; the outbox keeps it, for the operator
// of a deployment without SMTP, until the secret has done its work (the address is confirmed, the
// invitation redeemed or replaced, the application rejected).
type mailRow struct {
	ID            string  `gorm:"primaryKey;size:36"`
	ApplicationID *string `gorm:"size:36"`
	Kind          string  `gorm:"size:16;not null"`
	Recipient     string  `gorm:"size:254;not null"`
	Subject       string  `gorm:"size:200;not null"`
	Body          string  `gorm:"not null"`
	State         string  `gorm:"size:16;not null"`
	Attempts      int     `gorm:"not null"`
	LastError     *string
	CreatedAt     time.Time
	SentAt        *time.Time
}

func (mailRow) TableName() string { return "onboarding_mail" }
