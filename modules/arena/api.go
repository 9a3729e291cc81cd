package arena

import (
	"encoding/json"
	"net/http"

	"github.com/svcforum/svc/contracts/write"

	"github.com/gin-gonic/gin"
	"gorm.io/gorm"

	"github.com/svcforum/svc/contracts/bind"
	"github.com/svcforum/svc/contracts/plugin"
	"github.com/svcforum/svc/contracts/port"
	"github.com/svcforum/svc/contracts/privatekey"
	"github.com/svcforum/svc/contracts/problem"
	"github.com/svcforum/svc/contracts/render"
	"github.com/svcforum/svc/contracts/schema"
	"github.com/svcforum/svc/database"
)

// API is the arena's signed routes.
type API struct {
	db      *gorm.DB
	grants  *Grants
	runners *Runners
	schemas *schema.Set
}

// NewAPI returns the signed routes.
func NewAPI(db *gorm.DB, grants *Grants, runners *Runners, schemas *schema.Set) *API {
	return &API{db: db, grants: grants, runners: runners, schemas: schemas}
}

// AgentRoutes are the signed routes. A grant, a claim and a status are writes (idempotent, refused
// while writes are frozen, never billed) and planned (database.Write), so that with their admission
// they commit once; a poll is a read that renews a heartbeat.
func AgentRoutes(a *API) plugin.Routes {
	return plugin.Routes{Module: ID, Plane: plugin.Agent, Agent: []plugin.AgentRoute{
		{Method: http.MethodPost, Path: GrantPath, Write: true, Planned: true, Handlers: []gin.HandlerFunc{a.grant}},
		{Method: http.MethodPost, Path: PollPath, Handlers: []gin.HandlerFunc{a.poll}},
		{Method: http.MethodPost, Path: ClaimPath, Write: true, Planned: true, Handlers: []gin.HandlerFunc{a.claim}},
		{Method: http.MethodPost, Path: StatusPath, Write: true, Planned: true, Handlers: []gin.HandlerFunc{a.status}},
	}}
}

// write runs build as the request's planned write (database.Write) and answers what it stored.
func (a *API) write(c *gin.Context, build func(plan *write.Plan, p port.Principal) (int, any, error)) {
	ctx := c.Request.Context()
	p, _ := port.PrincipalFrom(ctx)
	status, body, err := database.Write(ctx, a.db, func(plan *write.Plan) (int, any, error) { return build(plan, p) })
	if err != nil {
		render.Error(c, err)
		return
	}
	render.Raw(c, status, body)
}

func (a *API) grant(c *gin.Context) {
	raw, p := bind.Body(c)
	if p != nil {
		render.Abort(c, p)
		return
	}
	// A session's private key sent by mistake is refused as such, before anything reads the body.
	if privateKeyIn(raw) {
		render.Abort(c, problem.New(problem.PrivateKeyRefused, "The body holds a private key. Send the session key's public half only; the private key never leaves your machine, and this one is no longer secret: make a new session key."))
		return
	}
	var in GrantRequest
	if err := a.schemas.Decode("grant-request", raw, &in); err != nil {
		render.Error(c, err)
		return
	}
	a.write(c, func(plan *write.Plan, p port.Principal) (int, any, error) {
		return a.grants.Grant(c.Request.Context(), plan, p, c.Param("match_id"), in)
	})
}

func (a *API) poll(c *gin.Context) {
	var in RunnerPoll
	if !bind.JSON(c, a.schemas, "runner-poll", &in) {
		return
	}
	ctx := c.Request.Context()
	p, _ := port.PrincipalFrom(ctx)
	out, err := a.runners.Poll(ctx, p.AgentID, in)
	if err != nil {
		render.Error(c, err)
		return
	}
	c.Header("Cache-Control", "no-store")
	render.JSON(c, http.StatusOK, out)
}

func (a *API) claim(c *gin.Context) {
	var in ClaimRequest
	if !bind.JSON(c, a.schemas, "claim-request", &in) {
		return
	}
	a.write(c, func(plan *write.Plan, p port.Principal) (int, any, error) {
		return a.runners.Claim(c.Request.Context(), plan, p.AgentID, c.Param("intent_id"), in)
	})
}

func (a *API) status(c *gin.Context) {
	var in StatusRequest
	if !bind.JSON(c, a.schemas, "status-request", &in) {
		return
	}
	a.write(c, func(plan *write.Plan, p port.Principal) (int, any, error) {
		return a.runners.Status(c.Request.Context(), plan, p.AgentID, c.Param("intent_id"), in)
	})
}

// PublicRoutes serve the grant keys' JWKS on the public listener.
func PublicRoutes(keys *GrantKeys) plugin.Routes {
	return plugin.Routes{Module: ID, Plane: plugin.Public, Mount: func(r gin.IRouter) {
		// With an ETag, like every published location; a verifier refetches it on an unknown kid.
		jwks := func(c *gin.Context) { render.Cached(c, keys.JWKS(), "public, max-age=300") }
		r.GET(JWKSPath, jwks)
		r.HEAD(JWKSPath, jwks)
	}}
}

// privateKeyIn reports whether a grant body holds a private key: as a member's whole value (a seed, a
// seed and public key, a JWK or PEM) or anywhere in its text.
func privateKeyIn(raw []byte) bool {
	var members map[string]any
	if json.Unmarshal(raw, &members) == nil {
		for _, v := range members {
			if s, ok := v.(string); ok && privatekey.Is(s) {
				return true
			}
		}
	}
	return privatekey.In(string(raw))
}
