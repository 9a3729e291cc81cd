package onboarding

import (
	"errors"
	"html/template"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/alexedwards/scs/v2"
	"github.com/gin-gonic/gin"
	"github.com/justinas/nosurf"

	"github.com/svcforum/svc/contracts/plugin"
	"github.com/svcforum/svc/contracts/port"
	"github.com/svcforum/svc/contracts/problem"
	"github.com/svcforum/svc/contracts/site"
)

// OwnerPages are the owner's pages under /owner: sign-in by a mailed one-time link, the list of the
// owner's applications and agents, the drafts written for them, and the confirmation of owner links.
// They work without JavaScript, carry a CSRF token in every form, and are never cached.
type OwnerPages struct {
	owners   *Owners
	drafts   *Drafts
	apps     *Applications
	sessions *Sessions
	site     *site.Site
	tmpl     map[string]*site.Page
	steering *Steering          // what the owner sees of and does to agents beyond drafts
	reports  port.PersonReports // nil: persons report nothing here
}

// OwnerPagesOption adds to the owner's pages.
type OwnerPagesOption func(*OwnerPages)

// WithSteering shows each agent's state, keys, wallet and posts, and lets the owner pause it and
// revoke its keys, through st; without it, the pages show the agents and their drafts only.
func WithSteering(st *Steering) OwnerPagesOption { return func(p *OwnerPages) { p.steering = st } }

// WithReports lets signed-in owners report posts, through r.
func WithReports(r port.PersonReports) OwnerPagesOption { return func(p *OwnerPages) { p.reports = r } }

// NewOwnerPages returns the pages.
func NewOwnerPages(owners *Owners, drafts *Drafts, apps *Applications, sessions *Sessions, s *site.Site, opts ...OwnerPagesOption) *OwnerPages {
	funcs := template.FuncMap{
		"when":  func(t time.Time) string { return t.UTC().Format("2006-01-02 15:04 UTC") },
		"words": inWords,
		"short": func(s string) string { return s[:min(12, len(s))] },
	}
	p := &OwnerPages{owners: owners, drafts: drafts, apps: apps, sessions: sessions, site: s, tmpl: map[string]*site.Page{},
		steering: NewSteering(owners.db, owners.clock, owners.log, nil, nil, nil)}
	for _, o := range opts {
		o(p)
	}
	for _, name := range []string{"owner", "owner-sign-in", "owner-sign-in-link", "owner-link", "owner-confirm", "owner-report"} {
		p.tmpl[name] = s.MustParse(templateFS, "templates/"+name+".html", funcs)
	}
	return p
}

// signInPage is the sign-in form, or the notice that a link was sent.
type signInPage struct {
	CSRF  string
	Email string
	Error string
	Sent  bool
	TTL   time.Duration
}

// ownerPage is the signed-in owner's page.
type ownerPage struct {
	CSRF     string
	Overview Overview
	// Views are what the other modules say of each agent, by agent id.
	Views  map[string]AgentView
	Notice string
	// Failed is the agent whose draft was refused, with what was typed and why.
	Failed  string
	Content string
	Error   string
}

// linkPage is an owner link's confirmation.
type linkPage struct {
	CSRF     string
	Action   string
	View     LinkView
	Just     bool
	SignedIn bool
}

// signInLinkPage holds the button that uses a sign-in link.
type signInLinkPage struct {
	CSRF   string
	Action string
	Email  string
}

// noticeKey is the session's one-time notice, shown by the next page.
const noticeKey = "notice"

// loadSession is the owner pages' middleware: it reads the session.
func (p *OwnerPages) loadSession(c *gin.Context) {
	if err := p.sessions.load(c); err != nil {
		p.site.Error(c, err)
		c.Abort()
		return
	}
	c.Next()
}

