package sigv1

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/gin-gonic/gin"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"

	"github.com/svcforum/svc/contracts/bind"
	"github.com/svcforum/svc/contracts/plugin"
	"github.com/svcforum/svc/contracts/port"
	"github.com/svcforum/svc/contracts/problem"
	"github.com/svcforum/svc/contracts/render"
	"github.com/svcforum/svc/database"
)

// MaxBody is the largest body of a signed request (spec section 8).
const MaxBody = 65536

// HeaderReplayed marks a response that is the stored answer to an earlier request with the same
// Idempotency-Key.
const HeaderReplayed = "Idempotent-Replayed"

// Guard is the verifier in front of every agent-plane route. It runs the checks of WIRE.md section 1
// in the table's order, each refusing with its own status and code, then hands the verified identity
// to the route (port.PrincipalFrom) and, for a write, holds the Idempotency-Key's claim while the route
// runs (the planned write, database.Write, completes it).
type Guard struct {
	cfg       Config
	clock     port.Clock
	log       *slog.Logger
	registry  *Registry
	switches  *Switches
	nonces    *Nonces
	limiter   *Limiter
	claims    *Claims
	admission *Admission
	memory    *Memory      // nil: every check reads the database
	tracer    trace.Tracer // a no-op until UseTracing
	throttled throttledAgents
	metrics   *guardMetrics
}

// NewGuard returns the guard.
func NewGuard(cfg Config, clock port.Clock, log *slog.Logger, registry *Registry, switches *Switches, nonces *Nonces, limiter *Limiter, claims *Claims) *Guard {
	return &Guard{cfg: cfg, clock: clock, log: log, registry: registry, switches: switches, nonces: nonces, limiter: limiter, claims: claims,
		admission: &Admission{db: claims.db, claims: claims}, metrics: newGuardMetrics(), tracer: noop.NewTracerProvider().Tracer("")}
}

// Plugin is the guard as the host mounts it.
func (g *Guard) Plugin() *plugin.Guard {
	return &plugin.Guard{Module: ID, Handlers: []gin.HandlerFunc{g.Handle}}
}

// Handle verifies one request (see Guard).
func (g *Guard) Handle(c *gin.Context) {
	ctx, span := g.startSpan(c)
	defer endSpan(c, span)
	route, _ := plugin.Route(c)

	// The channel gate.
	channel := plugin.Channel(c)
	open, err := g.gateOpen(ctx, channel)
	if err != nil {
		g.unavailable(c, err)
		return
	}
	if !open {
		render.Abort(c, problem.Newf(problem.ChannelClosed, "The %s agent channel is closed by the operator.", channel))
		return
	}

	// The body, read once and never past the limit.
	body, p := readBody(c, route)
	if p != nil {
		render.Abort(c, p)
		return
	}
	if bind.Encoded(c.Request.Header) {
		render.Abort(c, problem.New(problem.UnsupportedMediaType, "Content-Encoding is not supported: send the body unencoded, as it was signed."))
		return
	}

	// The signature: headers, freshness, key, signature.
	env, err := ParseHeaders(c.Request.Method, c.Request.RequestURI, c.Request.Header)
	if err != nil {
		g.authFailed(c, err)
		return
	}
	env.BodySHA256 = BodySHA256(body)
	now := g.clock.Now()
	if err := env.CheckFreshness(now); err != nil {
		g.burnFutureNonce(ctx, env, now)
		g.authFailed(c, err)
		return
	}
	id, found, err := g.lookup(ctx, env.AgentID, env.KeyID)
	if err != nil {
		g.unavailable(c, err)
		return
	}
	if !found {
		g.authFailed(c, problem.Newf(problem.UnknownKey, "No key with this %s is registered to the agent of %s.", HeaderKeyID, HeaderAgentID))
		return
	}
	if !id.verifies(env) {
		g.authFailed(c, problem.New(problem.SignatureMismatch, "The signature does not verify over the canonical string of this request (method, raw target, headers and SHA-256 of the raw body)."))
		return
	}

	// The states of agent and key, and whether writes may run now.
	var refusal *problem.Problem
	switch {
	case id.AgentState != AgentActive:
		refusal = problem.New(problem.AgentSuspended, "This agent is suspended by the operator.")
	case id.KeyState != KeyActive:
		refusal = problem.New(problem.KeyRevoked, "This key is revoked; sign with another active key of the agent.")
	case route.Write:
		if refusal, err = g.writeBlock(ctx, id.AgentID, id.OrgID); err != nil {
			g.unavailable(c, err)
			answered(c)
			g.burnNonce(database.Afterwards(ctx), env, now)
			return
		}
	}

	// The nonce, the rate limits and the Idempotency-Key's claim, in one round trip. The nonce is
	// recorded, and committed, as soon as the signature verifies: a request refused at any later step
	// (a state, a limit, a failed write) has used it, so its bytes can never run later. A replay is
	// answered after the states, in WIRE.md's order.
	a := admission{agentID: id.AgentID, nonce: env.Nonce, at: now, proceed: refusal == nil,
		window: g.cfg.RateWindow, maxTries: g.cfg.AttemptsPerWindow, maxWrites: g.cfg.WritesPerWindow}
	if !route.Uncounted {
		a.attempts = "attempts:" + id.AgentID
	}
	if route.Write {
		a.writes, a.key, a.print = "writes:"+id.AgentID, env.IdempotencyKey, Fingerprint(env.Method, env.Target, env.BodySHA256)
	}
	ctx = port.WithPrincipal(ctx, port.Principal{AgentID: id.AgentID, KeyID: id.KeyID, OrgID: id.OrgID, Handle: id.Handle})
	if refusal == nil && route.Write && route.Planned && g.leavesAdmission(id.AgentID, now) {
		g.leave(c, span, ctx, a, route, now)
		return
	}
	adm, err := g.admit(ctx, a)
	if err != nil {
		g.unavailable(c, err)
		return
	}
	if refusal != nil {
		render.Abort(c, refusal)
		return
	}
	res, ans, err := g.verdict(ctx, a, adm)
	if err != nil {
		g.unavailable(c, err)
		return
	}
	if adm.fresh {
		g.announceLimits(c, route.Write, route.Uncounted, adm, now)
	}
	if ans != nil {
		ans.write(c)
		return
	}
	if !route.Write {
		c.Request = c.Request.WithContext(handOn(c, span, ctx))
		c.Next()
		return
	}
	// A write that committed stored its response on the claim, and database.Write settled it: nothing is
	// left to do. Any other outcome, a panic included, frees the key for a corrected retry.
	defer g.release(c, ctx, res.claim)
	c.Request = c.Request.WithContext(port.WithClaim(handOn(c, span, ctx), res.claim))
	c.Next()
}

