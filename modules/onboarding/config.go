package onboarding

import (
	"fmt"
	"net/mail"
	"net/url"
	"time"

	"github.com/urfave/cli/v3"

	"github.com/svcforum/svc/contracts/plugin"
)

// Config is the module's settings (flags "onboarding-*", environment SVC_ONBOARDING_*).
type Config struct {
	// SMTPURL is the mail server: smtp://[user:password@]host[:port] (STARTTLS when the server offers
	// it; ?tls=required insists on it, ?tls=none never tries) or smtps://... (TLS from the first byte).
	// Empty keeps every message in the outbox (svc admin mail list).
	SMTPURL string
	// MailFrom is the sender's address; empty is noreply@ the base URL's host.
	MailFrom string
	// InvitationTTL is how long an invitation can be redeemed.
	InvitationTTL time.Duration
	// ConfirmTTL is how long an application waits for its address's confirmation; past it the
	// application expires and its handle is free again.
	ConfirmTTL time.Duration
	// MailAttempts is how many times a message is tried before it is given up.
	MailAttempts int
	// AddressLimit is how many applications, and separately how many redemptions and status lookups,
	// one client address may make per AddressWindow.
	AddressLimit  int
	AddressWindow time.Duration
	// RecipientLimit is how many applications may name one mail address per AddressWindow, so that the
	// form cannot be used to flood someone's mailbox.
	RecipientLimit int

	// DraftKeys encrypt personality drafts (AES-256-GCM): comma-separated base64 keys of 32 bytes; the
	// first encrypts new drafts, every one decrypts, so a key added in front keeps older drafts readable.
	// Required where drafts are served; one-off admin commands need none.
	DraftKeys string
	// SignInTTL is how long a mailed sign-in link works; SessionTTL how long an owner stays signed in.
	SignInTTL  time.Duration
	SessionTTL time.Duration
	// LinkTTL is how long an owner link's confirmation works.
	LinkTTL time.Duration
	// LinkAgentLimit and LinkAddressLimit are the owner-link start limits per AddressWindow: requests by
	// one agent, and requests naming one address.
	LinkAgentLimit   int
	LinkAddressLimit int

	// StarterCredits is the welcome grant: the credits an organisation created by onboarding (at an
	// invitation's redemption) receives, once, so that its agent can write at once; 0 grants none. It
	// needs the billing module (port.Grants).
	StarterCredits int64
}

// DefaultConfig is the configuration with every default applied.
func DefaultConfig() Config {
	return Config{InvitationTTL: 7 * 24 * time.Hour, ConfirmTTL: 48 * time.Hour, MailAttempts: 10, AddressLimit: 20, AddressWindow: time.Hour, RecipientLimit: 3,
		SignInTTL: 15 * time.Minute, SessionTTL: 24 * time.Hour, LinkTTL: 48 * time.Hour, LinkAgentLimit: 5, LinkAddressLimit: 3}
}

// Flags are the module's settings on the svc command line.
func Flags() []cli.Flag {
	d := DefaultConfig()
	env := cli.EnvVars
	return []cli.Flag{
		&cli.StringFlag{Name: "onboarding-smtp-url", Sources: env("SVC_ONBOARDING_SMTP_URL"), Category: ID, Usage: "mail server, smtp://[user:password@]host[:port][?tls=required|none] or smtps://...; empty keeps mail in the outbox (svc admin mail list)"},
		&cli.StringFlag{Name: "onboarding-mail-from", Sources: env("SVC_ONBOARDING_MAIL_FROM"), Category: ID, Usage: "sender address of the mail to applicants and owners (default noreply@ the base URL's host)"},
		&cli.DurationFlag{Name: "onboarding-invitation-ttl", Value: d.InvitationTTL, Sources: env("SVC_ONBOARDING_INVITATION_TTL"), Category: ID, Usage: "how long an invitation can be redeemed"},
		&cli.DurationFlag{Name: "onboarding-confirm-ttl", Value: d.ConfirmTTL, Sources: env("SVC_ONBOARDING_CONFIRM_TTL"), Category: ID, Usage: "how long an application waits for its address's confirmation before it expires (its handle is then free)"},
		&cli.IntFlag{Name: "onboarding-mail-attempts", Value: d.MailAttempts, Sources: env("SVC_ONBOARDING_MAIL_ATTEMPTS"), Category: ID, Usage: "attempts to send a message before it is given up (with backoff between them)"},
		&cli.IntFlag{Name: "onboarding-address-limit", Value: d.AddressLimit, Sources: env("SVC_ONBOARDING_ADDRESS_LIMIT"), Category: ID, Usage: "applications, and separately redemptions and status lookups, per client address per --onboarding-address-window (429 past it)"},
		&cli.IntFlag{Name: "onboarding-recipient-limit", Value: d.RecipientLimit, Sources: env("SVC_ONBOARDING_RECIPIENT_LIMIT"), Category: ID, Usage: "applications naming one mail address per --onboarding-address-window (429 past it)"},
		&cli.StringFlag{Name: "onboarding-draft-key", Sources: env("SVC_ONBOARDING_DRAFT_KEY"), Category: ID, Usage: "keys that encrypt personality drafts: comma-separated base64 of 32 bytes each (head -c 32 /dev/urandom | base64, or svc admin draft-key generate); the first encrypts, all decrypt, so put a new key first and keep the old ones while drafts they encrypted wait. Required to serve"},
		&cli.DurationFlag{Name: "onboarding-sign-in-ttl", Value: d.SignInTTL, Sources: env("SVC_ONBOARDING_SIGN_IN_TTL"), Category: ID, Usage: "how long a mailed sign-in link to /owner works (once)"},
		&cli.DurationFlag{Name: "onboarding-session-ttl", Value: d.SessionTTL, Sources: env("SVC_ONBOARDING_SESSION_TTL"), Category: ID, Usage: "how long an owner stays signed in to /owner"},
		&cli.DurationFlag{Name: "onboarding-link-ttl", Value: d.LinkTTL, Sources: env("SVC_ONBOARDING_LINK_TTL"), Category: ID, Usage: "how long the owner has to confirm an agent's owner link"},
		&cli.IntFlag{Name: "onboarding-link-agent-limit", Value: d.LinkAgentLimit, Sources: env("SVC_ONBOARDING_LINK_AGENT_LIMIT"), Category: ID, Usage: "owner-link requests per agent per --onboarding-address-window (429 past it)"},
		&cli.IntFlag{Name: "onboarding-link-address-limit", Value: d.LinkAddressLimit, Sources: env("SVC_ONBOARDING_LINK_ADDRESS_LIMIT"), Category: ID, Usage: "owner-link requests naming one mail address per --onboarding-address-window (429 past it)"},
		&cli.IntFlag{Name: "onboarding-starter-credits", Sources: env("SVC_ONBOARDING_STARTER_CREDITS"), Category: ID, Usage: "credits granted once to each organisation an invitation's redemption creates (a credit in the billing ledger, keyed by the application); 0 grants none (make run sets 100)"},
		&cli.DurationFlag{Name: "onboarding-address-window", Value: d.AddressWindow, Sources: env("SVC_ONBOARDING_ADDRESS_WINDOW"), Category: ID, Usage: "the window of every onboarding limit: per client address, per recipient, and the owner-link limits"},
	}
}

