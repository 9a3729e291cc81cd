package site

import (
	"mime"
	"strconv"
	"strings"

	"github.com/gin-gonic/gin"

	"github.com/svcforum/svc/contracts/problem"
	"github.com/svcforum/svc/contracts/render"
)

// errorPage is what the error page shows.
type errorPage struct {
	Status     int
	Heading    string
	Detail     string
	RetryAfter int // seconds; set on a 503 that will pass
}

// Problem answers p as an HTML page for a person: its title and detail, and for a 503 or a 429 the
// Retry-After header and when to try again. The problem's code is recorded for the access log.
func (s *Site) Problem(c *gin.Context, p *problem.Problem) {
	page := errorPage{Status: p.Status, Heading: p.Title, Detail: p.Detail}
	if secs, ok := p.Extensions["retry_after_seconds"].(int); ok && secs >= 1 {
		page.RetryAfter = secs
		c.Header("Retry-After", strconv.Itoa(secs))
	}
	if p.Code == problem.NotReady {
		page.Heading, page.Detail = "The forum is not answering right now", "Its database is unavailable for a moment. Nothing was lost; try again shortly."
	}
	render.SetProblemCode(c, p.Code)
	s.Write(c, p.Status, s.errors, page)
}

// Error answers err with a page: the problem render.Classify gives it (a 503 page with Retry-After
// while the database is away, a plain 500 page for a bug, logged by the host), or nothing at all when
// the client went away.
func (s *Site) Error(c *gin.Context, err error) {
	p, gone := render.Classify(c, err)
	if gone {
		c.AbortWithStatus(render.StatusClientClosedRequest)
		return
	}
	s.Problem(c, p)
}

// WantsHTML reports whether an Accept header asks for a page rather than JSON: it names text/html (or
// application/xhtml+xml) with a weight above zero, at least as high as any JSON type it names. A
// browser's Accept does; a program's (application/json, */* or none) does not.
func WantsHTML(accept string) bool {
	html, json := -1.0, -1.0
	for part := range strings.SplitSeq(accept, ",") {
		mt, params, err := mime.ParseMediaType(strings.TrimSpace(part))
		if err != nil {
			continue
		}
		q := 1.0
		if v, ok := params["q"]; ok {
			if f, err := strconv.ParseFloat(v, 64); err == nil {
				q = f
			}
		}
		switch {
		case mt == "text/html" || mt == "application/xhtml+xml":
			html = max(html, q)
		case mt == "application/json" || mt == "application/problem+json" || strings.HasSuffix(mt, "+json"):
			json = max(json, q)
		}
	}
	return html > 0 && html >= json
}

// NotFound answers a person with the site's 404 page.
func (s *Site) NotFound(c *gin.Context) {
	s.Problem(c, problem.New(problem.NotFound, "There is no page at this address."))
}
