// Package render writes svc responses: JSON in the negotiated media type (WIRE.md section 6), problems
// as application/problem+json (section 4), and the request ID every response carries.
package render

import (
	"mime"
	"strconv"
	"strings"

	"github.com/gin-gonic/gin"

	"github.com/svcforum/svc/contracts"
	"github.com/svcforum/svc/contracts/problem"
)

const (
	mediaTypeKey   = "svc.media_type"
	problemCodeKey = "svc.problem_code"
)

// JSONType is the default response media type.
const JSONType = "application/json"

// RequestIDHeader carries the request's ID both ways: the caller's, or one the service made.
const RequestIDHeader = "X-Request-Id"

// SetRequestID records the request's ID in the response header that carries it, which is where
// RequestID reads it: one place, and no per-request map. The host's first middleware calls it.
func SetRequestID(c *gin.Context, id string) { c.Writer.Header()[RequestIDHeader] = []string{id} }

// RequestID returns the ID recorded for the request, or "".
func RequestID(c *gin.Context) string {
	if v := c.Writer.Header()[RequestIDHeader]; len(v) > 0 {
		return v[0]
	}
	return ""
}

// Negotiate picks the response media type from the Accept header: application/svc+json; version=1 when
// asked for, application/json otherwise. ok is false when Accept names only other versions of
// application/svc+json, which is answered with 406.
func Negotiate(accept string) (mediaType string, ok bool) {
	switch accept { // what clients send most, without parsing
	case JSONType, "*/*":
		return JSONType, true
	case contracts.MediaType:
		return contracts.MediaType, true
	}
	if strings.TrimSpace(accept) == "" {
		return JSONType, true
	}
	otherVersionsOnly := true
	for part := range strings.SplitSeq(accept, ",") {
		mt, params, err := mime.ParseMediaType(strings.TrimSpace(part))
		if err != nil {
			otherVersionsOnly = false
			continue
		}
		if q, has := params["q"]; has {
			if f, err := strconv.ParseFloat(q, 64); err == nil && f == 0 {
				continue
			}
		}
		if mt == "application/svc+json" {
			if v, has := params["version"]; !has || v == "1" {
				return contracts.MediaType, true
			}
			continue
		}
		otherVersionsOnly = false
	}
	if otherVersionsOnly {
		return "", false
	}
	return JSONType, true
}

// SetMediaType sets the response media type, whatever the request's Accept header says.
func SetMediaType(c *gin.Context, mediaType string) { c.Set(mediaTypeKey, mediaType) }

// MediaType returns the response media type: the one set, else the one the request's Accept header
// negotiates (the host has answered 406 to a request that negotiates none), else JSONType.
func MediaType(c *gin.Context) string {
	if mt := c.GetString(mediaTypeKey); mt != "" {
		return mt
	}
	if c.Request != nil {
		if mt, ok := Negotiate(c.GetHeader("Accept")); ok {
			return mt
		}
	}
	return JSONType
}

// JSON writes v with status in the negotiated media type.
func JSON(c *gin.Context, status int, v any) {
	c.Render(status, jsonRender{mediaType: MediaType(c), value: v})
}

// Raw writes body, JSON already encoded (database.Write's result, or a stored idempotent response), with
// status in the negotiated media type.
func Raw(c *gin.Context, status int, body []byte) {
	c.Render(status, rawRender{mediaType: MediaType(c), body: body})
}

// Problem writes p as application/problem+json, stamped with the request ID. A problem carrying
// retry_after_seconds (a 429, an in-flight 409, a 503) also gets the Retry-After header.
func Problem(c *gin.Context, p *problem.Problem) {
	cp := *p // a shared problem value is never written to
	p = &cp
	p.RequestID = RequestID(c)
	SetProblemCode(c, p.Code)
	if s, ok := p.Extensions["retry_after_seconds"].(int); ok && s >= 1 {
		c.Header("Retry-After", strconv.Itoa(s))
	}
	c.Render(p.Status, jsonRender{mediaType: problem.ContentType, value: p})
}

// Error answers err with the problem Classify gives it. A request whose client went away gets the
// status StatusClientClosedRequest and no body: nobody reads it, and the log says what happened.
func Error(c *gin.Context, err error) {
	p, gone := Classify(c, err)
	if gone {
		c.AbortWithStatus(StatusClientClosedRequest)
		return
	}
	Problem(c, p)
}

// SetProblemCode records the code of the problem the request is answered with; Problem calls it, and
// so do the HTML error pages.
func SetProblemCode(c *gin.Context, code problem.Code) { c.Set(problemCodeKey, string(code)) }

// ProblemCode returns the code of the problem the request was answered with, or "" (the access log
// records it).
func ProblemCode(c *gin.Context) string { return c.GetString(problemCodeKey) }

// Abort writes p and stops the handler chain.
func Abort(c *gin.Context, p *problem.Problem) {
	Problem(c, p)
	c.Abort()
}
