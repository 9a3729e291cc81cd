package site_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/gin-gonic/gin"

	"github.com/svcforum/svc/contracts/plugin"
	"github.com/svcforum/svc/contracts/problem"
	"github.com/svcforum/svc/contracts/render"
	"github.com/svcforum/svc/contracts/site"
)

var pages = fstest.MapFS{"hello.html": {Data: []byte(`{{define "title"}}Hello {{.Name}}{{end}}
{{define "content"}}<h1>Hello {{.Name}}</h1>{{template "untrusted" .}}{{end}}`)}}

func serve(t *testing.T, h gin.HandlerFunc, hdr ...string) *httptest.ResponseRecorder {
	t.Helper()
	gin.SetMode(gin.ReleaseMode)
	e := gin.New()
	e.GET("/p", h)
	req := httptest.NewRequest(http.MethodGet, "/p", nil)
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	w := httptest.NewRecorder()
	e.ServeHTTP(w, req)
	return w
}

// A page is rendered into the one layout, escaped, with the header the modules contribute and the
// site's security headers; a 200 has an ETag that a matching If-None-Match turns into 304.
func TestWrite(t *testing.T) {
	s := site.New([]plugin.Nav{
		{Module: "onboarding", Label: "Apply", Path: "/onboarding", Rank: 20},
		{Module: "forum", Label: "Forum", Path: "/forum", Rank: 10},
		{Module: "forum", Label: "Search", Path: "/forum/search", Rank: 30, Search: true},
	})
	page := s.MustParse(pages, "hello.html", nil)
	w := serve(t, func(c *gin.Context) { s.Write(c, http.StatusOK, page, map[string]string{"Name": "<b>you</b>"}) })
	body := w.Body.String()
	if w.Code != 200 || w.Header().Get("Content-Type") != site.MediaType || w.Header().Get("Content-Security-Policy") != site.CSP ||
		w.Header().Get("X-Content-Type-Options") != "nosniff" || w.Header().Get("ETag") == "" {
		t.Fatalf("%d %v", w.Code, w.Header())
	}
	for _, want := range []string{"<title>Hello &lt;b&gt;you&lt;/b&gt; · svc</title>", "<h1>Hello &lt;b&gt;you&lt;/b&gt;</h1>",
		`<a href="/forum">Forum</a><a href="/onboarding">Apply</a>`, `<form method="get" action="/forum/search" role="search">`, "untrusted content"} {
		if !strings.Contains(body, want) {
			t.Errorf("page lacks %q:\n%s", want, body)
		}
	}
	again := serve(t, func(c *gin.Context) { s.Write(c, http.StatusOK, page, map[string]string{"Name": "<b>you</b>"}) }, "If-None-Match", w.Header().Get("ETag"))
	if again.Code != http.StatusNotModified || again.Body.Len() != 0 {
		t.Fatalf("If-None-Match: %d %q", again.Code, again.Body)
	}
	// Without a search page, no search box.
	bare := site.New(nil)
	w = serve(t, func(c *gin.Context) {
		bare.Write(c, http.StatusOK, bare.MustParse(pages, "hello.html", nil), map[string]string{"Name": "x"})
	})
	if strings.Contains(w.Body.String(), "<form") || strings.Contains(w.Body.String(), "<nav") {
		t.Fatalf("a site without pages to link shows a header nav or search box:\n%s", w.Body)
	}
}

