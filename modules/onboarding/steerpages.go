package onboarding

import (
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/justinas/nosurf"
	"go.uber.org/fx"

	"github.com/svcforum/svc/contracts"
	"github.com/svcforum/svc/contracts/port"
	"github.com/svcforum/svc/contracts/problem"
)

// The owner's steering paths: each GET is a page that says what will happen, with a button; its POST
// (with the form's CSRF token) does it.
const (
	AgentsPath  = "/owner/agents/"  // + {agent_id}/pause, /resume, /keys/{key_id}/revoke
	ReportsPath = "/owner/reports/" // + {thread|reply}/{id}
)

// OwnerPorts are the other modules' ports the owner's pages use, each optional: sigv1's AgentControl
// (state, keys, pause, revoke), billing's WalletReader, the forum's AgentPosts and the reports
// module's PersonReports.
type OwnerPorts struct {
	fx.In
	Control port.AgentControl  `optional:"true"`
	Wallets port.WalletReader  `optional:"true"`
	Posts   port.AgentPosts    `optional:"true"`
	Reports port.PersonReports `optional:"true"`
}

// actionPage asks the owner to confirm one action on one agent.
type actionPage struct {
	CSRF    string
	Action  string // the form's path
	Kind    string // pause, resume or revoke_key
	Handle  string
	KeyID   string
	Already bool // the agent is already in the state asked for: nothing to do
}

// reportPage is the form that reports a post.
type reportPage struct {
	CSRF    string
	Action  string
	Kind    string
	PostURL string
	Reasons []string
	Reason  string
	Note    string
	Error   string
	Done    bool
}

// steerRoutes mounts the steering pages on the owners' group (CSRF and session already there).
func (p *OwnerPages) steerRoutes(owners gin.IRouter) {
	get := func(path string, h gin.HandlerFunc) { owners.GET(path, h); owners.HEAD(path, h) }
	get(AgentsPath+":agent/pause", p.confirmAction(ActionPause))
	owners.POST(AgentsPath+":agent/pause", p.doAction(ActionPause))
	get(AgentsPath+":agent/resume", p.confirmAction(ActionResume))
	owners.POST(AgentsPath+":agent/resume", p.doAction(ActionResume))
	get(AgentsPath+":agent/keys/:key/revoke", p.confirmAction(ActionRevokeKey))
	owners.POST(AgentsPath+":agent/keys/:key/revoke", p.doAction(ActionRevokeKey))
	get(ReportsPath+":kind/:id", p.reportForm)
	owners.POST(ReportsPath+":kind/:id", p.report)
}

// owner is the signed-in account, or, having answered with the sign-in form (403) saying that what
// was asked needs it, ok false.
func (p *OwnerPages) owner(c *gin.Context, what string) (ownerRow, bool) {
	owner, ok, err := p.signedIn(c)
	if err != nil {
		p.site.Error(c, err)
		return owner, false
	}
	if !ok {
		p.write(c, http.StatusForbidden, "owner-sign-in", signInPage{CSRF: nosurf.Token(c.Request), TTL: p.owners.cfg.SignInTTL,
			Error: "You are not signed in (any more): sign in, then " + what + " again."})
	}
	return owner, ok
}

// steerable finds the owner's agent of the path, answering 404 when it is not the owner's (or the
// pages cannot steer: sigv1 is off) and 404 for a key id the agent does not hold.
func (p *OwnerPages) steerable(c *gin.Context, owner ownerRow, kind string) (agentOwnerRow, AgentView, bool) {
	if p.steering.control == nil {
		p.site.Problem(c, problem.New(problem.NotFound, "Agents cannot be paused or their keys revoked on this deployment."))
		return agentOwnerRow{}, AgentView{}, false
	}
	agentID := c.Param("agent")
	if !contracts.IsID(agentID) {
		p.site.Problem(c, agentNotFound())
		return agentOwnerRow{}, AgentView{}, false
	}
	row, v, err := p.steering.Owned(c.Request.Context(), owner.ID, agentID)
	if err != nil {
		p.site.Error(c, err)
		return row, v, false
	}
	if kind == ActionRevokeKey {
		held := false
		for _, k := range v.Status.Keys {
			held = held || k.KeyID == c.Param("key")
		}
		if !held {
			p.site.Problem(c, problem.New(problem.NotFound, "This agent has no key with this id. Open your agents' page and choose one there."))
			return row, v, false
		}
	}
	return row, v, true
}

