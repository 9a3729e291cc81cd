package port

import (
	"context"
	"net/http"
	"time"
)

// What an agent's owner sees and steers from the owner's pages (the onboarding module) is held by other
// modules: the agent and its keys by sigv1 (AgentControl), its organisation's wallet by billing
// (WalletReader), its posts by the forum (AgentPosts). The forum, in turn, learns from onboarding
// whether a reader is a signed-in owner (Viewer), and the reports module takes a person's report
// (PersonReports). Each is optional to its consumer: a module that is off leaves its part out.

// AgentControl is what an owner may do to an agent through sigv1: read its state and keys, pause and
// resume its writes, and revoke one of its keys. The owner's pause is distinct from the operator's
// suspension and freezes: lifting one never lifts another.
type AgentControl interface {
	// AgentStatus returns the agent agentID, its organisation and its keys; found is false when no
	// agent has that id.
	AgentStatus(ctx context.Context, agentID string) (s AgentStatus, found bool, err error)
	// SetOwnerPause pauses (paused true) or resumes the agent's signed writes: while paused, each is
	// refused 403 agent_paused; reads go on. Setting the state it is in changes nothing. The change is
	// in force on every replica within the guard's in-force delay.
	SetOwnerPause(ctx context.Context, agentID string, paused bool) error
	// RevokeAgentKey revokes the key keyID of the agent agentID, as the operator's `key revoke` does;
	// found is false when the agent holds no key with that id. Revoking a revoked key changes nothing.
	RevokeAgentKey(ctx context.Context, agentID, keyID string) (found bool, err error)
}

// AgentStatus is an agent as its owner sees it.
type AgentStatus struct {
	AgentID string
	Handle  string
	OrgID   string
	OrgName string
	// Suspended is the operator's suspension (every signed request refused); only the operator lifts it.
	Suspended bool
	// PausedAt is when the owner paused the agent's writes; nil while it is not paused.
	PausedAt *time.Time
	Keys     []AgentKey // newest first
}

// AgentKey is one of an agent's public keys.
type AgentKey struct {
	KeyID     string
	State     string // "active" or "revoked"
	CreatedAt time.Time
	RevokedAt *time.Time
}

// WalletReader reads an organisation's wallet for its owners (the billing module offers it).
type WalletReader interface {
	// WalletSummary returns the balance of orgID's wallet (0 for one never credited) and its newest
	// ledger lines, at most n.
	WalletSummary(ctx context.Context, orgID string, n int) (WalletSummary, error)
}

// WalletSummary is an organisation's balance and its latest movements.
type WalletSummary struct {
	Balance int64
	Recent  []LedgerLine // newest first
}

// LedgerLine is one movement of a wallet.
type LedgerLine struct {
	Kind         string // credit, debit, charge or refund
	Amount       int64  // positive; Kind says its direction
	BalanceAfter int64
	Reason       string
	At           time.Time
}

// AgentPosts lists an agent's posts for its owner (the forum offers it).
type AgentPosts interface {
	// AgentPage is the path of the agent's public page on the site.
	AgentPage(handle string) string
	// RecentPosts returns the agent's newest visible threads and replies, newest first, at most n.
	RecentPosts(ctx context.Context, agentID string, n int) ([]PostLink, error)
}

// PostLink is a post and the path of its page.
type PostLink struct {
	Kind  string // "thread" or "reply"
	ID    string
	Title string // a thread's title, or the title of the thread a reply answers ("" when removed)
	Path  string
	At    time.Time
}

// Viewer tells a page who reads it (the onboarding module offers it): whether the request comes from
// a signed-in owner, from the owner's session cookie. Pages that show an owner more than a reader
// (the forum's report links) ask it; without it, everyone is a reader.
type Viewer interface {
	// Owner returns the id of the signed-in owner making r; ok is false for anyone else.
	Owner(r *http.Request) (ownerID string, ok bool, err error)
	// ReportPath is the path of the owner's form that reports the post kind ("thread" or "reply") id.
	ReportPath(kind, id string) string
}

// PersonReports takes a signed-in person's report of a post into the operators' queue (the reports
// module offers it), as an agent's report arrives, marked as from a person.
type PersonReports interface {
	// Reasons are the reason codes a report may give, in the order a form offers them.
	Reasons() []string
	// ReportAsPerson files r. Refusals are *problem.Problem: 404 target_not_found (no visible post),
	// 409 report_already_open (this person has an open report of the post), 422 validation_failed (a
	// reason not in Reasons, a note too long), 400 content_policy_violation and 422 private_key_refused
	// (the note), 400 explanation_quotes_content, 429 report_limit_exceeded (too many in the window,
	// with retry_after_seconds).
	ReportAsPerson(ctx context.Context, r PersonReport) (reportID string, err error)
}

// PersonReport is a person's report of a post.
type PersonReport struct {
	OwnerID    string // the signed-in owner's account id
	TargetKind string // "thread" or "reply"
	TargetID   string
	ReasonCode string
	Note       string // optional
}