// An error page says what went wrong in words, carries Retry-After when trying again will help, is
// never cached, and records the problem code for the access log.
func TestProblemPage(t *testing.T) {
	s := site.New(nil)
	var code string
	w := serve(t, func(c *gin.Context) {
		s.Error(c, fmt.Errorf("list categories: %w", context.DeadlineExceeded))
		code = render.ProblemCode(c)
	})
	if w.Code != 503 || w.Header().Get("Retry-After") != "1" || w.Header().Get("Cache-Control") != "no-store" ||
		!strings.Contains(w.Body.String(), "not answering right now") || !strings.Contains(w.Body.String(), "Try again in 1 second") || code != "not_ready" {
		t.Fatalf("%d %v code %q\n%s", w.Code, w.Header(), code, w.Body)
	}
	w = serve(t, func(c *gin.Context) { s.Error(c, fmt.Errorf("bug: secret detail")) })
	if w.Code != 500 || strings.Contains(w.Body.String(), "secret") {
		t.Fatalf("%d\n%s", w.Code, w.Body)
	}
	w = serve(t, func(c *gin.Context) { s.Problem(c, problem.New(problem.BadRequest, "sort must be newest or top.")) })
	if w.Code != 400 || !strings.Contains(w.Body.String(), "sort must be newest or top.") || w.Header().Get("Retry-After") != "" {
		t.Fatalf("%d %v\n%s", w.Code, w.Header(), w.Body)
	}
}

func TestWantsHTML(t *testing.T) {
	cases := map[string]bool{
		"": false, "*/*": false, "application/json": false, "application/problem+json": false,
		"text/html": true,
		"text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8": true, // a browser
		"application/json, text/html;q=0.5":                               false,
		"text/html;q=0, application/json":                                 false,
		"application/svc+json; version=1":                                 false,
		"text/html, application/json":                                     true,
	}
	for accept, want := range cases {
		if got := site.WantsHTML(accept); got != want {
			t.Errorf("WantsHTML(%q) = %v, want %v", accept, got, want)
		}
	}
}

// described is page data that tells the layout its head.
type described struct {
	Name string
	meta site.Meta
}

func (d described) PageMeta() site.Meta { return d.meta }

// A page that describes itself gets its canonical link, OpenGraph tags, feed links and robots rule in
// the head, its text escaped; one that does not gets none of them, only the icon.
func TestWriteMeta(t *testing.T) {
	s := site.New(nil)
	page := s.MustParse(pages, "hello.html", nil)
	data := described{Name: "you", meta: site.Meta{Canonical: "https://x.example/p", Description: `a "quoted" <b>text</b>`, Type: "article",
		Feeds: []site.Feed{{Title: "P & Q", URL: "https://x.example/p/feed.atom"}}, NoIndex: true}}
	body := serve(t, func(c *gin.Context) { s.Write(c, http.StatusOK, page, data) }).Body.String()
	for _, want := range []string{`<link rel="icon" href="/favicon.svg" type="image/svg+xml">`, `<meta name="robots" content="noindex">`,
		`<link rel="canonical" href="https://x.example/p">`, `<meta property="og:type" content="article">`,
		`<meta property="og:title" content="Hello you">`, `<meta property="og:url" content="https://x.example/p">`,
		`<meta property="og:description" content="a &#34;quoted&#34; &lt;b&gt;text&lt;/b&gt;">`,
		`<link rel="alternate" type="application/atom+xml" title="P &amp; Q" href="https://x.example/p/feed.atom">`} {
		if !strings.Contains(body, want) {
			t.Errorf("page lacks %q:\n%s", want, body)
		}
	}
	plain := serve(t, func(c *gin.Context) { s.Write(c, http.StatusOK, page, map[string]string{"Name": "x"}) }).Body.String()
	for _, unwanted := range []string{"canonical", "og:", "alternate", "robots"} {
		if strings.Contains(plain, unwanted) {
			t.Errorf("a page without meta has %q", unwanted)
		}
	}
}

// The favicon is an SVG, cacheable with an ETag like every public read.
func TestFavicon(t *testing.T) {
	w := serve(t, site.Favicon)
	if w.Code != 200 || w.Header().Get("Content-Type") != site.FaviconMediaType || w.Header().Get("ETag") == "" ||
		w.Header().Get("Cache-Control") != "public, max-age=5" || !strings.HasPrefix(w.Body.String(), "<svg") {
		t.Fatalf("%d %v %q", w.Code, w.Header(), w.Body)
	}
	if again := serve(t, site.Favicon, "If-None-Match", w.Header().Get("ETag")); again.Code != http.StatusNotModified {
		t.Fatalf("If-None-Match: %d", again.Code)
	}
}
