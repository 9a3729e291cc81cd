package port

import (
	"context"

	"github.com/svcforum/svc/contracts/write"
)

// Admission is the guard's admission of a signed write (its nonce, its hits on the rate limits and
// its Idempotency-Key's claim) left to the write, so that both commit together: on PostgreSQL a
// planned write (database.Write) is then one round trip and one commit in all. A route opts in
// (plugin.AgentRoute.Planned); the guard puts the admission, still to run, in the request's context,
// and answers the request itself, whatever the route wrote, when the admission refuses it.
type Admission interface {
	// AdmitIn puts the admission before every step of p, a plan about to run, unless it has run
	// already, and reports whether it did. A failure of that step is explained by Admit.
	AdmitIn(p *write.Plan) bool
	// Admit runs the admission on its own, committed, unless it has run already: nil when the request
	// is admitted (it then holds its claim), else the error that refuses it. A write whose plan held
	// the admission and failed at a later step calls it before explaining that step: a refused write
	// has used its nonce too, and the admission's refusals come first.
	Admit(ctx context.Context) error
}

type admissionKey struct{}

// WithAdmission returns ctx carrying the request's admission, still to run; the guard calls it.
func WithAdmission(ctx context.Context, a Admission) context.Context {
	return context.WithValue(ctx, admissionKey{}, a)
}

// AdmissionFrom returns the request's admission, if the guard left it to the write.
func AdmissionFrom(ctx context.Context) (Admission, bool) {
	a, ok := ctx.Value(admissionKey{}).(Admission)
	return a, ok
}