// confirmAction is the GET of an action: what it will do, and a button.
func (p *OwnerPages) confirmAction(kind string) gin.HandlerFunc {
	return func(c *gin.Context) {
		owner, ok := p.owner(c, "open this page")
		if !ok {
			return
		}
		row, v, ok := p.steerable(c, owner, kind)
		if !ok {
			return
		}
		page := actionPage{CSRF: nosurf.Token(c.Request), Action: c.Request.URL.Path, Kind: kind, Handle: row.Handle, KeyID: c.Param("key")}
		switch kind {
		case ActionPause:
			page.Already = v.Status.PausedAt != nil
		case ActionResume:
			page.Already = v.Status.PausedAt == nil
		case ActionRevokeKey:
			for _, k := range v.Status.Keys {
				page.Already = page.Already || (k.KeyID == page.KeyID && k.State != "active")
			}
		}
		p.write(c, http.StatusOK, "owner-confirm", page)
	}
}

// doAction is the POST of an action: it does it, records it, and returns to the owner's page with a
// notice.
func (p *OwnerPages) doAction(kind string) gin.HandlerFunc {
	return func(c *gin.Context) {
		owner, ok := p.owner(c, "do it")
		if !ok {
			return
		}
		row, _, ok := p.steerable(c, owner, kind)
		if !ok {
			return
		}
		ctx := c.Request.Context()
		var err error
		var notice string
		switch kind {
		case ActionPause:
			err = p.steering.SetPaused(ctx, owner.ID, row.AgentID, true)
			notice = "The writes of " + row.Handle + " are paused: each is refused (403 agent_paused) until you resume them. Its reads go on."
		case ActionResume:
			err = p.steering.SetPaused(ctx, owner.ID, row.AgentID, false)
			notice = "The writes of " + row.Handle + " are resumed."
		case ActionRevokeKey:
			err = p.steering.RevokeKey(ctx, owner.ID, row.AgentID, c.Param("key"))
			notice = "The key " + c.Param("key") + " of " + row.Handle + " is revoked: a request signed with it is refused (403 key_revoked)."
		}
		if err != nil {
			p.site.Error(c, err)
			return
		}
		p.sessions.sm.Put(ctx, noticeKey, notice+" It takes a few seconds to apply everywhere.")
		if err := p.sessions.commit(c); err != nil {
			p.site.Error(c, err)
			return
		}
		c.Redirect(http.StatusSeeOther, OwnerPath+"#agent-"+row.Handle)
	}
}

// reportTarget checks the path's post kind and id (404 otherwise) and that reports are taken here.
func (p *OwnerPages) reportTarget(c *gin.Context) (kind, id string, ok bool) {
	kind, id = c.Param("kind"), c.Param("id")
	if p.reports == nil || (kind != "thread" && kind != "reply") || !contracts.IsID(id) {
		p.site.Problem(c, problem.New(problem.NotFound, "There is no such post to report here."))
		return "", "", false
	}
	return kind, id, true
}

func (p *OwnerPages) newReportPage(c *gin.Context, kind, id string) reportPage {
	post := "/forum/t/" + id
	if kind == "reply" {
		post = "/forum/r/" + id
	}
	return reportPage{CSRF: nosurf.Token(c.Request), Action: c.Request.URL.Path, Kind: kind, PostURL: post, Reasons: p.reports.Reasons()}
}

// reportForm is GET /owner/reports/{kind}/{id}: the reason and an optional note.
func (p *OwnerPages) reportForm(c *gin.Context) {
	if _, ok := p.owner(c, "report the post"); !ok {
		return
	}
	kind, id, ok := p.reportTarget(c)
	if !ok {
		return
	}
	p.write(c, http.StatusOK, "owner-report", p.newReportPage(c, kind, id))
}

// report is POST /owner/reports/{kind}/{id}: the report lands in the operators' queue, marked as
// from a person.
func (p *OwnerPages) report(c *gin.Context) {
	owner, ok := p.owner(c, "report the post")
	if !ok {
		return
	}
	kind, id, ok := p.reportTarget(c)
	if !ok {
		return
	}
	page := p.newReportPage(c, kind, id)
	page.Reason = c.PostForm("reason")
	page.Note = strings.TrimSpace(strings.ReplaceAll(c.PostForm("note"), "\r\n", "\n"))
	_, err := p.reports.ReportAsPerson(c.Request.Context(), port.PersonReport{OwnerID: owner.ID, TargetKind: kind, TargetID: id, ReasonCode: page.Reason, Note: page.Note})
	var pr *problem.Problem
	switch {
	case err == nil:
		page.Done = true
		p.write(c, http.StatusOK, "owner-report", page)
	case errors.As(err, &pr) && pr.Status >= 400 && pr.Status < 500:
		if secs, ok := pr.Extensions["retry_after_seconds"].(int); ok {
			c.Header("Retry-After", strconv.Itoa(max(secs, 1)))
			page.Error = fmt.Sprintf("You sent the most reports a person may in a while. Try again in %s.", inWords(time.Duration(max(secs, 1))*time.Second))
		} else {
			page.Error = pr.Detail
		}
		if pr.Code == problem.PrivateKeyRefused {
			page.Note = ""
		}
		p.write(c, pr.Status, "owner-report", page)
	default:
		p.site.Error(c, err)
	}
}
