package testkit

import (
	"net/http"
	"testing"

	"github.com/gin-gonic/gin"

	"github.com/svcforum/svc/contracts/plugin"
	"github.com/svcforum/svc/contracts/port"
	"github.com/svcforum/svc/contracts/problem"
	"github.com/svcforum/svc/contracts/render"
)

// RequestID is the request ID every request served by an Engine carries.
const RequestID = "test-request"

// Engine returns a gin engine configured as the host configures a listener: exact paths (no
// redirects), the request's context reaching handlers, no trusted proxies, a request ID, and a panic
// answered with a 500 problem.
func Engine(t testing.TB) *gin.Engine {
	t.Helper()
	gin.SetMode(gin.ReleaseMode)
	e := gin.New()
	e.RedirectTrailingSlash, e.RedirectFixedPath = false, false
	e.ContextWithFallback = true
	if err := e.SetTrustedProxies(nil); err != nil {
		t.Fatal(err)
	}
	e.Use(func(c *gin.Context) { render.SetRequestID(c, RequestID); c.Next() })
	e.Use(gin.CustomRecovery(func(c *gin.Context, _ any) {
		render.Abort(c, problem.New(problem.Internal, "The server could not complete the request."))
	}))
	return e
}

// MountPublic mounts routes of the public listener (the public and onboarding planes) on e.
func MountPublic(t testing.TB, e *gin.Engine, routes plugin.Routes) {
	t.Helper()
	if (routes.Plane != plugin.Public && routes.Plane != plugin.Onboarding) || routes.Mount == nil {
		t.Fatalf("routes of module %q: plane %q, want public or onboarding routes with Mount", routes.Module, routes.Plane)
	}
	routes.Mount(e)
}

// MountAgent mounts agent routes under plugin.AgentPrefix on channel, as the host does: each
// request records its channel and its route's declaration, then runs guard and the route.
func MountAgent(t testing.TB, e *gin.Engine, channel string, guard []gin.HandlerFunc, routes []plugin.AgentRoute) {
	t.Helper()
	group := e.Group(plugin.AgentPrefix, func(c *gin.Context) { plugin.SetChannel(c, channel); c.Next() })
	for _, r := range routes {
		hs := append([]gin.HandlerFunc{func(c *gin.Context) { plugin.SetRoute(c, r); c.Next() }}, guard...)
		group.Handle(r.Method, r.Path, append(hs, r.Handlers...)...)
	}
}

// The headers through which a test names the principal a request runs as behind StandInGuard; in the
// host, the guard takes it from the verified signature.
const (
	HeaderAgentID = "X-Test-Agent-Id"
	HeaderOrgID   = "X-Test-Org-Id"
	HeaderHandle  = "X-Test-Handle"
	HeaderKeyID   = "X-Test-Key-Id"
)

// StandInGuard stands in for the signing module's guard in a module's own tests: it puts the principal
// the test headers name into the request's context, and verifies nothing (the signed path is tested
// where the guard is).
func StandInGuard(c *gin.Context) {
	p := port.Principal{AgentID: c.GetHeader(HeaderAgentID), OrgID: c.GetHeader(HeaderOrgID),
		Handle: c.GetHeader(HeaderHandle), KeyID: c.GetHeader(HeaderKeyID)}
	if p.KeyID == "" {
		p.KeyID = "test-key"
	}
	c.Request = c.Request.WithContext(port.WithPrincipal(c.Request.Context(), p))
	c.Next()
}

// As names p as the principal of req behind StandInGuard.
func As(req *http.Request, p port.Principal) *http.Request {
	req.Header.Set(HeaderAgentID, p.AgentID)
	req.Header.Set(HeaderOrgID, p.OrgID)
	req.Header.Set(HeaderHandle, p.Handle)
	if p.KeyID != "" {
		req.Header.Set(HeaderKeyID, p.KeyID)
	}
	return req
}
