package onboarding

import (
	"embed"
	"errors"
	"fmt"
	"html/template"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/justinas/nosurf"

	"github.com/svcforum/svc/contracts/plugin"
	"github.com/svcforum/svc/contracts/port"
	"github.com/svcforum/svc/contracts/problem"
	"github.com/svcforum/svc/contracts/site"
)

//go:embed templates/*.html
var templateFS embed.FS

// Pages are the plane's pages for people: the application form, the answer with the status link, the
// confirmation of the address and the status page. They work without JavaScript and are never cached:
// each carries a CSRF token or sits at a secret address.
type Pages struct {
	apps     *Applications
	releases port.ConnectorReleases // nil: the setup page names no release
	site     *site.Site
	tmpl     map[string]*site.Page
}

// NewPages returns the pages.
func NewPages(apps *Applications, s *site.Site, releases port.ConnectorReleases) *Pages {
	funcs := template.FuncMap{
		"when": func(t *time.Time) string {
			if t == nil {
				return ""
			}
			return t.UTC().Format("2006-01-02 15:04 UTC")
		},
	}
	p := &Pages{apps: apps, site: s, releases: releases, tmpl: map[string]*site.Page{}}
	for _, name := range []string{"apply", "applied", "confirm", "status", "setup"} {
		p.tmpl[name] = s.MustParse(templateFS, "templates/"+name+".html", funcs)
	}
	return p
}

// applyPage is the form, with what was typed and what is wrong, by field.
type applyPage struct {
	CSRF   string
	Values ApplicationRequest
	Errors map[string]string
	Scopes []string
	Notice string
}

// appliedPage shows the status link, once.
type appliedPage struct {
	StatusURL string
	Email     string
	Handle    string
}

// confirmPage holds the button that confirms an address, or says it is confirmed.
type confirmPage struct {
	CSRF      string
	Action    string
	Handle    string
	Confirmed bool
	Just      bool // confirmed by this request
}

func (p *Pages) write(c *gin.Context, status int, name string, data any) {
	p.site.WritePrivate(c, status, p.tmpl[name], data, site.SameOriginReferrer)
}

// form is GET /onboarding.
func (p *Pages) form(c *gin.Context) {
	p.write(c, http.StatusOK, "apply", applyPage{CSRF: nosurf.Token(c.Request), Scopes: SetupScopes, Values: ApplicationRequest{SetupScope: "forum"}})
}

// submit is POST /onboarding: an application from the form. A refusal shows the form again with what
// was typed and each field's reason beside it.
func (p *Pages) submit(c *gin.Context) {
	in := ApplicationRequest{
		Handle:           strings.TrimSpace(c.PostForm("handle")),
		OrganisationName: strings.TrimSpace(c.PostForm("organisation_name")),
		Email:            strings.TrimSpace(c.PostForm("email")),
		SetupScope:       c.PostForm("setup_scope"),
		// Browsers send a textarea's line breaks as CRLF; the service keeps "\n" only.
		IntendedUse: strings.TrimSpace(strings.ReplaceAll(c.PostForm("intended_use"), "\r\n", "\n")),
	}
	created, err := p.apps.Apply(c.Request.Context(), in, plugin.ClientKey(c))
	if err == nil {
		p.write(c, http.StatusOK, "applied", appliedPage{StatusURL: created.StatusURL, Email: in.Email, Handle: in.Handle})
		return
	}
	var pr *problem.Problem
	if !errors.As(err, &pr) || (pr.Code != problem.ValidationFailed && pr.Code != problem.HandleTaken &&
		pr.Code != problem.RateLimited && pr.Code != problem.PrivateKeyRefused) {
		p.site.Error(c, err)
		return
	}
	page := applyPage{CSRF: nosurf.Token(c.Request), Values: in, Scopes: SetupScopes, Errors: map[string]string{}}
	if pr.Code == problem.PrivateKeyRefused {
		// The other fields are kept; a field that held a private key is emptied, never shown again.
		for _, e := range pr.Errors {
			field := strings.TrimPrefix(e.Pointer, "/")
			page.Values = page.Values.without(field)
			page.Errors[field] = e.Message
		}
		page.Notice = "The application was not sent: it held a private key, which was not kept. See the field marked below."
		p.write(c, pr.Status, "apply", page)
		return
	}
	if pr.Code == problem.RateLimited {
		// What was typed is kept: the person sends it again later.
		secs, _ := pr.Extensions["retry_after_seconds"].(int)
		c.Header("Retry-After", strconv.Itoa(max(secs, 1)))
		page.Notice = fmt.Sprintf("Too many applications were sent from here or to this address for now. Nothing was lost: send the form again in %d minutes.", max(secs/60, 1))
		p.write(c, pr.Status, "apply", page)
		return
	}
	for _, e := range pr.Errors {
		page.Errors[strings.TrimPrefix(e.Pointer, "/")] = e.Message
	}
	if pr.Code == problem.HandleTaken {
		page.Errors["handle"] = "This handle is taken by an agent or another application; choose another."
	}
	page.Notice = "The application was not sent: correct the fields marked below."
	p.write(c, pr.Status, "apply", page)
}

// confirmForm is GET /onboarding/confirm/{token}: a button, never a confirmation by itself, so that
// a mail scanner following the link confirms nothing.
func (p *Pages) confirmForm(c *gin.Context) {
	row, err := p.apps.ConfirmPage(c.Request.Context(), c.Param("token"))
	if err != nil {
		p.site.Error(c, err)
		return
	}
	p.write(c, http.StatusOK, "confirm", confirmPage{CSRF: nosurf.Token(c.Request), Action: c.Request.URL.Path,
		Handle: row.Handle, Confirmed: row.EmailConfirmedAt != nil})
}

// confirm is POST /onboarding/confirm/{token}.
func (p *Pages) confirm(c *gin.Context) {
	row, err := p.apps.Confirm(c.Request.Context(), c.Param("token"))
	if err != nil {
		p.site.Error(c, err)
		return
	}
	p.write(c, http.StatusOK, "confirm", confirmPage{Handle: row.Handle, Confirmed: true, Just: true})
}

// status is GET /onboarding/status/{token}.
func (p *Pages) status(c *gin.Context) {
	st, err := p.apps.StatusOf(c.Request.Context(), c.Param("token"), plugin.ClientKey(c))
	if err != nil {
		p.site.Error(c, err)
		return
	}
	// The page's address is a secret: it is never sent on as a referrer.
	p.site.WritePrivate(c, http.StatusOK, p.tmpl["status"], st, site.NoReferrer)
}

// setup is GET /onboarding/setup?handle=H&setup_scope=S: the steps of the invitation's mail, from this
// deployment's settings. It names no secret, so it is public; a handle or scope no application could
// have is a 404.
func (p *Pages) setup(c *gin.Context) {
	handle, scope := c.Query("handle"), c.Query("setup_scope")
	if !validSetupPage(handle, scope) {
		p.site.Problem(c, problem.Newf(problem.NotFound, "No setup steps for that handle and scope: open the link of your invitation's mail."))
		return
	}
	p.site.Write(c, http.StatusOK, p.tmpl["setup"], newSetupSteps(p.apps.deployment, p.releases, handle, scope))
}

// Nav links the form from the site's header.
func Nav() []plugin.Nav {
	return []plugin.Nav{{Module: ID, Label: "Apply for an agent", Path: FormPath, Rank: 50}, {Module: ID, Label: "Your agents", Path: OwnerPath, Rank: 60}}
}
