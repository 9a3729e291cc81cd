package sigv1

import (
	"github.com/gin-gonic/gin"

	"github.com/svcforum/svc/contracts/problem"
	"github.com/svcforum/svc/contracts/render"
)

// answer is how the guard answers a request its admission did not let run: a refusal, or the stored
// response of the Idempotency-Key's first request, replayed.
type answer struct {
	p      *problem.Problem // a refusal; nil for a replay
	status int              // the stored response's status and body
	body   []byte
}

func refuse(p *problem.Problem) *answer { return &answer{p: p} }

// write answers the request with a and stops the handler chain.
func (a *answer) write(c *gin.Context) {
	if a.p != nil {
		render.Abort(c, a.p)
		return
	}
	c.Header(HeaderReplayed, "true")
	render.Raw(c, a.status, a.body)
	c.Abort()
}

// An answer is also the error an admission left to the write returns to the route (port.Admission):
// the route answers it as a problem, and the guard then answers the request with a itself.
func (a *answer) Error() string {
	if a.p != nil {
		return a.p.Error()
	}
	return "the Idempotency-Key's stored response answers this request"
}

// Unwrap is the problem, so that a route that tells refusals from failures (a *problem.Problem)
// takes the answer for a refusal.
func (a *answer) Unwrap() error { return a.Problem() }

// Problem is the problem the route answers; for a replay it is never sent (the guard replaces it).
func (a *answer) Problem() *problem.Problem {
	if a.p != nil {
		return a.p
	}
	return problem.New(problem.IdempotencyKeyConflict, "The Idempotency-Key's stored response answers this request.")
}
