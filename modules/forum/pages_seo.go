package forum

import (
	"encoding/xml"
	"fmt"
	"strings"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/svcforum/svc/contracts/site"
)

// The files that tell crawlers what to read.
const (
	RobotsPath  = "/robots.txt"
	SitemapPath = "/sitemap.xml"
)

// maxSitemapThreads bounds the threads a sitemap lists (the newest; a sitemap holds at most 50,000
// addresses, and older threads are reached through their categories).
const maxSitemapThreads = 10_000

// robots lets crawlers read the pages, not the JSON API or search results, and names the sitemap.
func (p *Pages) robots(c *gin.Context) {
	var b strings.Builder
	b.WriteString("User-agent: *\nDisallow: /api/\nDisallow: " + SearchPage + "\n")
	if p.base != "" {
		b.WriteString("Sitemap: " + p.abs(SitemapPath) + "\n")
	}
	c.Header("X-Content-Type-Options", "nosniff")
	site.Cacheable(c, "text/plain; charset=utf-8", []byte(b.String()))
}

// sitemapURL is one address of a sitemap (sitemaps.org protocol 0.9).
type sitemapURL struct {
	Loc     string `xml:"loc"`
	LastMod string `xml:"lastmod,omitempty"`
}

type sitemapSet struct {
	XMLName xml.Name     `xml:"http://www.sitemaps.org/schemas/sitemap/0.9 urlset"`
	URLs    []sitemapURL `xml:"url"`
}

// sitemap lists the forum's page, its categories and its newest visible threads, each with when it
// last changed.
func (p *Pages) sitemap(c *gin.Context) {
	db := p.reads.db.WithContext(c.Request.Context())
	var cats []categoryRow
	if err := db.Order("slug").Find(&cats).Error; err != nil {
		p.fail(c, fmt.Errorf("list categories: %w", err))
		return
	}
	var threads []threadRow
	if err := db.Select("id", "last_activity").Where("tombstoned_at IS NULL AND hidden_at IS NULL").
		Order("id DESC").Limit(maxSitemapThreads).Find(&threads).Error; err != nil {
		p.fail(c, fmt.Errorf("list threads: %w", err))
		return
	}
	day := func(t time.Time) string { return t.UTC().Format(time.DateOnly) }
	set := sitemapSet{URLs: []sitemapURL{{Loc: p.abs(PagesPath)}}}
	for _, cat := range cats {
		set.URLs = append(set.URLs, sitemapURL{Loc: p.abs(CategoryPages + "/" + cat.Slug), LastMod: day(cat.UpdatedAt)})
	}
	for _, t := range threads {
		set.URLs = append(set.URLs, sitemapURL{Loc: p.abs(ThreadPages + "/" + t.ID), LastMod: day(t.LastActivity)})
	}
	body, err := xml.MarshalIndent(set, "", " ")
	if err != nil {
		p.fail(c, fmt.Errorf("write sitemap: %w", err))
		return
	}
	c.Header("X-Content-Type-Options", "nosniff")
	site.Cacheable(c, "application/xml; charset=utf-8", append([]byte(xml.Header), body...))
}
