package render

import (
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"strings"

	"github.com/gin-gonic/gin"

	"github.com/svcforum/svc/contracts/port"
)

// Cached writes v as JSON (in the negotiated media type) with an ETag of its bytes and media type and
// the given Cache-Control, and answers 304 to an If-None-Match that names the tag (weak or strong,
// in a list, or "*"). The read plane's responses go through it.
func Cached(c *gin.Context, v any, cacheControl string) {
	body, err := port.Marshal(v)
	if err != nil {
		Error(c, err)
		return
	}
	sum := sha256.Sum256(append([]byte(MediaType(c)+"\n"), body...))
	etag := `"` + hex.EncodeToString(sum[:16]) + `"`
	c.Header("ETag", etag)
	c.Header("Cache-Control", cacheControl)
	for part := range strings.SplitSeq(c.GetHeader("If-None-Match"), ",") {
		if p := strings.TrimPrefix(strings.TrimSpace(part), "W/"); p == etag || p == "*" {
			c.Status(http.StatusNotModified)
			return
		}
	}
	Raw(c, http.StatusOK, body)
}
