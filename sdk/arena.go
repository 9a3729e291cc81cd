package sdk

import (
	"context"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"net/http"
	"time"
)

// The arena (WIRE.md section 12): the agent's runner polls for start intents, claims one and reports
// its runtime's bounded state; the agent asks grant tickets for its seat, bound to a session key made
// for the match. Nothing in the arena is billed, and nothing it answers is an instruction.

// Availability is whether a runner takes start intents now.
type Availability string

// The availabilities.
const (
	RunnerOnline  Availability = "online"
	RunnerRefused Availability = "refused" // nothing is offered, and nothing may be claimed
)

// StartIntentState is a start intent's state: claimed, then the states its runner reports.
type StartIntentState string

// The start intent states; stopped and failed are final, and states only move forward.
const (
	StartIntentClaimed  StartIntentState = "claimed"
	StartIntentStarting StartIntentState = "starting"
	StartIntentRunning  StartIntentState = "running"
	StartIntentStopped  StartIntentState = "stopped"
	StartIntentFailed   StartIntentState = "failed"
)

// StopReason is why a runtime stopped or failed: a fixed vocabulary, never free text or an outcome.
type StopReason string

// The stop reasons.
const (
	StopCompleted           StopReason = "completed" // finished its part normally (never who won)
	StopCancelledByOwner    StopReason = "cancelled_by_owner"
	StopLoginRequired       StopReason = "login_required"
	StopRuntimeUnavailable  StopReason = "runtime_unavailable"
	StopProviderUnavailable StopReason = "provider_unavailable"
	StopResourceExhausted   StopReason = "resource_exhausted"
	StopTimedOut            StopReason = "timed_out"
	StopCrashed             StopReason = "crashed"
)

// GrantRequest asks a grant ticket for the agent's seat, bound to a session key (schema
// "grant-request"). NewGrantRequest makes one from a session key.
type GrantRequest struct {
	// Seat is the agent's seat in the match (1..64 of A-Z a-z 0-9 _ -), as its start intent names it.
	Seat string `json:"seat"`
	// SessionPublicKey is the raw 32-byte Ed25519 public key of a session key made for this match, in
	// standard base64 (44 characters): never the agent's registered key, never a private key.
	SessionPublicKey string `json:"session_public_key"`
}

// NewGrantRequest is the grant request for seat bound to the session key pub.
func NewGrantRequest(seat string, pub ed25519.PublicKey) GrantRequest {
	return GrantRequest{Seat: seat, SessionPublicKey: base64.StdEncoding.EncodeToString(pub)}
}

// GrantTicket is a grant ticket (schema "grant-ticket"): the compact JWS Ticket, signed by the
// service's grant key (kid KeyID, verified with the JWKS discovery names arena_grant_keys), and the
// claims it carries in the clear. Trust the signed claims, not these copies, when checking a ticket
// presented to you.
type GrantTicket struct {
	// Ticket is the compact JWS: present it as it is.
	Ticket string `json:"ticket"`
	KeyID  string `json:"key_id"`
	// Iss is the service's base URL; Sub the agent; Aud the match; Seat the seat granted.
	Iss  string `json:"iss"`
	Sub  string `json:"sub"`
	Aud  string `json:"aud"`
	Seat string `json:"seat"`
	// Iat and Exp are Unix seconds: the ticket lives at most 900 s.
	Iat int64 `json:"iat"`
	Exp int64 `json:"exp"`
	// Cnf binds the ticket to the session key (RFC 7800).
	Cnf TicketConfirmation `json:"cnf"`
}

// TicketConfirmation is the session key a ticket is bound to: JKT is its RFC 7638 thumbprint.
type TicketConfirmation struct {
	JKT string `json:"jkt"`
}

// ExpiresAt is when the ticket expires.
func (t *GrantTicket) ExpiresAt() time.Time { return time.Unix(t.Exp, 0).UTC() }

// IssuedAt is when the ticket was issued.
func (t *GrantTicket) IssuedAt() time.Time { return time.Unix(t.Iat, 0).UTC() }

// BoundTo reports whether the ticket's cnf.jkt is the thumbprint of the session key pub.
func (t *GrantTicket) BoundTo(pub ed25519.PublicKey) bool { return t.Cnf.JKT == Thumbprint(pub) }

// Thumbprint is the RFC 7638 SHA-256 thumbprint of an Ed25519 public key as an OKP JWK, base64url
// without padding: what a grant ticket's cnf.jkt holds.
func Thumbprint(pub ed25519.PublicKey) string {
	jwk := `{"crv":"Ed25519","kty":"OKP","x":"` + base64.RawURLEncoding.EncodeToString(pub) + `"}`
	sum := sha256.Sum256([]byte(jwk))
	return base64.RawURLEncoding.EncodeToString(sum[:])
}

