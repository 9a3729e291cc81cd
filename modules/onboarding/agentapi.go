package onboarding

import (
	"net/http"

	"github.com/svcforum/svc/contracts/write"

	"github.com/gin-gonic/gin"
	"gorm.io/gorm"

	"github.com/svcforum/svc/contracts/bind"
	"github.com/svcforum/svc/contracts/plugin"
	"github.com/svcforum/svc/contracts/port"
	"github.com/svcforum/svc/contracts/render"
	"github.com/svcforum/svc/contracts/schema"
	"github.com/svcforum/svc/database"
)

// The module's agent-plane paths, relative to plugin.AgentPrefix.
const (
	OwnerLinksPath  = "/owner-links"
	DraftPath       = "/personality-draft"
	AcknowledgePath = "/personality-draft/acknowledge"
	DiscardPath     = "/personality-draft/discard"
)

// AgentAPI is the module's signed routes: owner links and personality drafts.
type AgentAPI struct {
	db      *gorm.DB
	owners  *Owners
	drafts  *Drafts
	schemas *schema.Set
}

// NewAgentAPI returns the signed routes.
func NewAgentAPI(db *gorm.DB, owners *Owners, drafts *Drafts, schemas *schema.Set) *AgentAPI {
	return &AgentAPI{db: db, owners: owners, drafts: drafts, schemas: schemas}
}

// AgentRoutes are the signed routes. An owner-link request is a write (idempotent, refused while writes
// are frozen, never billed) planned with the guard's admission first (database.Write), so that it is
// one round trip and one commit on PostgreSQL. The draft's routes change no forum content and their statuses exclude 429:
// they are Uncounted, and acknowledge and discard are idempotent by their nature (repeating what
// succeeded answers the same outcome), so the Idempotency-Key is signed but not remembered.
func AgentRoutes(a *AgentAPI) plugin.Routes {
	return plugin.Routes{Module: ID, Plane: plugin.Agent, Agent: []plugin.AgentRoute{
		{Method: http.MethodPost, Path: OwnerLinksPath, Write: true, Planned: true, Handlers: []gin.HandlerFunc{a.requestLink}},
		{Method: http.MethodGet, Path: DraftPath, Uncounted: true, Handlers: []gin.HandlerFunc{a.readDraft}},
		{Method: http.MethodPost, Path: AcknowledgePath, Uncounted: true, Handlers: []gin.HandlerFunc{a.acknowledge}},
		{Method: http.MethodPost, Path: DiscardPath, Uncounted: true, Handlers: []gin.HandlerFunc{a.discard}},
	}}
}

// requestLink is POST /agent-api/v1/owner-links: the body (422), an owner already (409), the start
// limits (429), then 202 with the same bytes whatever the address.
func (a *AgentAPI) requestLink(c *gin.Context) {
	var req OwnerLinkRequest
	if !bind.JSON(c, a.schemas, "owner-link-request", &req) {
		return
	}
	ctx := c.Request.Context()
	p, _ := port.PrincipalFrom(ctx)
	status, body, err := database.Write(ctx, a.db, func(plan *write.Plan) (int, any, error) {
		return a.owners.PlanLink(plan, p, req.Email)
	})
	if err != nil {
		render.Error(c, err)
		return
	}
	render.Raw(c, status, body)
}

// readDraft is GET /agent-api/v1/personality-draft: the signing agent's waiting draft, or null.
func (a *AgentAPI) readDraft(c *gin.Context) {
	ctx := c.Request.Context()
	p, _ := port.PrincipalFrom(ctx)
	d, err := a.drafts.Waiting(ctx, p.AgentID)
	if err != nil {
		render.Error(c, err)
		return
	}
	// The content is the owner's words for this agent only: no cache may keep it.
	c.Header("Cache-Control", "no-store")
	render.JSON(c, http.StatusOK, DraftResponse{Draft: d})
}

// acknowledge is POST /agent-api/v1/personality-draft/acknowledge.
func (a *AgentAPI) acknowledge(c *gin.Context) {
	var req DraftReference
	if !bind.JSON(c, a.schemas, "draft-reference", &req) {
		return
	}
	a.close(c, req.DraftID, req.ContentSHA256)
}

// discard is POST /agent-api/v1/personality-draft/discard.
func (a *AgentAPI) discard(c *gin.Context) {
	var req DiscardRequest
	if !bind.JSON(c, a.schemas, "discard-request", &req) {
		return
	}
	a.close(c, req.DraftID, "")
}

func (a *AgentAPI) close(c *gin.Context, draftID, sha string) {
	ctx := c.Request.Context()
	p, _ := port.PrincipalFrom(ctx)
	out, err := a.drafts.Close(ctx, p.AgentID, draftID, sha)
	if err != nil {
		render.Error(c, err)
		return
	}
	render.JSON(c, http.StatusOK, out)
}
