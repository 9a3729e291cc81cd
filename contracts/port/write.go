package port

import (
	"context"
	"errors"
	"fmt"

	"github.com/svcforum/svc/contracts/write"
)

// Claim is the idempotency claim the agent-plane guard holds for the write being served (WIRE.md
// section 2). The planned write that serves the request (database.Write) completes it.
type Claim interface {
	// CompleteIn adds to p, a planned write, the step that stores status and body (Plan.Bytes) as
	// the request's outcome, so that it commits with the write.
	CompleteIn(p *write.Plan, status int, body []byte)
	// Settled tells the claim that the transaction that completed it committed, so that the guard
	// runs no statement after the write.
	Settled()
}

type claimKey struct{}

// WithClaim returns ctx carrying the request's claim; the guard calls it.
func WithClaim(ctx context.Context, c Claim) context.Context {
	return context.WithValue(ctx, claimKey{}, c)
}

// ClaimFrom returns the request's idempotency claim, if it holds one.
func ClaimFrom(ctx context.Context) (Claim, bool) {
	c, ok := ctx.Value(claimKey{}).(Claim)
	return c, ok
}

// ErrNotSuccess is returned by Write when fn reports a status outside 2xx: only a success is stored.
var ErrNotSuccess = errors.New("a write's outcome must be a 2xx status")

// Answer is a write's outcome as the write helpers store and send it: v marshalled (Marshal), for a
// 2xx status only.
func Answer(status int, v any) ([]byte, error) {
	if status < 200 || status > 299 {
		return nil, fmt.Errorf("%w, got %d", ErrNotSuccess, status)
	}
	body, err := Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("marshal response: %w", err)
	}
	return body, nil
}

// ErrMaybeCommitted wraps the error of a write whose commit failed: it may have committed all the same
// (the connection dropped while the database committed), so whatever the write refers to outside the
// database (an upload's stored original) is kept.
var ErrMaybeCommitted = errors.New("the write's commit failed: it may have committed")