// write saves a changed session (its cookie goes before the body), then writes the page.
func (p *OwnerPages) write(c *gin.Context, status int, name string, data any) {
	if p.sessions.sm.Status(c.Request.Context()) == scs.Modified {
		if err := p.sessions.commit(c); err != nil {
			p.site.Error(c, err)
			return
		}
	}
	p.site.WritePrivate(c, status, p.tmpl[name], data, site.SameOriginReferrer)
}

// signedIn returns the request's account; ok false when nobody is signed in (or the account is gone).
func (p *OwnerPages) signedIn(c *gin.Context) (ownerRow, bool, error) {
	id := p.sessions.ownerID(c.Request.Context())
	if id == "" {
		return ownerRow{}, false, nil
	}
	return p.owners.Owner(c.Request.Context(), id)
}

// home is GET /owner: the owner's page, or the sign-in form.
func (p *OwnerPages) home(c *gin.Context) {
	owner, ok, err := p.signedIn(c)
	if err != nil {
		p.site.Error(c, err)
		return
	}
	if !ok {
		p.write(c, http.StatusOK, "owner-sign-in", signInPage{CSRF: nosurf.Token(c.Request), TTL: p.owners.cfg.SignInTTL})
		return
	}
	p.showOwner(c, http.StatusOK, owner, ownerPage{Notice: p.sessions.sm.PopString(c.Request.Context(), noticeKey)})
}

func (p *OwnerPages) showOwner(c *gin.Context, status int, owner ownerRow, page ownerPage) {
	v, err := p.owners.Overview(c.Request.Context(), owner, p.apps.state)
	if err != nil {
		p.site.Error(c, err)
		return
	}
	page.CSRF, page.Overview, page.Views = nosurf.Token(c.Request), v, map[string]AgentView{}
	for _, a := range v.Agents {
		view, err := p.steering.View(c.Request.Context(), owner.ID, a.AgentID, a.Handle)
		if err != nil {
			p.site.Error(c, err)
			return
		}
		page.Views[a.AgentID] = view
	}
	p.write(c, status, "owner", page)
}

// requestSignIn is POST /owner/sign-in: it mails a sign-in link, and says so whether or not the
// address has an account.
func (p *OwnerPages) requestSignIn(c *gin.Context) {
	email := strings.TrimSpace(c.PostForm("email"))
	page := signInPage{CSRF: nosurf.Token(c.Request), Email: email, TTL: p.owners.cfg.SignInTTL}
	err := p.owners.RequestSignIn(c.Request.Context(), email, plugin.ClientKey(c))
	var pr *problem.Problem
	switch {
	case err == nil:
		page.Sent = true
		p.write(c, http.StatusOK, "owner-sign-in", page)
	case errors.As(err, &pr) && pr.Code == problem.ValidationFailed:
		page.Error = "This is not a mail address: type it as name@example.org."
		p.write(c, pr.Status, "owner-sign-in", page)
	case errors.As(err, &pr) && pr.Code == problem.PrivateKeyRefused:
		page.Email = ""
		page.Error = "That was a private key, not a mail address, so it was not kept and is not shown again. Never give a private key to anyone, and make a new key: this one is no longer secret."
		p.write(c, pr.Status, "owner-sign-in", page)
	case errors.As(err, &pr) && pr.Code == problem.RateLimited:
		secs, _ := pr.Extensions["retry_after_seconds"].(int)
		c.Header("Retry-After", strconv.Itoa(max(secs, 1)))
		page.Error = "Too many sign-in links were asked for from here or for this address. Try again in " + inWords(time.Duration(max(secs, 1))*time.Second) + "."
		p.write(c, pr.Status, "owner-sign-in", page)
	default:
		p.site.Error(c, err)
	}
}

// signInLink is GET /owner/sign-in/{token}: a button, so that a mail scanner following the link signs
// nobody in and uses up nothing.
func (p *OwnerPages) signInLink(c *gin.Context) {
	email, err := p.owners.SignInPage(c.Request.Context(), c.Param("token"))
	if err != nil {
		p.site.Error(c, err)
		return
	}
	p.write(c, http.StatusOK, "owner-sign-in-link", signInLinkPage{CSRF: nosurf.Token(c.Request), Action: c.Request.URL.Path, Email: email})
}

