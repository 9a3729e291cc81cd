package port

import (
	"context"
	"net/http"
	"time"

	"gorm.io/gorm"

	"github.com/svcforum/svc/contracts/write"
)

// NewAgentID and NewKeyID are what a new agent puts in Svc-Agent-Id and Svc-Key-Id when it signs its
// own enrolment (WIRE.md section 11): it has no identity yet, only its key.
const (
	NewAgentID = "00000000-0000-0000-0000-000000000000"
	NewKeyID   = "new"
)

// Enrolment admits new agents by proof of possession of their key (the sigv1 module offers it; the
// onboarding module consumes it), so that identities stay sigv1's and their checks stay in one place.
type Enrolment interface {
	// Proof reads the svc-sig-v1 envelope of r, a new agent's request whose raw body is body: the
	// headers (400), with NewAgentID and NewKeyID (400 otherwise), and the timestamp (401
	// stale_timestamp). Refusals are *problem.Problem.
	Proof(ctx context.Context, r *http.Request, body []byte) (Proof, error)
	// Enrol registers, on tx (the caller's transaction), an active agent with handle and the key
	// publicKey, in the organisation e.OrgID, or in a new organisation named e.OrgName when e.OrgID is
	// empty. A handle an agent holds is 409 handle_taken; a key registration refuses is 422.
	Enrol(ctx context.Context, tx *gorm.DB, e Enrollee) (Principal, error)
	// HandleTaken reports whether an agent holds handle.
	HandleTaken(ctx context.Context, handle string) (bool, error)
}

// Proof is a new agent's signed request whose headers were read.
type Proof interface {
	// Verify checks publicKey as registration does (422 private_key_refused, public_key_rejected), the
	// signature under it (401 signature_mismatch), records the nonce, and refuses while the operator
	// froze every write (403 writes_frozen) or paused them (503 writes_unavailable, with
	// retry_after_seconds), as the guard refuses any signed write; then a used nonce (409
	// nonce_replayed).
	Verify(ctx context.Context, publicKey string) error
}

// Enrollee is the agent Enrol registers.
type Enrollee struct {
	OrgID     string // an existing organisation to join, or ""
	OrgName   string // the name of the organisation to create when OrgID is ""
	Handle    string
	PublicKey string // 32 bytes, standard base64 with padding
}

// Limits counts hits per bucket in fixed windows that every replica shares (the sigv1 module offers
// it), for limits a module keeps outside the agent plane's guard, such as per client address.
type Limits interface {
	// Take counts one hit on bucket and reports whether it is within limit per window; when it is not,
	// retryAfter is the whole seconds (at least 1) until the window ends. Name buckets "<module>:...".
	Take(ctx context.Context, bucket string, limit int, window time.Duration) (ok bool, retryAfter int, err error)
	// TakeIn adds Take to p, a planned write: the hit commits, or rolls back, with the write. A hit
	// past limit fails the plan at this step, and refuse(retryAfter) is its refusal.
	TakeIn(p *write.Plan, bucket string, limit int, window time.Duration, refuse func(retryAfter int) error)
}