// admit runs a's admission on its own.
func (g *Guard) admit(ctx context.Context, a admission) (admitted, error) {
	adm, err := g.admission.Admit(ctx, a)
	if err == nil {
		g.metrics.admissions.WithLabelValues(admittedAlone).Inc()
	}
	return adm, err
}

// verdict is the guard's answer to a request its states let through, from its admission: nil when
// the request is admitted (with its claim, for a write), else a refusal or a stored response to
// replay. The claim is taken again here when the admission could not settle it.
func (g *Guard) verdict(ctx context.Context, a admission, adm admitted) (claimResult, *answer, error) {
	switch {
	case !adm.fresh:
		return claimResult{}, refuse(problem.Newf(problem.NonceReplayed, "This %s was already used by the agent; sign every request, retries included, with a new nonce.", HeaderNonce)), nil
	case adm.attemptsRetry > 0:
		g.throttle(a.agentID, adm.attempts.endMS)
		return claimResult{}, refuse(rateLimited(adm.attemptsRetry, "Too many %s in this window (%d per %s).", "authenticated requests by this agent", g.cfg.AttemptsPerWindow, g.cfg.RateWindow)), nil
	case adm.writesRetry > 0:
		g.throttle(a.agentID, adm.writes.endMS)
		return claimResult{}, refuse(rateLimited(adm.writesRetry, "Too many %s in this window (%d per %s).", "writes by this agent", g.cfg.WritesPerWindow, g.cfg.RateWindow)), nil
	case a.writes == "":
		return claimResult{}, nil, nil
	}
	res := adm.claim
	if adm.claimUndecided {
		var err error
		if res, err = g.claims.Claim(ctx, a.agentID, a.key, a.print, a.at); err != nil {
			return claimResult{}, nil, err
		}
	}
	switch res.outcome {
	case replay:
		return res, &answer{status: res.status, body: res.body}, nil
	case conflict:
		return res, refuse(problem.New(problem.IdempotencyKeyConflict, "This Idempotency-Key was used by the agent for a different request (method, target or body) in the last 24 hours; use a new key for a new request.")), nil
	case inFlight:
		return res, refuse(problem.New(problem.IdempotencyRequestInFlight, "The first request with this Idempotency-Key is still running; retry after a second.").With("retry_after_seconds", 1)), nil
	}
	return res, nil, nil
}

