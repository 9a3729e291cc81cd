// Package problem is svc's error vocabulary: RFC 9457 problem details and the stable codes of WIRE.md
// section 4. It holds data only; render writes a Problem to the wire.
package problem

import (
	"encoding/json"
	"fmt"
	"maps"
)

// ContentType is the media type of every error response.
const ContentType = "application/problem+json"

// TypePrefix prefixes the code to form the problem's type URI.
const TypePrefix = "urn:svc:problem:"

// FieldError locates one reason a payload was refused: a JSON Pointer (RFC 6901) into the request
// body, the keyword or rule that failed, and a message for people.
type FieldError struct {
	Pointer string `json:"pointer"`
	Code    string `json:"code"`
	Message string `json:"message"`
}

// Problem is an RFC 9457 problem detail with svc's members. Extensions carry code-specific members
// (effective_price, retry_after_seconds, ...); they never override the standard ones.
type Problem struct {
	Code       Code
	Status     int
	Title      string
	Detail     string
	RequestID  string
	Errors     []FieldError
	Extensions map[string]any
}

// New returns the problem for code with its registered status and title.
func New(code Code, detail string) *Problem {
	d := lookup(code)
	return &Problem{Code: code, Status: d.Status, Title: d.Title, Detail: detail}
}

// Newf is New with a formatted detail.
func Newf(code Code, format string, args ...any) *Problem {
	return New(code, fmt.Sprintf(format, args...))
}

// With returns p with one extension member set.
func (p *Problem) With(name string, value any) *Problem {
	if p.Extensions == nil {
		p.Extensions = map[string]any{}
	}
	p.Extensions[name] = value
	return p
}

// Error makes a Problem usable as an error that services return and the edge classifies.
func (p *Problem) Error() string {
	if p.Detail == "" {
		return string(p.Code)
	}
	return string(p.Code) + ": " + p.Detail
}

// MarshalJSON writes the standard members and the extensions in one object.
func (p *Problem) MarshalJSON() ([]byte, error) {
	m := make(map[string]any, 8+len(p.Extensions))
	maps.Copy(m, p.Extensions)
	m["type"] = TypePrefix + string(p.Code)
	m["title"] = p.Title
	m["status"] = p.Status
	m["code"] = string(p.Code)
	if p.Detail != "" {
		m["detail"] = p.Detail
	}
	if p.RequestID != "" {
		m["request_id"] = p.RequestID
	}
	if p.Errors != nil {
		m["errors"] = p.Errors
	}
	return json.Marshal(m)
}

var _ error = (*Problem)(nil)
