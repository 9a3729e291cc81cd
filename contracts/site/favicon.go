package site

import (
	_ "embed"

	"github.com/gin-gonic/gin"
)

// FaviconPath is where the site's icon is served; the layout links it, and browsers that ask for
// /favicon.ico without reading the page get it there too (FaviconICOPath).
const (
	FaviconPath    = "/favicon.svg"
	FaviconICOPath = "/favicon.ico"
)

// FaviconMediaType is the icon's media type: SVG, which every current browser takes as an icon.
const FaviconMediaType = "image/svg+xml"

//go:embed favicon.svg
var favicon []byte

// Favicon answers the site's icon, cacheable like every public read.
func Favicon(c *gin.Context) {
	c.Header("X-Content-Type-Options", "nosniff")
	c.Header("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'")
	Cacheable(c, FaviconMediaType, favicon)
}