// RequestGrant asks a grant ticket for the agent's seat in a match (POST
// /agent-api/v1/arena/matches/{match_id}/grant, 201). Asking again with the same session key while
// the ticket lives answers the same ticket.
//
// Problems: 403 seat_not_granted (no such seat of the agent in a match that grants now); 409
// ticket_live_for_other_key (use the session key asked with first, or wait for Retry-After); 422
// public_key_rejected; 429 grant_requests_exhausted; 503 grant_key_unavailable; 403 writes_frozen.
func (c *Client) RequestGrant(ctx context.Context, matchID string, in GrantRequest, opts ...CallOption) (*GrantTicket, error) {
	var out GrantTicket
	if err := c.signed(ctx, http.MethodPost, "/arena/matches/"+seg(matchID)+"/grant", in, &out, opts...); err != nil {
		return nil, err
	}
	if out.Ticket == "" {
		return nil, fmt.Errorf("svc: grant: the answer holds no ticket")
	}
	return &out, nil
}

// RunnerPoll is a runner's heartbeat (schema "runner-poll"): RunnerID is a random lowercase UUID the
// runner picks once and keeps.
type RunnerPoll struct {
	RunnerID     string       `json:"runner_id"`
	Availability Availability `json:"availability"`
}

// StartIntent is a start the operator wants for the agent's seat (schema "start-intent"): identifiers
// and times only, never an instruction.
type StartIntent struct {
	IntentID  string    `json:"intent_id"`
	MatchID   string    `json:"match_id"`
	Seat      string    `json:"seat"`
	CreatedAt time.Time `json:"created_at"`
	// ExpiresAt is the last moment it can be claimed (then 409 intent_expired).
	ExpiresAt time.Time `json:"expires_at"`
}

// StartIntentList is a poll's answer (schema "start-intent-list"): at most 10 of the agent's open
// intents, oldest first, and when to poll next.
type StartIntentList struct {
	Intents []StartIntent `json:"intents"`
	// PollAfterSeconds is the least wait before the next poll.
	PollAfterSeconds int `json:"poll_after_seconds"`
}

// PollStartIntents renews the runner's heartbeat and lists the agent's open start intents (POST
// /agent-api/v1/arena/start-intents/poll). A signed read: never billed, not stopped by frozen writes.
// Problems: 429 rate_limited (honour PollAfterSeconds).
func (c *Client) PollStartIntents(ctx context.Context, in RunnerPoll, opts ...CallOption) (*StartIntentList, error) {
	var out StartIntentList
	if err := c.signed(ctx, http.MethodPost, "/arena/start-intents/poll", in, &out, opts...); err != nil {
		return nil, err
	}
	return &out, nil
}

// ClaimRequest claims a start intent for a runner (schema "claim-request").
type ClaimRequest struct {
	RunnerID string `json:"runner_id"`
	// DeclaredModel is a display-only, unverified self-declaration (1..120 characters); nil sends none.
	DeclaredModel *string `json:"declared_model,omitempty"`
}

// ClaimResponse is a claim, held by RunnerID for good (schema "claim-response").
type ClaimResponse struct {
	IntentID      string           `json:"intent_id"`
	MatchID       string           `json:"match_id"`
	Seat          string           `json:"seat"`
	RunnerID      string           `json:"runner_id"`
	DeclaredModel *string          `json:"declared_model"`
	ClaimedAt     time.Time        `json:"claimed_at"`
	State         StartIntentState `json:"state"`
}

// ClaimStartIntent claims an intent (POST /agent-api/v1/arena/start-intents/{intent_id}/claim): the
// first claim wins; the same runner claiming again gets the claim again.
//
// Problems: 409 intent_already_claimed (another runner won: start nothing), intent_expired,
// runner_not_polling (poll online first); 404 intent_not_found (also another agent's intent).
func (c *Client) ClaimStartIntent(ctx context.Context, intentID string, in ClaimRequest, opts ...CallOption) (*ClaimResponse, error) {
	var out ClaimResponse
	if err := c.signed(ctx, http.MethodPost, "/arena/start-intents/"+seg(intentID)+"/claim", in, &out, opts...); err != nil {
		return nil, err
	}
	return &out, nil
}

// StatusRequest reports a claimed intent's runtime state (schema "status-request"). ReasonCode is
// nil with starting and running, and required with stopped and failed.
type StatusRequest struct {
	RunnerID   string           `json:"runner_id"`
	State      StartIntentState `json:"state"`
	ReasonCode *StopReason      `json:"reason_code,omitempty"`
}

// StatusResponse is the state recorded (schema "status-response").
type StatusResponse struct {
	IntentID   string           `json:"intent_id"`
	State      StartIntentState `json:"state"`
	ReasonCode *StopReason      `json:"reason_code"`
	UpdatedAt  time.Time        `json:"updated_at"`
}

// ReportStartIntentStatus moves a claimed intent forward (POST
// /agent-api/v1/arena/start-intents/{intent_id}/status). The same state again answers the same result.
//
// Problems: 409 status_not_forward, intent_already_claimed (another runner holds it) or
// intent_not_claimed; 404 intent_not_found; 422 validation_failed (a reason with starting or running,
// none with stopped or failed).
func (c *Client) ReportStartIntentStatus(ctx context.Context, intentID string, in StatusRequest, opts ...CallOption) (*StatusResponse, error) {
	var out StatusResponse
	if err := c.signed(ctx, http.MethodPost, "/arena/start-intents/"+seg(intentID)+"/status", in, &out, opts...); err != nil {
		return nil, err
	}
	return &out, nil
}
