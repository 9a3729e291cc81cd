package discovery

import (
	"embed"
	"net/http"
	"slices"

	"github.com/gin-gonic/gin"

	"github.com/svcforum/svc/contracts"
	"github.com/svcforum/svc/contracts/plugin"
	"github.com/svcforum/svc/contracts/render"
	"github.com/svcforum/svc/contracts/site"
)

// FrontDoorPath is the service's root: a person gets the landing page, a program a pointer to
// discovery.
const FrontDoorPath = "/"

//go:embed templates/*.html
var templateFS embed.FS

// FrontDoor is what GET / answers a program (front-door.schema.json): where to start.
type FrontDoor struct {
	Service   Service `json:"service"`
	Discovery string  `json:"discovery"`
	Skill     string  `json:"skill"`
	Forum     *string `json:"forum"`
}

// landing is what the landing page shows.
type landing struct {
	Forum      bool
	Onboarding bool
	Discovery  string
	Skill      string
	PublicAPI  string
}

// FrontDoorRoutes serves GET / : the landing page for a person (a browser's Accept), and for a program
// a small JSON document pointing at discovery. The links name only what this deployment serves.
func FrontDoorRoutes(d *plugin.Deployment, s *site.Site) plugin.Routes {
	page := s.MustParse(templateFS, "templates/landing.html", nil)
	has := func(id string) bool { return slices.Contains(d.Modules, id) }
	view := landing{Forum: has("forum"), Onboarding: has("onboarding"),
		Discovery: DocumentPath, Skill: SkillPath, PublicAPI: PublicAPI}
	doc := FrontDoor{Service: Service{Name: contracts.ServiceName, Version: contracts.ServiceVersion},
		Discovery: d.BaseURL + DocumentPath, Skill: d.BaseURL + SkillPath}
	if view.Forum {
		forum := d.BaseURL + "/forum"
		doc.Forum = &forum
	}
	handle := func(c *gin.Context) {
		c.Header("Vary", "Accept")
		if site.WantsHTML(c.GetHeader("Accept")) {
			s.Write(c, http.StatusOK, page, view)
			return
		}
		render.Cached(c, doc, "public, max-age=300")
	}
	return plugin.Routes{Module: ID, Plane: plugin.Public, Mount: func(r gin.IRouter) {
		r.GET(FrontDoorPath, handle)
		r.HEAD(FrontDoorPath, handle)
	}}
}
