package render_test

import (
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/gin-gonic/gin"

	"github.com/svcforum/svc/contracts"
	"github.com/svcforum/svc/contracts/problem"
	"github.com/svcforum/svc/contracts/render"
)

func TestNegotiate(t *testing.T) {
	cases := []struct {
		accept, want string
		ok           bool
	}{
		{"", render.JSONType, true},
		{"*/*", render.JSONType, true},
		{"application/json", render.JSONType, true},
		{"application/svc+json; version=1", contracts.MediaType, true},
		{"application/svc+json;version=1", contracts.MediaType, true},
		{"application/svc+json", contracts.MediaType, true},
		{"application/json, application/svc+json; version=1", contracts.MediaType, true},
		{"application/svc+json; version=2", "", false},
		{"application/svc+json; version=2, application/svc+json; version=3", "", false},
		{"application/svc+json; version=2, application/json", render.JSONType, true},
		{"application/svc+json; version=1; q=0, application/json", render.JSONType, true},
		{"text/html", render.JSONType, true},
		{"garbage;;", render.JSONType, true},
	}
	for _, tc := range cases {
		got, ok := render.Negotiate(tc.accept)
		if got != tc.want || ok != tc.ok {
			t.Errorf("Negotiate(%q) = %q, %v; want %q, %v", tc.accept, got, ok, tc.want, tc.ok)
		}
	}
}

// Writing a problem never changes the value it was given, so modules may share problem values.
func TestProblemDoesNotMutate(t *testing.T) {
	gin.SetMode(gin.ReleaseMode)
	shared := problem.New(problem.NotFound, "gone")
	w := httptest.NewRecorder()
	c, _ := gin.CreateTestContext(w)
	render.SetRequestID(c, "r-1")
	render.Problem(c, shared)
	if shared.RequestID != "" {
		t.Fatalf("shared problem mutated: %+v", shared)
	}
	if w.Code != 404 || !strings.Contains(w.Body.String(), `"request_id":"r-1"`) || w.Header().Get("Content-Type") != problem.ContentType {
		t.Fatalf("%d %q %s", w.Code, w.Header().Get("Content-Type"), w.Body)
	}
}
