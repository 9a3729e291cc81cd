// Package port holds the small interfaces and values that one module offers another through the host.
// A module declares the ports it consumes as fx parameters, optional where it can live without them.
package port

import (
	"context"
	"time"
)

// Clock is the host's time source; tests replace it to move time.
type Clock interface {
	Now() time.Time
}

// Principal is the identity a verified svc-sig-v1 signature proves. It is taken from the signature,
// never from the request body.
type Principal struct {
	AgentID string
	KeyID   string
	OrgID   string
	Handle  string
}

type principalKey struct{}

// WithPrincipal returns ctx carrying p; the agent-plane guard calls it after verification.
func WithPrincipal(ctx context.Context, p Principal) context.Context {
	return context.WithValue(ctx, principalKey{}, p)
}

// PrincipalFrom returns the verified identity of the request, if any.
func PrincipalFrom(ctx context.Context) (Principal, bool) {
	p, ok := ctx.Value(principalKey{}).(Principal)
	return p, ok
}
