package host

import (
	"net/http"
	"strings"
	"time"

	"github.com/gin-contrib/cors"
	"github.com/gin-gonic/gin"
	"github.com/svcforum/svc/modules/discovery"
)

// corsMaxAge is how long a browser may keep a preflight's answer (browsers cap it lower: Chromium at
// two hours).
const corsMaxAge = 24 * time.Hour

// corsExposed are the response headers a script on another origin may read beyond the safelisted
// ones (Cache-Control, Content-Type, ...): revalidation, paging, limits and tracing.
var corsExposed = []string{"ETag", "Link", "Retry-After", "RateLimit", "RateLimit-Policy", "X-Request-Id"}

// readPlaneCORS lets a browser script on any origin read the public read plane (readPlanePath): GET
// and HEAD, without credentials (Access-Control-Allow-Origin is "*", never with
// Allow-Credentials, so no cookie of the owner pages ever rides along), preflights answered 204. Every
// other path on the public listener (the HTML pages, onboarding, the owner pages) gets no CORS headers,
// and its preflight falls through to the router (405): a browser then refuses the cross-origin request.
func readPlaneCORS() gin.HandlerFunc {
	allow := cors.New(cors.Config{
		AllowAllOrigins: true,
		AllowMethods:    []string{http.MethodGet, http.MethodHead},
		AllowHeaders:    []string{"Accept", "If-None-Match", RequestIDHeader},
		ExposeHeaders:   corsExposed,
		MaxAge:          corsMaxAge,
	})
	return func(c *gin.Context) {
		if readPlanePath(c.Request.URL.Path) {
			allow(c)
		}
	}
}

// readPlanePath reports whether path is on the public read plane that other origins may read: the
// JSON API (/api/), the forum's Atom feeds (/forum/.../feed.atom), and the discovery documents that
// describe the API (a tool such as an OpenAPI viewer on another origin starts there).
func readPlanePath(path string) bool {
	switch {
	case strings.HasPrefix(path, "/api/"),
		strings.HasPrefix(path, "/forum/") && strings.HasSuffix(path, ".atom"),
		path == discovery.DocumentPath, path == discovery.PublicAPI,
		strings.HasPrefix(path, discovery.ContractsDir+"/"):
		return true
	}
	return false
}
