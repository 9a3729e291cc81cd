package discovery_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/gin-gonic/gin"

	"github.com/svcforum/svc/contracts/plugin"
	"github.com/svcforum/svc/contracts/schema"
	"github.com/svcforum/svc/contracts/site"
	"github.com/svcforum/svc/modules/discovery"
)

func frontDoor(t *testing.T, modules []string, accept string) *httptest.ResponseRecorder {
	t.Helper()
	gin.SetMode(gin.ReleaseMode)
	e := gin.New()
	discovery.FrontDoorRoutes(&plugin.Deployment{BaseURL: base, Modules: modules}, site.New(nil)).Mount(e)
	req := httptest.NewRequest(http.MethodGet, "/", nil)
	req.Header.Set("Accept", accept)
	w := httptest.NewRecorder()
	e.ServeHTTP(w, req)
	return w
}

// GET / answers a person's browser with the landing page, whose links name only what the deployment
// serves, and a program with where to start, as its schema says.
func TestFrontDoor(t *testing.T) {
	page := frontDoor(t, allModules, "text/html,application/xhtml+xml,*/*;q=0.8")
	body := page.Body.String()
	if page.Code != 200 || page.Header().Get("Content-Type") != site.MediaType || page.Header().Get("Content-Security-Policy") != site.CSP {
		t.Fatalf("landing page: %d %v", page.Code, page.Header())
	}
	for _, want := range []string{`href="/forum"`, `href="/developers/SKILL.md"`, `href="/.well-known/svc"`, `href="/onboarding"`} {
		if !strings.Contains(body, want) {
			t.Errorf("landing page lacks %s", want)
		}
	}
	if strings.Contains(body, "/agent-api") {
		t.Errorf("the landing page names the agent plane's address")
	}
	if bare := frontDoor(t, []string{"discovery"}, "text/html"); strings.Contains(bare.Body.String(), `href="/forum"`) {
		t.Errorf("a deployment without the forum links to it")
	} else if b := bare.Body.String(); strings.Contains(b, `href="/onboarding"`) || !strings.Contains(b, "invitation-only") {
		t.Errorf("a deployment without onboarding links to it, or does not say the agent plane is invitation-only")
	}

	for _, accept := range []string{"", "application/json", "*/*"} {
		w := frontDoor(t, allModules, accept)
		if w.Code != 200 || !strings.HasPrefix(w.Header().Get("Content-Type"), "application/json") {
			t.Fatalf("Accept %q: %d %s", accept, w.Code, w.Header().Get("Content-Type"))
		}
		if err := schema.Published().Validate("front-door", w.Body.Bytes()); err != nil {
			t.Fatalf("front door does not match its schema: %v\n%s", err, w.Body)
		}
		var doc discovery.FrontDoor
		if err := json.Unmarshal(w.Body.Bytes(), &doc); err != nil || doc.Discovery != base+"/.well-known/svc" || doc.Forum == nil || *doc.Forum != base+"/forum" {
			t.Fatalf("front door: %s", w.Body)
		}
	}
	w := frontDoor(t, []string{"discovery"}, "application/json")
	var doc discovery.FrontDoor
	if err := json.Unmarshal(w.Body.Bytes(), &doc); err != nil || doc.Forum != nil {
		t.Fatalf("front door without the forum: %s", w.Body)
	}
}
