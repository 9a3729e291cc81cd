package discovery

import (
	"bytes"
	"errors"
	"net/http"
	"strings"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/svcforum/svc/contracts"
	"github.com/svcforum/svc/contracts/plugin"
	"github.com/svcforum/svc/contracts/problem"
	"github.com/svcforum/svc/contracts/render"
)

// Routes serves the discovery document and every embedded contract on the public plane. Publications
// that name one location twice, and OpenAPI documents that cannot be bundled, are refused here, so that
// start-up fails rather than a request.
func Routes(p *Publisher) (plugin.Routes, error) {
	if _, err := p.Document(); err != nil {
		return plugin.Routes{}, err
	}
	if err := p.buildOpenAPI(); err != nil {
		return plugin.Routes{}, err
	}
	return plugin.Routes{Module: ID, Plane: plugin.Public, Mount: func(r gin.IRouter) {
		for _, m := range []string{http.MethodGet, http.MethodHead} {
			r.Handle(m, DocumentPath, p.serveDocument)
			r.Handle(m, PublicAPI, p.serveFile("openapi.json"))
			r.Handle(m, SkillPath, p.serveFile(contracts.SkillFile))
			for _, c := range contracts.SkillChapters() {
				r.Handle(m, SkillChapterPath(c), p.serveFile(contracts.SkillChapterFile(c)))
			}
			r.Handle(m, ContractsDir+"/*path", p.serveContracts)
		}
	}}, nil
}

func (p *Publisher) serveDocument(c *gin.Context) {
	rep, err := p.document()
	if err != nil {
		render.Error(c, err)
		return
	}
	rep.contentType = render.MediaType(c)
	// Each media type is its own representation (Vary: Accept) with its own ETag, so that a cache holding
	// both variants tells them apart (RFC 9110 section 8.8.3.3). The tag is derived, not re-hashed.
	if rep.contentType != render.JSONType {
		rep.etag = strings.TrimSuffix(rep.etag, `"`) + `-svc"`
	}
	c.Header("Vary", "Accept")
	serve(c, rep)
}

func (p *Publisher) serveFile(name string) gin.HandlerFunc {
	return func(c *gin.Context) {
		p.serveEmbedded(c, name)
	}
}

// serveContracts serves /contracts/<path of the file in contracts.FS>, and the examples index at
// /contracts/examples.
func (p *Publisher) serveContracts(c *gin.Context) {
	name := strings.TrimPrefix(c.Param("path"), "/")
	if name == "examples" || name == "examples/" {
		rep, err := p.examples()
		if err != nil {
			render.Error(c, err)
			return
		}
		serve(c, rep)
		return
	}
	// Only the published trees are served; SKILL.md, its chapters and openapi.json have their own paths.
	if !strings.HasPrefix(name, "schemas/") && !strings.HasPrefix(name, "examples/") &&
		!strings.HasPrefix(name, "openapi/") && !strings.HasPrefix(name, "signing/") {
		notFound(c)
		return
	}
	p.serveEmbedded(c, name)
}

// serveEmbedded serves the embedded file name: 404 if there is none, 500 if it cannot be built.
func (p *Publisher) serveEmbedded(c *gin.Context, name string) {
	rep, err := p.file(name)
	switch {
	case errors.Is(err, errNoFile):
		notFound(c)
	case err != nil:
		render.Error(c, err)
	default:
		serve(c, rep)
	}
}

// serve writes rep with its ETag; http.ServeContent answers If-None-Match with 304 and HEAD without a
// body.
func serve(c *gin.Context, rep representation) {
	h := c.Writer.Header()
	h.Set("ETag", rep.etag)
	h.Set("Content-Type", rep.contentType)
	h.Set("Cache-Control", "public, max-age=300")
	h.Set("X-Content-Type-Options", "nosniff")
	http.ServeContent(c.Writer, c.Request, "", time.Time{}, bytes.NewReader(rep.body))
}

func notFound(c *gin.Context) {
	render.Problem(c, problem.Newf(problem.NotFound, "No resource at %s.", c.Request.URL.Path))
}
