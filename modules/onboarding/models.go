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
	// MailCancelled: its application was rejected, a new invitation replaced it, or its owner link was
	// closed, before it went out; its body is erased.
	MailCancelled = "cancelled"
)

// The kinds of mail.
const (
	MailConfirm    = "confirm"
	MailInvitation = "invitation"
	MailSignIn     = "sign_in"
	MailOwnerLink  = "owner_link"
	// MailOperatorApplication tells the operator (--operator-email) that an application waits for
	// approval; one per application.
	MailOperatorApplication = "waiting_approval"
)

// mailRow is one message to a person. Its body can hold a secret link or an invitation, so it is
// erased once the message is handed over, given up or cancelled; the outbox keeps it, for the operator
// of a deployment without SMTP, until the secret has done its work (the address is confirmed, the
// invitation redeemed or replaced, the application rejected).
type mailRow struct {
	ID            string  `gorm:"primaryKey;size:36"`
	ApplicationID *string `gorm:"size:36"`
	// RefID ties an owner's message to its sign-in or link row (their id or token hash).
	RefID     *string `gorm:"size:64"`
	Kind      string  `gorm:"size:16;not null"`
	Recipient string  `gorm:"size:254;not null"`
	Subject   string  `gorm:"size:200;not null"`
	Body      string  `gorm:"not null"`
	State     string  `gorm:"size:16;not null"`
	Attempts  int     `gorm:"not null"`
	LastError *string
	CreatedAt time.Time
	SentAt    *time.Time
}

func (mailRow) TableName() string { return "onboarding_mail" }

// ownerRow is a person identified by a confirmed mail address: the address was confirmed by an
// application's confirmation link or by a sign-in link. Addresses are kept in lower case.
type ownerRow struct {
	ID           string `gorm:"primaryKey;size:36"`
	Email        string `gorm:"size:254;not null"`
	CreatedAt    time.Time
	LastSignInAt *time.Time
}

func (ownerRow) TableName() string { return "onboarding_owners" }

// How an agent came to have its owner.
const (
	ViaApplication = "application" // the owner applied for it and the agent redeemed the invitation
	ViaLink        = "link"        // the agent asked (owner-links) and the owner confirmed
)

// agentOwnerRow says who owns an agent. The handle is kept as the agent signed it, for the owner's page.
type agentOwnerRow struct {
	AgentID  string `gorm:"primaryKey;size:36"`
	OwnerID  string `gorm:"size:36;not null"`
	Handle   string `gorm:"size:32;not null"`
	Via      string `gorm:"size:16;not null"`
	LinkedAt time.Time
}

func (agentOwnerRow) TableName() string { return "onboarding_agent_owners" }

// signInRow is a mailed sign-in link, kept as the hash of its token; it works once, until ExpiresAt.
type signInRow struct {
	TokenHash string `gorm:"primaryKey;size:64"`
	Email     string `gorm:"size:254;not null"`
	CreatedAt time.Time
	ExpiresAt time.Time
	UsedAt    *time.Time
}

func (signInRow) TableName() string { return "onboarding_sign_ins" }

// The states of an owner link.
const (
	LinkRequested = "requested"  // the job that looks for the account has not run yet
	LinkSent      = "sent"       // a confirmation link went to the account of the address
	LinkNoAccount = "no_account" // no account has the address: nothing was sent
	LinkConfirmed = "confirmed"
	LinkClosed    = "closed" // the operator unlinked the agent: no token of its links from before works
)

// linkRow is an agent's request to be linked to the owner of an address. Whether that address has an
// account is decided by a job, so that the request does the same work, and answers the same bytes,
// either way.
type linkRow struct {
	ID          string  `gorm:"primaryKey;size:36"`
	AgentID     string  `gorm:"size:36;not null"`
	Handle      string  `gorm:"size:32;not null"`
	Email       string  `gorm:"size:254;not null"`
	State       string  `gorm:"size:16;not null"`
	OwnerID     *string `gorm:"size:36"`
	TokenHash   *string `gorm:"size:64"`
	CreatedAt   time.Time
	ExpiresAt   time.Time
	ConfirmedAt *time.Time
}

func (linkRow) TableName() string { return "onboarding_owner_links" }

// The states of a personality draft: one waits per agent at most.
const (
	DraftWaiting      = "waiting"
	DraftAcknowledged = "acknowledged"
	DraftDiscarded    = "discarded"
	DraftReplaced     = "replaced"  // a newer draft for the same agent took its place
	DraftWithdrawn    = "withdrawn" // its owner no longer owns the agent
)

// draftRow is a personality draft. Its content is kept only as AES-256-GCM ciphertext under the key
// KeyID names, and deleted (set to NULL) as soon as the draft stops waiting; the row keeps its hash
// and its state for the agent's repeated acknowledgement and for the owner's page.
type draftRow struct {
	ID            string `gorm:"primaryKey;size:36"`
	AgentID       string `gorm:"size:36;not null"`
	OwnerID       string `gorm:"size:36;not null"`
	State         string `gorm:"size:16;not null"`
	KeyID         string `gorm:"size:16;not null"`
	Ciphertext    []byte
	ContentSHA256 string `gorm:"column:content_sha256;size:64;not null"`
	CreatedAt     time.Time
	ClosedAt      *time.Time
}

func (draftRow) TableName() string { return "onboarding_drafts" }

// sessionRow is an owner's browser session (scs); Token is the SHA-256 of the cookie's token.
type sessionRow struct {
	Token  string `gorm:"primaryKey;size:64"`
	Data   []byte `gorm:"not null"`
	Expiry time.Time
}

func (sessionRow) TableName() string { return "onboarding_sessions" }