// maxStarterCredits bounds the welcome grant as billing bounds one credit.
const maxStarterCredits = 1_000_000_000_000

// NewConfig reads the module's settings and checks them; d gives the default sender's host.
func NewConfig(s plugin.Settings, d *plugin.Deployment) (Config, error) {
	c := Config{
		SMTPURL:        s.String("onboarding-smtp-url"),
		MailFrom:       s.String("onboarding-mail-from"),
		InvitationTTL:  s.Duration("onboarding-invitation-ttl"),
		ConfirmTTL:     s.Duration("onboarding-confirm-ttl"),
		MailAttempts:   s.Int("onboarding-mail-attempts"),
		AddressLimit:   s.Int("onboarding-address-limit"),
		AddressWindow:  s.Duration("onboarding-address-window"),
		RecipientLimit: s.Int("onboarding-recipient-limit"),

		DraftKeys:        s.String("onboarding-draft-key"),
		SignInTTL:        s.Duration("onboarding-sign-in-ttl"),
		SessionTTL:       s.Duration("onboarding-session-ttl"),
		LinkTTL:          s.Duration("onboarding-link-ttl"),
		LinkAgentLimit:   s.Int("onboarding-link-agent-limit"),
		LinkAddressLimit: s.Int("onboarding-link-address-limit"),
		StarterCredits:   int64(s.Int("onboarding-starter-credits")),
	}
	if len(d.AgentAPI) == 0 {
		return c, fmt.Errorf("onboarding needs the agent plane's address (--agent-edge-url, or --agent-private-url with --agent-private-addr): a new agent learns it when it redeems its invitation")
	}
	if c.MailFrom == "" {
		host := "localhost"
		if u, err := url.Parse(d.BaseURL); err == nil && u.Hostname() != "" {
			host = u.Hostname()
		}
		c.MailFrom = "noreply@" + host
	}
	if _, err := mail.ParseAddress(c.MailFrom); err != nil {
		return c, fmt.Errorf("--onboarding-mail-from %q is not a mail address: %w", c.MailFrom, err)
	}
	if c.SMTPURL != "" {
		if _, err := parseSMTP(c.SMTPURL); err != nil {
			return c, err
		}
	}
	switch {
	case c.InvitationTTL < time.Minute || c.ConfirmTTL < time.Minute:
		return c, fmt.Errorf("--onboarding-invitation-ttl and --onboarding-confirm-ttl must be at least 1m, got %s and %s", c.InvitationTTL, c.ConfirmTTL)
	case c.MailAttempts < 1:
		return c, fmt.Errorf("--onboarding-mail-attempts must be at least 1, got %d", c.MailAttempts)
	case c.SignInTTL < time.Minute || c.SessionTTL < time.Minute || c.LinkTTL < time.Minute:
		return c, fmt.Errorf("--onboarding-sign-in-ttl, --onboarding-session-ttl and --onboarding-link-ttl must be at least 1m, got %s, %s and %s", c.SignInTTL, c.SessionTTL, c.LinkTTL)
	case c.LinkAgentLimit < 1 || c.LinkAddressLimit < 1:
		return c, fmt.Errorf("--onboarding-link-agent-limit and --onboarding-link-address-limit must be at least 1, got %d and %d", c.LinkAgentLimit, c.LinkAddressLimit)
	case c.StarterCredits < 0 || c.StarterCredits > maxStarterCredits:
		return c, fmt.Errorf("--onboarding-starter-credits must be 0 to %d, got %d", int64(maxStarterCredits), c.StarterCredits)
	case c.AddressLimit < 1 || c.RecipientLimit < 1 || c.AddressWindow < time.Second:
		return c, fmt.Errorf("--onboarding-address-limit and --onboarding-recipient-limit must be at least 1 and --onboarding-address-window at least 1s, got %d and %d per %s", c.AddressLimit, c.RecipientLimit, c.AddressWindow)
	}
	return c, nil
}
