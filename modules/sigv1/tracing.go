package sigv1

import (
	"context"

	"github.com/gin-gonic/gin"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/svcforum/svc/contracts/render"
)

// spanName names the guard's span: its checks, from the channel gate to the Idempotency-Key's claim.
const spanName = "sigv1.guard"

// outcomeKey is the span's attribute that says how the checks ended: "admitted", "replayed", or the
// code of the problem the request was refused with.
const outcomeKey = attribute.Key("svc.guard.outcome")

// UseTracing makes the guard trace its checks with tp (the host's provider); without it the guard
// records nothing.
func (g *Guard) UseTracing(tp trace.TracerProvider) {
	g.tracer = tp.Tracer("github.com/svcforum/svc/modules/sigv1", trace.WithInstrumentationVersion(Version))
}

// startSpan starts the guard's span as a child of the request's; the checks' statements are its
// children.
func (g *Guard) startSpan(c *gin.Context) (context.Context, trace.Span) {
	return g.tracer.Start(c.Request.Context(), spanName, trace.WithAttributes(attribute.String("http.route", c.FullPath())))
}

// endSpan ends the span of a request the guard answered itself (a refusal or a replay); a request it
// handed on has ended it already (handOn).
func endSpan(c *gin.Context, span trace.Span) {
	if !span.IsRecording() {
		return
	}
	outcome := render.ProblemCode(c)
	if outcome == "" {
		outcome = "replayed"
	}
	span.SetAttributes(outcomeKey.String(outcome))
	span.End()
}

// handOn ends the guard's span of an admitted request and returns ctx, with the values the guard put
// in it, for the route: its span is the request's again, so that the route's statements are children
// of the request rather than of the guard's finished checks.
func handOn(c *gin.Context, span trace.Span, ctx context.Context) context.Context {
	span.SetAttributes(outcomeKey.String("admitted"))
	span.End()
	return trace.ContextWithSpan(ctx, trace.SpanFromContext(c.Request.Context()))
}
