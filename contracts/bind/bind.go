// Package bind reads a request's JSON body the one way svc accepts it (WIRE.md sections 5 and 6): the
// content type must be application/json and the body unencoded (415), the body at most MaxBody bytes
// (413), and the bytes are decoded strictly against the published schema of their shape (422 with a
// pointer per reason).
package bind

import (
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strings"

	"github.com/gin-gonic/gin"

	"github.com/svcforum/svc/contracts/problem"
	"github.com/svcforum/svc/contracts/render"
	"github.com/svcforum/svc/contracts/schema"
)

// MaxBody is the largest request body of a JSON route (spec section 8).
const MaxBody = 65536

// JSON decodes the request body into dst against the schema name of set. On failure it writes the
// problem, aborts the chain and returns false.
func JSON(c *gin.Context, set *schema.Set, name string, dst any) bool {
	raw, p := Body(c)
	if p != nil {
		render.Abort(c, p)
		return false
	}
	if err := set.Decode(name, raw, dst); err != nil {
		render.Error(c, err)
		c.Abort()
		return false
	}
	return true
}

// Body returns the raw body of a JSON request, or the problem that refuses it: more than one
// Content-Type header (400), a content type other than application/json (415), a Content-Encoding
// other than identity (415), or more than MaxBody bytes (413). The agent-plane guard has usually read the
// body already (under gin.BodyBytesKey); it is then not read again.
func Body(c *gin.Context) ([]byte, *problem.Problem) {
	// Two Content-Type headers are two claims about one body: which one a proxy or a library believes
	// is a guess, so the request is refused rather than read under either.
	if len(c.Request.Header.Values("Content-Type")) > 1 {
		return nil, problem.New(problem.BadRequest, "The request has more than one Content-Type header; send exactly one: application/json.")
	}
	if p := CheckContentType(c.GetHeader("Content-Type")); p != nil {
		return nil, p
	}
	// A body is read as sent, never decoded: one whose header says it is encoded is refused rather than
	// read as something its header says it is not.
	if Encoded(c.Request.Header) {
		return nil, problem.New(problem.UnsupportedMediaType, "Content-Encoding is not supported: send the body unencoded.")
	}
	if b, ok := c.Get(gin.BodyBytesKey); ok {
		if raw, ok := b.([]byte); ok {
			return raw, nil
		}
	}
	if c.Request.ContentLength > MaxBody {
		return nil, tooLarge()
	}
	raw, err := io.ReadAll(http.MaxBytesReader(c.Writer, c.Request.Body, MaxBody))
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return nil, tooLarge()
		}
		return nil, problem.New(problem.BadRequest, "The request body could not be read.")
	}
	c.Set(gin.BodyBytesKey, raw)
	return raw, nil
}

// CheckContentType refuses (415) a Content-Type other than application/json, optionally with
// charset=utf-8.
func CheckContentType(header string) *problem.Problem {
	mt, params, err := mime.ParseMediaType(header)
	if err == nil && mt == "application/json" {
		cs, has := params["charset"]
		if len(params) == 0 || (len(params) == 1 && has && strings.EqualFold(cs, "utf-8")) {
			return nil
		}
	}
	shown := header
	if shown == "" {
		shown = "none"
	}
	if len(shown) > 100 {
		shown = shown[:100] + "..."
	}
	return problem.New(problem.UnsupportedMediaType,
		fmt.Sprintf("Content-Type must be application/json (got %q).", shown))
}

// Encoded reports whether any Content-Encoding header names a coding other than identity (every value
// of every such header is read: "identity" first and "gzip" second is encoded).
func Encoded(h http.Header) bool {
	for _, v := range h.Values("Content-Encoding") {
		for ce := range strings.SplitSeq(v, ",") {
			if ce = strings.TrimSpace(ce); ce != "" && !strings.EqualFold(ce, "identity") {
				return true
			}
		}
	}
	return false
}

func tooLarge() *problem.Problem {
	return problem.Newf(problem.BodyTooLarge, "The request body exceeds %d bytes.", MaxBody)
}
