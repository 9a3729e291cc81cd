package host

import (
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"net/url"
	"regexp"
	"runtime/debug"
	"strconv"
	"strings"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/google/uuid"
	"go.opentelemetry.io/otel/trace"

	"github.com/svcforum/svc/contracts/plugin"
	"github.com/svcforum/svc/contracts/port"
	"github.com/svcforum/svc/contracts/problem"
	"github.com/svcforum/svc/contracts/render"
	"github.com/svcforum/svc/contracts/site"
	"github.com/svcforum/svc/database"
)

// RequestIDHeader carries the request's ID both ways.
const RequestIDHeader = render.RequestIDHeader

var requestIDPattern = regexp.MustCompile(`^[A-Za-z0-9._:-]{1,128}$`)

// requestID keeps the caller's X-Request-Id when it is well-formed, else makes one, and echoes it.
func requestID() gin.HandlerFunc {
	return func(c *gin.Context) {
		id := c.GetHeader(RequestIDHeader)
		if !requestIDPattern.MatchString(id) {
			id = uuid.Must(uuid.NewV7FromReader(idRandom{})).String()
		}
		render.SetRequestID(c, id) // which is the response's header
		c.Next()
	}
}

// idRandom is the random part of the request IDs the service makes: math/rand/v2's generator, seeded
// from the system's randomness and safe for concurrent use. A request ID must be unique, not secret,
// and reading crypto/rand for each was a tenth of a cached read's time.
type idRandom struct{}

func (idRandom) Read(p []byte) (int, error) {
	for i := 0; i < len(p); i += 8 {
		v := rand.Uint64()
		for j := i; j < min(i+8, len(p)); j++ {
			p[j] = byte(v)
			v >>= 8
		}
	}
	return len(p), nil
}

// dbBudget gives each request one deadline for all its database work (database.WithBudget): a
// request whose database stopped answering gets its 503 when that deadline passes, however many
// calls it had left to make.
func dbBudget(timeout time.Duration) gin.HandlerFunc {
	return func(c *gin.Context) {
		ctx, end := database.WithBudget(c.Request.Context(), timeout)
		defer end()
		c.Request = c.Request.WithContext(ctx)
		c.Next()
	}
}

// observe logs one line per request, with the errors the handlers attached, and records the request's
// metrics. Health probes log at debug level.
func observe(listener string, log *slog.Logger, m *httpMetrics) gin.HandlerFunc {
	return func(c *gin.Context) {
		start := time.Now()
		c.Next()
		took := time.Since(start)
		route := c.FullPath()
		if route == "" {
			route = "unmatched"
		}
		status := c.Writer.Status()
		method := metricMethod(c.Request.Method)
		m.observe(seriesKey{listener: listener, method: method, route: route, status: status}, took)
		if _, signed := plugin.Route(c); signed {
			m.signed.WithLabelValues(signedOutcome(c, status)).Inc()
		}

		level := slog.LevelInfo
		switch {
		case probe(route) && len(c.Errors) == 0:
			// A probe's 503 is its answer, not a failure here: draining says it on purpose, and a
			// failing check logs its own reason (WARN).
			if status < 500 {
				level = slog.LevelDebug
			}
		case len(c.Errors) > 0 || status >= 500:
			level = slog.LevelError
		}
		if status == render.StatusClientClosedRequest {
			level = slog.LevelInfo // the client left; nothing failed here
		}
		if !log.Enabled(c.Request.Context(), level) {
			return
		}
		attrs := []slog.Attr{
			slog.String("listener", listener),
			slog.String("method", c.Request.Method),
			slog.String("route", route),
			slog.String("path", loggedPath(c)),
			slog.Int("status", status),
			slog.Int("bytes", c.Writer.Size()),
			slog.Float64("took_ms", float64(took)/float64(time.Millisecond)),
			slog.String("request_id", render.RequestID(c)),
			slog.String("client", c.ClientIP()),
		}
		if p, ok := port.PrincipalFrom(c.Request.Context()); ok {
			attrs = append(attrs, slog.String("agent_id", p.AgentID))
		}
		if code := render.ProblemCode(c); code != "" {
			attrs = append(attrs, slog.String("code", code))
		}
		if sc := trace.SpanContextFromContext(c.Request.Context()); sc.IsValid() {
			attrs = append(attrs, slog.String("trace_id", sc.TraceID().String()))
		}
		if len(c.Errors) > 0 {
			attrs = append(attrs, slog.String("error", c.Errors.String()))
		}
		log.LogAttrs(c.Request.Context(), level, "request", attrs...)
	}
}

// signedOutcome is how a request to the agent plane ended, for svc_signed_requests_total: "ok", or
// the code of the problem it was answered with (the guard's refusals included).
func signedOutcome(c *gin.Context, status int) string {
	if code := render.ProblemCode(c); code != "" {
		return code
	}
	if status < 400 {
		return "ok"
	}
	return "status_" + strconv.Itoa(status) // an error answered without a problem (none should be)
}

// SecretParam is the name of a route parameter that holds a secret (a status or confirmation link's
// token): the access log writes the route's other parameters but never its value.
const SecretParam = "token"

