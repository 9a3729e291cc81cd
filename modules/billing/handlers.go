package billing

import (
	"fmt"
	"net/http"
	"time"

	"github.com/gin-gonic/gin"
	"gorm.io/gorm"

	"github.com/svcforum/svc/contracts/bind"
	"github.com/svcforum/svc/contracts/cursor"
	"github.com/svcforum/svc/contracts/plugin"
	"github.com/svcforum/svc/contracts/port"
	"github.com/svcforum/svc/contracts/problem"
	"github.com/svcforum/svc/contracts/render"
)

// The module's paths: the public read plane's, and the agent plane's relative to plugin.AgentPrefix.
const (
	PricingPath = "/api/v1/pricing"
	WalletPath  = "/wallet"
	UsagePath   = "/usage"
)

// Endpoints serves pricing, wallet and usage.
type Endpoints struct {
	db      *gorm.DB
	clock   port.Clock
	pricing *Pricing
	wallets *Wallets
	cursors *cursor.Codec
}

// NewEndpoints returns the endpoints.
func NewEndpoints(db *gorm.DB, clock port.Clock, pricing *Pricing, wallets *Wallets, cursors *cursor.Codec) *Endpoints {
	return &Endpoints{db: db, clock: clock, pricing: pricing, wallets: wallets, cursors: cursors}
}

// PublicRoutes are the module's routes on the public read plane.
func (e *Endpoints) PublicRoutes() plugin.Routes {
	return plugin.Routes{Module: ID, Plane: plugin.Public, Mount: func(r gin.IRouter) {
		r.GET(PricingPath, e.getPricing)
		r.HEAD(PricingPath, e.getPricing)
	}}
}

// AgentRoutes are the module's signed routes: reads whose statuses exclude 429.
func (e *Endpoints) AgentRoutes() plugin.Routes {
	return plugin.Routes{Module: ID, Plane: plugin.Agent, Agent: []plugin.AgentRoute{
		{Method: http.MethodGet, Path: WalletPath, Uncounted: true, Handlers: []gin.HandlerFunc{e.getWallet}},
		{Method: http.MethodGet, Path: UsagePath, Uncounted: true, Handlers: []gin.HandlerFunc{e.getUsage}},
	}}
}

// PricingResponse is GET /api/v1/pricing: the current version and every accepted one.
type PricingResponse struct {
	CurrentPricingVersion *string  `json:"current_pricing_version"`
	Operations            []string `json:"operations"`
	Versions              []Price  `json:"versions"`
}

func (e *Endpoints) getPricing(c *gin.Context) {
	versions, current, err := e.pricing.Accepted(c.Request.Context(), e.clock.Now())
	if err != nil {
		render.Error(c, err)
		return
	}
	resp := PricingResponse{Operations: port.Operations, Versions: versions}
	if resp.Versions == nil {
		resp.Versions = []Price{}
	}
	if current != "" {
		resp.CurrentPricingVersion = &current
	}
	render.Cached(c, resp, "public, max-age=60")
}

// WalletResponse is the caller's organisation's wallet.
type WalletResponse struct {
	OrgID     string     `json:"org_id"`
	Balance   int64      `json:"balance"`
	UpdatedAt *time.Time `json:"updated_at"`
}

func (e *Endpoints) getWallet(c *gin.Context) {
	p, _ := port.PrincipalFrom(c.Request.Context())
	w, err := e.wallets.Get(c.Request.Context(), p.OrgID)
	if err != nil {
		render.Error(c, err)
		return
	}
	resp := WalletResponse{OrgID: p.OrgID, Balance: w.Balance}
	if !w.UpdatedAt.IsZero() {
		t := w.UpdatedAt.UTC()
		resp.UpdatedAt = &t
	}
	render.JSON(c, http.StatusOK, resp)
}

// UsageEventView is one usage event as the agent reads it: a charge, or a refund of one (kind refund,
// with the charge in refund_of and the credits given back in price).
type UsageEventView struct {
	ID             string    `json:"id"`
	Kind           string    `json:"kind"`
	RefundOf       *string   `json:"refund_of"`
	Operation      string    `json:"operation"`
	Price          int64     `json:"price"`
	PricingVersion string    `json:"pricing_version"`
	AgentID        string    `json:"agent_id"`
	IdempotencyKey string    `json:"idempotency_key"`
	ResourceID     string    `json:"resource_id"`
	CreatedAt      time.Time `json:"created_at"`
}

// UsageResponse is a page of the caller's usage events, newest first.
type UsageResponse struct {
	Events     []UsageEventView `json:"events"`
	NextCursor *string          `json:"next_cursor"`
}

// usageList names the usage list of an agent: a cursor of one agent's events never opens another's.
func usageList(agentID string) string { return "billing:usage:" + agentID }

// usagePosition is where a page of usage ends: the last event's id.
type usagePosition struct {
	ID string `json:"i"`
}

func (e *Endpoints) getUsage(c *gin.Context) {
	pr, _ := port.PrincipalFrom(c.Request.Context())
	limit, after, p := e.pageParams(c, usageList(pr.AgentID))
	if p != nil {
		render.Problem(c, p)
		return
	}
	q := e.db.WithContext(c.Request.Context()).Where("agent_id = ?", pr.AgentID)
	if after != "" {
		q = q.Where("id < ?", after)
	}
	var rows []UsageEvent
	if err := q.Order("id DESC").Limit(limit + 1).Find(&rows).Error; err != nil {
		render.Error(c, fmt.Errorf("read usage: %w", err))
		return
	}
	resp := UsageResponse{Events: make([]UsageEventView, 0, min(len(rows), limit))}
	for i, r := range rows {
		if i == limit {
			next, err := e.cursors.Seal(usageList(pr.AgentID), usagePosition{ID: rows[limit-1].ID})
			if err != nil {
				render.Error(c, fmt.Errorf("seal usage cursor: %w", err))
				return
			}
			resp.NextCursor = &next
			break
		}
		resp.Events = append(resp.Events, UsageEventView{ID: r.ID, Kind: r.Kind, RefundOf: r.RefundOf, Operation: r.Operation, Price: r.Price,
			PricingVersion: r.PricingVersion, AgentID: r.AgentID, IdempotencyKey: r.IdempotencyKey,
			ResourceID: r.ResourceID, CreatedAt: r.CreatedAt.UTC()})
	}
	render.NextLink(c, resp.NextCursor)
	render.JSON(c, http.StatusOK, resp)
}

// pageParams reads limit (1..100, default 25) and a cursor of list; a bad one is 400.
func (e *Endpoints) pageParams(c *gin.Context, list string) (limit int, after string, p *problem.Problem) {
	if limit, p = bind.Limit(c); p != nil {
		return 0, "", p
	}
	if vs, ok := c.GetQueryArray("cursor"); ok {
		var pos usagePosition
		if len(vs) != 1 || e.cursors.Open(vs[0], list, &pos) != nil {
			return 0, "", problem.New(problem.InvalidCursor, "cursor must be a next_cursor this agent's usage returned, within a day")
		}
		after = pos.ID
	}
	return limit, after, nil
}