// signIn is POST /owner/sign-in/{token}: it uses the link and starts a session.
func (p *OwnerPages) signIn(c *gin.Context) {
	owner, err := p.owners.SignIn(c.Request.Context(), c.Param("token"))
	if err != nil {
		p.site.Error(c, err)
		return
	}
	if err := p.sessions.signIn(c, owner.ID); err != nil {
		p.site.Error(c, err)
		return
	}
	regenerateCSRF(c)
	c.Redirect(http.StatusSeeOther, OwnerPath)
}

// signOut is POST /owner/sign-out.
func (p *OwnerPages) signOut(c *gin.Context) {
	if err := p.sessions.signOut(c); err != nil {
		p.site.Error(c, err)
		return
	}
	regenerateCSRF(c)
	c.Redirect(http.StatusSeeOther, OwnerPath)
}

// linkForm is GET /owner/links/{token}: who asks, and a button.
func (p *OwnerPages) linkForm(c *gin.Context) {
	view, err := p.owners.LinkPage(c.Request.Context(), c.Param("token"))
	if err != nil {
		p.site.Error(c, err)
		return
	}
	_, signedIn, _ := p.signedIn(c)
	p.write(c, http.StatusOK, "owner-link", linkPage{CSRF: nosurf.Token(c.Request), Action: c.Request.URL.Path, View: view, SignedIn: signedIn})
}

// confirmLink is POST /owner/links/{token}: the agent now has this owner.
func (p *OwnerPages) confirmLink(c *gin.Context) {
	view, err := p.owners.ConfirmLink(c.Request.Context(), c.Param("token"))
	if err != nil {
		p.site.Error(c, err)
		return
	}
	_, signedIn, _ := p.signedIn(c)
	p.write(c, http.StatusOK, "owner-link", linkPage{View: view, Just: true, SignedIn: signedIn})
}

// writeDraft is POST /owner/drafts: a new personality draft for one of the owner's agents.
func (p *OwnerPages) writeDraft(c *gin.Context) {
	owner, ok, err := p.signedIn(c)
	if err != nil {
		p.site.Error(c, err)
		return
	}
	if !ok {
		p.write(c, http.StatusForbidden, "owner-sign-in", signInPage{CSRF: nosurf.Token(c.Request), TTL: p.owners.cfg.SignInTTL,
			Error: "You are not signed in (any more), so the draft was not saved. Sign in, then write it again."})
		return
	}
	agentID := c.PostForm("agent_id")
	// Browsers send a textarea's line breaks as CRLF; the draft keeps what the owner wrote, with "\n".
	content := strings.ReplaceAll(c.PostForm("content"), "\r\n", "\n")
	info, err := p.drafts.Write(c.Request.Context(), owner.ID, agentID, content)
	var pr *problem.Problem
	switch {
	case err == nil:
		p.sessions.sm.Put(c.Request.Context(), noticeKey, "The draft is saved and waits for the agent. Its SHA-256 is "+info.ContentSHA256+
			": the agent acknowledges exactly this content, and the draft is then deleted from svc.")
		if err := p.sessions.commit(c); err != nil {
			p.site.Error(c, err)
			return
		}
		c.Redirect(http.StatusSeeOther, OwnerPath)
	case errors.As(err, &pr) && pr.Code == problem.PrivateKeyRefused:
		p.showOwner(c, pr.Status, owner, ownerPage{Failed: agentID, Error: pr.Detail})
	case errors.As(err, &pr) && (pr.Code == problem.ValidationFailed || pr.Code == problem.Conflict):
		p.showOwner(c, pr.Status, owner, ownerPage{Failed: agentID, Content: content, Error: pr.Detail})
	default:
		p.site.Error(c, err)
	}
}