// release frees the claim of a write that did not commit (it is safe to call always).
func (g *Guard) release(c *gin.Context, ctx context.Context, cl *claim) {
	if cl == nil || cl.settled {
		return
	}
	answered(c)
	released, err := cl.release(database.Afterwards(ctx))
	switch {
	case err != nil:
		g.log.WarnContext(ctx, "idempotency key not released; it frees itself when its lease ends", "error", err)
	case released && c.Writer.Status() >= 200 && c.Writer.Status() < 300:
		// The route answered a success without storing it (it did not run through database.Write):
		// a retry would run it again.
		g.log.ErrorContext(ctx, "a write answered 2xx without storing its response (database.Write)", "route", c.FullPath())
	}
}

// gateOpen, lookup and writeBlock answer from the memory while it is fresh (Memory.fresh), else from
// the database. A key the memory does not hold is looked up in the database: it may have been added
// since the snapshot (an agent enrolled on another replica).
func (g *Guard) gateOpen(ctx context.Context, channel string) (bool, error) {
	if s := g.memory.fresh(); s != nil {
		return !s.switches[gateSwitch(channel)], nil
	}
	return g.switches.GateOpen(ctx, channel)
}

func (g *Guard) lookup(ctx context.Context, agentID, keyID string) (identity, bool, error) {
	if s := g.memory.fresh(); s != nil {
		if id, ok := s.keys[keyID]; ok {
			return id, id.AgentID == agentID, nil
		}
	}
	return g.registry.lookup(ctx, agentID, keyID)
}

func (g *Guard) writeBlock(ctx context.Context, agentID, orgID string) (*problem.Problem, error) {
	return writeBlock(ctx, g.memory, g.switches, agentID, orgID)
}

// writeBlock is what stops a write by agentID of orgID now (blockOf), read from memory while it is
// fresh, else from the database.
func writeBlock(ctx context.Context, m *Memory, switches *Switches, agentID, orgID string) (*problem.Problem, error) {
	if s := m.fresh(); s != nil {
		return blockOf(agentID, orgID, func(name string) bool { return s.switches[name] }), nil
	}
	return switches.writeBlock(ctx, agentID, orgID)
}

// futureNonceMemory bounds how far ahead a nonce of a request from the future is remembered.
const futureNonceMemory = 24 * time.Hour

// burnFutureNonce records the nonce of a correctly signed request refused because its timestamp is
// ahead of the server's clock, from that timestamp on (at most futureNonceMemory ahead): otherwise the
// same bytes would become fresh, and run, once the clock caught up. A request stale in the past can
// never become fresh, and an incorrectly signed one proves nothing, so neither is recorded. Failures
// here are ignored: the request is refused either way.
func (g *Guard) burnFutureNonce(ctx context.Context, env Envelope, now time.Time) {
	ts, ok := env.Unix()
	if !ok || ts <= now.Unix() {
		return
	}
	id, found, err := g.lookup(ctx, env.AgentID, env.KeyID)
	if err != nil || !found {
		return
	}
	if !id.verifies(env) {
		return
	}
	at := time.Unix(ts, 0)
	if limit := now.Add(futureNonceMemory); at.After(limit) {
		at = limit
	}
	if _, err := g.nonces.Record(ctx, env.AgentID, env.Nonce, at); err != nil {
		g.log.WarnContext(ctx, "nonce of a request from the future not recorded", "error", err)
	}
}

// burnNonce records the nonce of a verified request that cannot be admitted (the database failed a
// check), so that its bytes cannot run later. Failures are ignored: the request is refused either way.
func (g *Guard) burnNonce(ctx context.Context, env Envelope, now time.Time) {
	if _, err := g.nonces.Record(ctx, env.AgentID, env.Nonce, now); err != nil {
		g.log.WarnContext(ctx, "nonce of a refused request not recorded", "error", err)
	}
}

