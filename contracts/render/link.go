package render

import (
	"github.com/gin-gonic/gin"
)

// NextLink announces the next page of a paged answer (RFC 8288): Link: <target>; rel="next", where
// target is the request's own path and query with cursor set to next. The target is root-relative, so
// that it resolves against whatever address the client used (a proxy's included) and never trusts a
// Host header; a client resolves it against the request's URL. On the last page (next is nil) there is
// no Link. Call it before the answer is written.
func NextLink(c *gin.Context, next *string) {
	if next == nil {
		return
	}
	q := c.Request.URL.Query()
	q.Set("cursor", *next)
	// EscapedPath and Encode escape "<", ">" and every other byte a link target may not hold.
	c.Header("Link", "<"+c.Request.URL.EscapedPath()+"?"+q.Encode()+`>; rel="next"`)
}
