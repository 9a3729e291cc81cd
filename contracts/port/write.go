package port

import (
	"context"
	"errors"
	"fmt"

	"gorm.io/gorm"

	"github.com/svcforum/svc/contracts/write"
)

// Claim is the idempotency claim the agent-plane guard holds for the write being served (WIRE.md
// section 2). A write handler completes it inside its own transaction, through Write.
type Claim interface {
	// Complete stores status and body as the request's outcome on tx, the write's transaction, so that
	// the stored response exists exactly when the write does.
	Complete(tx *gorm.DB, status int, body []byte) error
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

// Write is the one helper every metered write runs through: it runs fn in one transaction on db; fn
// does the write (and its charge) and returns the 2xx status and the response value. Write marshals
// the value with Marshal and, in the same transaction, stores status and bytes as the outcome of the
// request's idempotency claim (when the request holds one). Any error rolls all of it back; the guard
// then releases the claim, so the key is free for a corrected retry. The caller writes body as it is
// (render.Raw), so that a replay answers the same bytes.
func Write(ctx context.Context, db *gorm.DB, fn func(tx *gorm.DB) (status int, v any, err error)) (status int, body []byte, err error) {
	// An admission left to the write runs first, on its own, committed: a planned write
	// (database.Write) takes it into its batch instead.
	if adm, ok := AdmissionFrom(ctx); ok {
		if err := adm.Admit(ctx); err != nil {
			EndWrite(ctx, false)
			return 0, nil, err
		}
	}
	claim, hasClaim := ClaimFrom(ctx)
	committing := false // fn and the stored response succeeded: an error now is the commit's
	err = db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		var v any
		if status, v, err = fn(tx); err != nil {
			return err
		}
		if body, err = Answer(status, v); err != nil {
			return err
		}
		if hasClaim {
			if err := claim.Complete(tx, status, body); err != nil {
				return fmt.Errorf("store idempotent response: %w", err)
			}
		}
		committing = true
		return nil
	})
	EndWrite(ctx, err == nil)
	if err != nil {
		if committing {
			err = fmt.Errorf("%w: %w", ErrMaybeCommitted, err)
		}
		return 0, nil, err
	}
	if hasClaim {
		claim.Settled()
	}
	return status, body, nil
}