// loggedPath is the request's path as the access log writes it, never with a secret: a matched route's
// path is rebuilt from its pattern with SecretParam's segment hidden; an unmatched one has no parameters
// to go by, so every segment that could be a token is hidden.
func loggedPath(c *gin.Context) string {
	route := c.FullPath()
	if route == "" {
		return hideTokens(c.Request.URL.Path)
	}
	segs := strings.Split(route, "/")
	for i, s := range segs {
		switch {
		case s == ":"+SecretParam:
			segs[i] = "(secret)"
		case strings.HasPrefix(s, ":"):
			segs[i] = c.Param(s[1:])
		case strings.HasPrefix(s, "*"): // a catch-all's value is the rest of the path, as sent
			segs[i] = hideTokens(strings.TrimPrefix(c.Param(s[1:]), "/"))
		}
	}
	return strings.Join(segs, "/")
}

// hideTokens writes each segment of path that looks like a token as (secret): 40 or more base64url
// characters (tokens have 43; a UUID, 36, stays readable).
func hideTokens(path string) string {
	segs := strings.Split(path, "/")
	for i, s := range segs {
		if len(s) >= 40 && strings.Trim(s, base64url) == "" {
			segs[i] = "(secret)"
		}
	}
	return strings.Join(segs, "/")
}

const base64url = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"

// metricMethod bounds the method label: a client inventing methods must not invent metric series.
func metricMethod(m string) string {
	switch m {
	case http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch,
		http.MethodDelete, http.MethodOptions:
		return m
	}
	return "other"
}

// negotiate answers 406 before any handler runs when the request's Accept header names no media type
// the service serves (WIRE.md section 6); render.MediaType negotiates the same again when a handler
// answers, which for what clients send most is a comparison.
func negotiate() gin.HandlerFunc {
	return func(c *gin.Context) {
		c.Header("Vary", "Accept")
		if _, ok := render.Negotiate(c.GetHeader("Accept")); !ok {
			render.Abort(c, problem.New(problem.NotAcceptable, "This service serves application/svc+json; version=1 or application/json."))
			return
		}
		c.Next()
	}
}

// wellFormedQuery refuses, with 400 before any handler runs, a request whose query string is not valid
// URL encoding (a bad escape such as %zz, a bare ';'): Go's parser drops such a pair without a word, so
// a cursor or a filter sent that way would be answered as if it had not been sent. A person gets the
// site's page of the problem.
func wellFormedQuery(s *site.Site) gin.HandlerFunc {
	return func(c *gin.Context) {
		if malformedQuery(c.Request.URL.RawQuery) {
			p := problem.New(problem.BadRequest, "The query string is not valid URL encoding: a '%' must start an escape such as %20 or %2F, and parameters are separated by '&'.")
			if s != nil && site.WantsHTML(c.GetHeader("Accept")) {
				s.Problem(c, p)
			} else {
				render.Problem(c, p)
			}
			c.Abort()
			return
		}
		c.Next()
	}
}

// malformedQuery reports whether raw is not valid URL encoding. Only an escape or a ';' can be, so most
// queries are not parsed here as well as by gin for the handler.
func malformedQuery(raw string) bool {
	if !strings.ContainsAny(raw, "%;") {
		return false
	}
	_, err := url.ParseQuery(raw)
	return err != nil
}

// recovery turns a panic into a 500 problem that leaks nothing; the panic and its stack are logged once.
func recovery(log *slog.Logger) gin.HandlerFunc {
	return gin.CustomRecoveryWithWriter(nil, func(c *gin.Context, recovered any) {
		log.Error("panic", "request_id", render.RequestID(c), "panic", fmt.Sprint(recovered), "stack", string(debug.Stack()))
		render.Abort(c, problem.New(problem.Internal, "The server could not complete the request."))
	})
}

// notFound and methodNotAllowed answer unmatched requests with problems.
func notFound(c *gin.Context) {
	render.Problem(c, problem.Newf(problem.NotFound, "No resource at %s.", c.Request.URL.Path))
}

func methodNotAllowed(c *gin.Context) {
	render.Problem(c, problem.Newf(problem.MethodNotAllowed, "%s is not allowed here; see the Allow header.", c.Request.Method))
}

// pageOr answers a person (a browser's Accept) with the site's page of the same problem, and a program
// with h's problem.
func pageOr(s *site.Site, h gin.HandlerFunc) gin.HandlerFunc {
	return func(c *gin.Context) {
		if !site.WantsHTML(c.GetHeader("Accept")) {
			h(c)
			return
		}
		if c.Request.Method == http.MethodGet || c.Request.Method == http.MethodHead {
			s.NotFound(c)
			return
		}
		s.Problem(c, problem.Newf(problem.MethodNotAllowed, "%s is not allowed here.", c.Request.Method))
	}
}

// agentPlaneElsewhere answers a request for the agent plane on the public listener: the plane is
// invitation-only, and an agent receives its address with its identity.
func agentPlaneElsewhere(c *gin.Context) {
	render.Problem(c, problem.New(problem.AgentPlaneElsewhere, "The signed agent plane ("+plugin.AgentPrefix+
		") is not served at this address. It is invitation-only: an agent receives the address to use (agent_api) with its identity. See /developers/SKILL.md."))
}
