package sigv1

import (
	"bytes"
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/svcforum/svc/contracts/bind"
	"github.com/svcforum/svc/contracts/plugin"
	"github.com/svcforum/svc/contracts/port"
	"github.com/svcforum/svc/contracts/problem"
	"github.com/svcforum/svc/contracts/render"
	"github.com/svcforum/svc/contracts/schema"
)

// The module's agent-plane paths, relative to plugin.AgentPrefix.
const (
	ConformancePath    = "/conformance"
	WriteAdmissionPath = "/write-admission"
)

// Endpoints serves the module's own signed routes: conformance and write-admission.
type Endpoints struct {
	cfg      Config
	clock    port.Clock
	schemas  *schema.Set
	switches *Switches
	limiter  *Limiter
	memory   *Memory // nil: the switches are read from the database
}

// NewEndpoints returns the endpoints; schemas is the published set the bodies are validated against.
func NewEndpoints(cfg Config, clock port.Clock, schemas *schema.Set, switches *Switches, limiter *Limiter) *Endpoints {
	return &Endpoints{cfg: cfg, clock: clock, schemas: schemas, switches: switches, limiter: limiter}
}

// Routes are the module's agent-plane routes.
func (e *Endpoints) Routes() plugin.Routes {
	return plugin.Routes{Module: ID, Plane: plugin.Agent, Agent: []plugin.AgentRoute{
		{Method: http.MethodPost, Path: ConformancePath, Handlers: []gin.HandlerFunc{e.conformance}},
		// Write-admission changes nothing but the nonce: it is not counted against the attempt limit.
		{Method: http.MethodPost, Path: WriteAdmissionPath, Uncounted: true, Handlers: []gin.HandlerFunc{e.writeAdmission}},
	}}
}

// ConformanceRequest is the body of POST /conformance.
type ConformanceRequest struct {
	Echo string `json:"echo"`
}

// ConformanceResponse is the proven identity and the echo, unchanged.
type ConformanceResponse struct {
	AgentID string `json:"agent_id"`
	KeyID   string `json:"key_id"`
	OrgID   string `json:"org_id"`
	Handle  string `json:"handle"`
	Echo    string `json:"echo"`
}

func (e *Endpoints) conformance(c *gin.Context) {
	var req ConformanceRequest
	if !bind.JSON(c, e.schemas, "conformance-request", &req) {
		return
	}
	p, _ := port.PrincipalFrom(c.Request.Context())
	render.JSON(c, http.StatusOK, ConformanceResponse{AgentID: p.AgentID, KeyID: p.KeyID, OrgID: p.OrgID, Handle: p.Handle, Echo: req.Echo})
}

// WriteAdmissionResponse says whether a signed write by the caller would pass the gate now.
type WriteAdmissionResponse struct {
	Admitted  bool     `json:"admitted"`
	Channel   string   `json:"channel"`
	BlockedBy *Blocker `json:"blocked_by"`
}

// Blocker is the condition that would stop a write: the status and code the write would get.
type Blocker struct {
	Status            int    `json:"status"`
	Code              string `json:"code"`
	Detail            string `json:"detail"`
	Scope             string `json:"scope,omitempty"`
	RetryAfterSeconds int    `json:"retry_after_seconds,omitempty"`
}

// emptyObject is the only body write-admission accepts, byte for byte.
var emptyObject = []byte("{}")

func (e *Endpoints) writeAdmission(c *gin.Context) {
	raw, p := bind.Body(c)
	if p != nil {
		render.Abort(c, p)
		return
	}
	if !bytes.Equal(raw, emptyObject) {
		bad := problem.New(problem.ValidationFailed, "The body of write-admission must be exactly the two bytes {} (no whitespace, no members).")
		bad.Errors = []problem.FieldError{{Pointer: "", Code: "const", Message: "must be byte-exactly {}"}}
		render.Abort(c, bad)
		return
	}
	ctx := c.Request.Context()
	pr, _ := port.PrincipalFrom(ctx)
	resp := WriteAdmissionResponse{Admitted: true, Channel: plugin.Channel(c)}
	block, err := writeBlock(ctx, e.memory, e.switches, pr.AgentID, pr.OrgID)
	if err != nil {
		unavailable(c, err)
		return
	}
	if block != nil {
		resp.BlockedBy = blocker(block)
	} else {
		limits := []peek{
			{Bucket: "attempts:" + pr.AgentID, Limit: e.cfg.AttemptsPerWindow, what: "signed requests"},
			{Bucket: "writes:" + pr.AgentID, Limit: e.cfg.WritesPerWindow, what: "writes"},
		}
		// Both limits in one statement.
		if err := e.limiter.PeekAll(ctx, limits, e.cfg.RateWindow, e.clock.Now()); err != nil {
			unavailable(c, err)
			return
		}
		for _, l := range limits {
			if l.RetryAfter > 0 {
				resp.BlockedBy = blocker(rateLimited(l.RetryAfter, "The agent's limit of %s is used up in this window (%d per %s).", l.what, l.Limit, e.cfg.RateWindow))
				break
			}
		}
	}
	resp.Admitted = resp.BlockedBy == nil
	render.JSON(c, http.StatusOK, resp)
}

func blocker(p *problem.Problem) *Blocker {
	b := &Blocker{Status: p.Status, Code: string(p.Code), Detail: p.Detail}
	b.Scope, _ = p.Extensions["scope"].(string)
	b.RetryAfterSeconds, _ = p.Extensions["retry_after_seconds"].(int)
	return b
}
