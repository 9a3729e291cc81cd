// Package render writes svc responses: JSON in the negotiated media type (WIRE.md section 6), problems
// as application/problem+json (section 4), and the request ID every response carries.
package render

import (
	"database/sql/driver"
	"errors"
	"mime"
	"net"
	"strconv"
	"strings"

	"github.com/gin-gonic/gin"

	"github.com/svcforum/svc/contracts"
	"github.com/svcforum/svc/contracts/problem"
)

const (
	requestIDKey = "svc.request_id"
	mediaTypeKey = "svc.media_type"
)

// JSONType is the default response media type.
const JSONType = "application/json"

// SetRequestID records the request's ID; the host's first middleware calls it.
func SetRequestID(c *gin.Context, id string) { c.Set(requestIDKey, id) }

// RequestID returns the ID recorded for the request, or "".
func RequestID(c *gin.Context) string { return c.GetString(requestIDKey) }

// Negotiate picks the response media type from the Accept header: application/svc+json; version=1 when
// asked for, application/json otherwise. ok is false when Accept names only other versions of
// application/svc+json, which is answered with 406.
func Negotiate(accept string) (mediaType string, ok bool) {
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

// SetMediaType records the negotiated media type; the host's negotiation middleware calls it.
func SetMediaType(c *gin.Context, mediaType string) { c.Set(mediaTypeKey, mediaType) }

// MediaType returns the negotiated response media type.
func MediaType(c *gin.Context) string {
	if mt := c.GetString(mediaTypeKey); mt != "" {
		return mt
	}
	return JSONType
}

// JSON writes v with status in the negotiated media type.
func JSON(c *gin.Context, status int, v any) {
	c.Render(status, jsonRender{mediaType: MediaType(c), value: v})
}

// Raw writes body, JSON already encoded (port.Write's result, or a stored idempotent response), with
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
	if s, ok := p.Extensions["retry_after_seconds"].(int); ok && s >= 1 {
		c.Header("Retry-After", strconv.Itoa(s))
	}
	c.Render(p.Status, jsonRender{mediaType: problem.ContentType, value: p})
}

// Error classifies err once at the edge: a *problem.Problem is written as it is, an error with a
// Problem method as its problem; anything else is attached to the context for the access log and
// answered with a 500 that leaks nothing.
func Error(c *gin.Context, err error) {
	var p *problem.Problem
	if errors.As(err, &p) {
		Problem(c, p)
		return
	}
	// Errors that know their problem (schema.Error: a 422 with a pointer per reason).
	var pe interface{ Problem() *problem.Problem }
	if errors.As(err, &pe) {
		Problem(c, pe.Problem())
		return
	}
	_ = c.Error(err)
	if unavailable(err) {
		Problem(c, problem.New(problem.NotReady, "The service cannot reach its database right now; nothing was changed. Retry shortly.").With("retry_after_seconds", 1))
		return
	}
	Problem(c, problem.New(problem.Internal, "The server could not complete the request."))
}

// unavailable reports whether err means the database could not be reached or went away, rather than
// a bug: a connection failure (SQLSTATE class 08), an operator's shutdown or restart (class 57), too
// many connections (53300), a network error, or a connection the driver dropped. Such a request is
// answered 503, and its transaction was rolled back.
func unavailable(err error) bool {
	var st interface{ SQLState() string }
	if errors.As(err, &st) {
		code := st.SQLState()
		return strings.HasPrefix(code, "08") || strings.HasPrefix(code, "57") || code == "53300"
	}
	var ne net.Error
	return errors.As(err, &ne) || errors.Is(err, driver.ErrBadConn)
}

// Abort writes p and stops the handler chain.
func Abort(c *gin.Context, p *problem.Problem) {
	Problem(c, p)
	c.Abort()
}
