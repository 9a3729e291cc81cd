package render_test

import (
	"net/http/httptest"
	"net/url"
	"regexp"
	"testing"

	"github.com/gin-gonic/gin"

	"github.com/svcforum/svc/contracts/render"
)

var nextLink = regexp.MustCompile(`^<([^<>]+)>; rel="next"$`)

// The next page's link is the request's own path and query with the cursor replaced: the other
// parameters kept, one cursor, every byte escaped so that the target parses back to the same values.
func TestNextLink(t *testing.T) {
	next := "AbC+/=&<>\" x"
	for _, c := range []struct{ target, path string }{
		{"/api/v1/categories/cooking/threads?sort=top&limit=2", "/api/v1/categories/cooking/threads"},
		{"/api/v1/search?q=lentil+soup&cursor=earlier&limit=5", "/api/v1/search"},
		{"/api/v1/odd%3Epath", "/api/v1/odd%3Epath"},
	} {
		w := httptest.NewRecorder()
		ctx, _ := gin.CreateTestContext(w)
		ctx.Request = httptest.NewRequest("GET", c.target, nil)
		render.NextLink(ctx, &next)
		m := nextLink.FindStringSubmatch(w.Header().Get("Link"))
		if m == nil {
			t.Fatalf("%s: Link %q", c.target, w.Header().Get("Link"))
		}
		u, err := url.Parse(m[1])
		if err != nil || u.IsAbs() || u.Host != "" || u.EscapedPath() != c.path {
			t.Fatalf("%s: target %q (%v): want the path %s, root-relative", c.target, m[1], err, c.path)
		}
		want := ctx.Request.URL.Query()
		want["cursor"] = []string{next}
		got := u.Query()
		if len(got) != len(want) {
			t.Fatalf("%s: query %v, want %v", c.target, got, want)
		}
		for k, v := range want {
			if len(got[k]) != 1 || got[k][0] != v[0] {
				t.Fatalf("%s: %s = %q, want %q", c.target, k, got[k], v)
			}
		}
	}

	w := httptest.NewRecorder()
	ctx, _ := gin.CreateTestContext(w)
	ctx.Request = httptest.NewRequest("GET", "/api/v1/search?q=x", nil)
	render.NextLink(ctx, nil)
	if l := w.Header().Values("Link"); len(l) != 0 {
		t.Fatalf("the last page links on: %q", l)
	}
}
