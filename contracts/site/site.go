// Package site is the one site that every page for people belongs to: the layout, the stylesheet, the
// header (its links and search box) and footer, the security headers, and the HTML error pages. A module
// renders only its page bodies into it with html/template (a page file defines "title" and "content"),
// and never copies the layout.
package site

import (
	"bytes"
	"cmp"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"fmt"
	"html/template"
	"io/fs"
	"net/http"
	"slices"
	"strings"

	"github.com/gin-gonic/gin"

	"github.com/svcforum/svc/contracts/plugin"
)

// CSP is every page's Content-Security-Policy: no script of any kind, inline styles only (the site's
// stylesheet), images from the site itself, forms that post only to the site, and no framing.
const CSP = "default-src 'none'; style-src 'unsafe-inline'; img-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'"

// MediaType is the media type of every page.
const MediaType = "text/html; charset=utf-8"

//go:embed templates/*.html
var layoutFS embed.FS

// Site renders pages into the shared layout. It is cheap to build and safe for concurrent use.
type Site struct {
	nav    []plugin.Nav
	search *plugin.Nav
	errors *Page
}

// New returns the site whose header links to the pages the enabled modules contribute, and carries a
// search box sending to the first search page among them (it is not listed as a link).
func New(navs []plugin.Nav) *Site {
	navs = slices.Clone(navs)
	slices.SortFunc(navs, func(a, b plugin.Nav) int { return cmp.Or(cmp.Compare(a.Rank, b.Rank), cmp.Compare(a.Path, b.Path)) })
	s := &Site{}
	for _, n := range navs {
		switch {
		case !n.Search:
			s.nav = append(s.nav, n)
		case s.search == nil:
			s.search = &n
		}
	}
	s.errors = s.mustPage(layoutFS, "templates/error.html", nil)
	return s
}

// Page is a module's page parsed into the layout.
type Page struct {
	tmpl *template.Template
}

// Parse parses the page file name of fsys (defining "title" and "content", and any templates of its
// own) into a copy of the layout, with funcs available to it.
func (s *Site) Parse(fsys fs.FS, name string, funcs template.FuncMap) (*Page, error) {
	t, err := template.New("layout.html").Funcs(funcs).ParseFS(layoutFS, "templates/layout.html")
	if err != nil {
		return nil, fmt.Errorf("parse the layout: %w", err)
	}
	if t, err = t.ParseFS(fsys, name); err != nil {
		return nil, fmt.Errorf("parse page %s: %w", name, err)
	}
	return &Page{tmpl: t}, nil
}

// mustPage parses a page embedded in a binary: an error is a bug every test run finds.
func (s *Site) mustPage(fsys fs.FS, name string, funcs template.FuncMap) *Page {
	p, err := s.Parse(fsys, name, funcs)
	if err != nil {
		panic(err)
	}
	return p
}

// MustParse is Parse for pages embedded in a module's binary.
func (s *Site) MustParse(fsys fs.FS, name string, funcs template.FuncMap) *Page {
	return s.mustPage(fsys, name, funcs)
}

// frame is what the layout renders: the site's header, the page's own data and what its head says
// of it.
type frame struct {
	Nav      []plugin.Nav
	Search   *plugin.Nav
	Referrer string
	Meta     Meta
	Data     any
}

// Meta is what a page's head says of it to search engines, link previews and feed readers.
type Meta struct {
	Canonical   string // the page's absolute URL without what only pages it (cursors); none when empty
	Title       string // og:title; the page's title when empty
	Description string // og:description and the description; none when empty
	Type        string // og:type: "website" when empty, "article" for a post
	Feeds       []Feed // the page's Atom feeds, linked as alternates
	NoIndex     bool   // asks search engines not to index the page (search results)
}

// Feed is an Atom feed that a page links to.
type Feed struct {
	Title string
	URL   string
}

// Described is page data that tells the layout its Meta.
type Described interface {
	PageMeta() Meta
}

// FeedMediaType is the media type of the Atom feeds that pages link to.
const FeedMediaType = "application/atom+xml"

// The referrer policies of pages: none by default, so that a link followed from a page never tells
// another site which page (and which secret path) it came from; a form page sends its origin to the
// site itself, which the CSRF check of its POST needs (browsers send "Origin: null" under no-referrer).
const (
	NoReferrer         = "no-referrer"
	SameOriginReferrer = "same-origin"
)

// Write renders p with data and status, with the site's headers. A 200 carries an ETag of its bytes and
// a short public Cache-Control, and a matching If-None-Match is answered 304; anything else is not
// stored.
func (s *Site) Write(c *gin.Context, status int, p *Page, data any) {
	s.write(c, status, p, data, NoReferrer, true)
}

// WritePrivate renders a page that belongs to one visitor (a form carrying its CSRF token, a page at a
// secret address): never stored by any cache, with referrer as its Referrer-Policy.
func (s *Site) WritePrivate(c *gin.Context, status int, p *Page, data any, referrer string) {
	s.write(c, status, p, data, referrer, false)
}

func (s *Site) write(c *gin.Context, status int, p *Page, data any, referrer string, public bool) {
	fr := frame{Nav: s.nav, Search: s.search, Referrer: referrer, Data: data}
	if d, ok := data.(Described); ok {
		fr.Meta = d.PageMeta()
	}
	var buf bytes.Buffer
	if err := p.tmpl.ExecuteTemplate(&buf, "layout", fr); err != nil {
		_ = c.Error(fmt.Errorf("render page: %w", err))
		status, buf = http.StatusInternalServerError, *bytes.NewBufferString("<!DOCTYPE html><title>Error</title><p>The page could not be built.</p>\n")
	}
	h := c.Writer.Header()
	Headers(h)
	h.Set("Referrer-Policy", referrer)
	if status == http.StatusOK && public {
		Cacheable(c, MediaType, buf.Bytes())
		return
	}
	h.Set("Cache-Control", "no-store")
	c.Data(status, MediaType, buf.Bytes())
}

// Cacheable answers 200 with body, of mediaType, as a public read: an ETag of its bytes, a short public
// Cache-Control, and 304 to an If-None-Match that names the tag. Pages, feeds, the sitemap and the
// favicon answer through it.
func Cacheable(c *gin.Context, mediaType string, body []byte) {
	h := c.Writer.Header()
	sum := sha256.Sum256(append([]byte(mediaType+"\n"), body...))
	etag := `"` + hex.EncodeToString(sum[:16]) + `"`
	h.Set("ETag", etag)
	h.Set("Cache-Control", "public, max-age=5")
	for part := range strings.SplitSeq(c.GetHeader("If-None-Match"), ",") {
		if v := strings.TrimPrefix(strings.TrimSpace(part), "W/"); v == etag || v == "*" {
			c.Status(http.StatusNotModified)
			return
		}
	}
	c.Data(http.StatusOK, mediaType, body)
}

// Headers sets the security headers of every page.
func Headers(h http.Header) {
	h.Set("Content-Security-Policy", CSP)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("X-Frame-Options", "DENY")
}
