package testkit

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/svcforum/svc/contracts/problem"
	"github.com/svcforum/svc/contracts/schema"
)

// Result is a response as the tests read it.
type Result struct {
	Status int
	Header http.Header
	Body   []byte
	Code   string // the problem's code, if the body is a problem
}

// Serve runs req through h in-process and reads the whole response.
func Serve(h http.Handler, req *http.Request) Result {
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	r := Result{Status: rec.Code, Header: rec.Header(), Body: rec.Body.Bytes()}
	if rec.Header().Get("Content-Type") == problem.ContentType {
		var p struct{ Code string }
		_ = json.Unmarshal(r.Body, &p)
		r.Code = p.Code
	}
	return r
}

// JSON decodes the body as a JSON object.
func (r Result) JSON(t testing.TB) map[string]any {
	t.Helper()
	var m map[string]any
	r.Decode(t, &m)
	return m
}

// Decode decodes the body into v.
func (r Result) Decode(t testing.TB, v any) {
	t.Helper()
	if err := json.Unmarshal(r.Body, v); err != nil {
		t.Fatalf("body %s: %v", Short(r.Body), err)
	}
}

// Expect fails unless r has status and problem code ("" for an answer that is no problem); a problem
// must validate against the published problem schema.
func Expect(t testing.TB, r Result, status int, code string) {
	t.Helper()
	if r.Status != status || r.Code != code {
		t.Fatalf("got %d %q, want %d %q; body %s", r.Status, r.Code, status, code, Short(r.Body))
	}
	if code != "" {
		Valid(t, "problem", r.Body)
	}
}

// Valid fails unless raw validates against the published schema name.
func Valid(t testing.TB, name string, raw []byte) {
	t.Helper()
	if err := schema.Published().Validate(name, raw); err != nil {
		t.Fatalf("does not match the %s schema: %v\n%s", name, err, Short(raw))
	}
}

// Short is b for a failure message: at most 600 bytes of it.
func Short(b []byte) string {
	if len(b) > 600 {
		return string(b[:600]) + fmt.Sprintf("... (%d bytes)", len(b))
	}
	return string(b)
}