// authFailed answers a request that failed authentication with p, unless its client address has
// failed too often in this window: then with 429. The address is gin's ClientIP, which believes
// X-Forwarded-For only from the host's trusted proxies. An Uncounted route (whose statuses exclude 429)
// counts the failure but answers p. When the count cannot be kept, p is answered anyway: the request
// is refused either way.
func (g *Guard) authFailed(c *gin.Context, err error) {
	var p *problem.Problem
	if !errors.As(err, &p) {
		g.unavailable(c, err)
		return
	}
	route, _ := plugin.Route(c)
	ok, retry, lerr := g.limiter.Take(c.Request.Context(), "failed-auth:"+plugin.ClientKey(c), g.cfg.FailedAuthPerWindow, g.cfg.RateWindow, g.clock.Now())
	if lerr != nil {
		_ = c.Error(lerr)
	}
	if lerr == nil && !ok && !route.Uncounted {
		p = rateLimited(retry, "Too many requests from this address failed authentication in this window.")
		writeLimitFields(c, g.cfg.RateWindow, quota{name: policyFailedAuth, limit: g.cfg.FailedAuthPerWindow, counted: true, reset: retry})
	}
	render.Abort(c, p)
}

// unavailable answers 503 when the database cannot answer a check: the guard fails closed.
func (g *Guard) unavailable(c *gin.Context, err error) { unavailable(c, err) }

// answered sends the client the answer written so far, before the clean-up that follows it (freeing a
// key, recording a nonce: database.Afterwards), so that a request whose database stopped answering has
// its 503 within its one deadline, not after its clean-up has waited another.
func answered(c *gin.Context) {
	if c.Writer.Written() {
		c.Writer.Flush()
	}
}

func unavailable(c *gin.Context, err error) {
	if render.ClientGone(c, err) {
		c.AbortWithStatus(render.StatusClientClosedRequest)
		return
	}
	_ = c.Error(err)
	render.Abort(c, problem.New(problem.NotReady, "The service cannot verify requests right now (its database is unavailable); retry shortly.").With("retry_after_seconds", 1))
}

func rateLimited(retryAfter int, format string, args ...any) *problem.Problem {
	return problem.Newf(problem.RateLimited, format, args...).With("retry_after_seconds", retryAfter)
}

// readBody reads the whole body, refusing (413) one larger than the route's limit (MaxBody unless
// the route sets its own) without reading past it: at once when Content-Length says so, else after
// limit+1 bytes of a chunked body; a body not received within the route's receive timeout (the
// listener's read timeout for a route without one) is 408, and the 408 is given time to be written. The
// bytes are kept for the route (gin.BodyBytesKey, and a fresh Request.Body).
// AnswerTime is how long a route with its own receive timeout has to answer once its body's deadline
// passed (its work and the write of the answer).
const AnswerTime = 30 * time.Second

func readBody(c *gin.Context, route plugin.AgentRoute) ([]byte, *problem.Problem) {
	limit := int64(MaxBody)
	if route.MaxBody > 0 {
		limit = route.MaxBody
	}
	tooLarge := problem.Newf(problem.BodyTooLarge, "The request body exceeds %d bytes.", limit)
	if c.Request.ContentLength > limit {
		c.Header("Connection", "close")
		return nil, tooLarge
	}
	if route.ReceiveTimeout > 0 {
		// The route's own deadline replaces the listener's read timeout for this body, and the write
		// deadline moves with it: the listener's write timeout runs from the request's headers, so a
		// body allowed to take longer would otherwise leave no time to answer (not even the 408).
		rc := http.NewResponseController(c.Writer)
		received := time.Now().Add(route.ReceiveTimeout)
		_ = rc.SetReadDeadline(received)
		_ = rc.SetWriteDeadline(received.Add(AnswerTime))
	}
	body, err := io.ReadAll(http.MaxBytesReader(c.Writer, c.Request.Body, limit))
	if err != nil {
		var mbe *http.MaxBytesError
		var ne net.Error
		switch {
		case errors.As(err, &mbe):
			return nil, tooLarge
		case errors.As(err, &ne) && ne.Timeout():
			// The listener's write timeout runs from the request's headers, like its read timeout, so
			// a body that used up the read timeout (a route without its own) leaves no time for the
			// 408 either, and the client would see the connection drop: give the answer its time.
			_ = http.NewResponseController(c.Writer).SetWriteDeadline(time.Now().Add(AnswerTime))
			c.Header("Connection", "close")
			return nil, problem.New(problem.RequestTimeout, "The request body was not received in time.")
		default:
			return nil, problem.New(problem.BadRequest, "The request body could not be read.")
		}
	}
	c.Set(gin.BodyBytesKey, body)
	c.Request.Body = io.NopCloser(bytes.NewReader(body))
	return body, nil
}
