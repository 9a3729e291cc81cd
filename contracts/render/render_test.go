package render_test

import (
	"testing"

	"github.com/svcforum/svc/contracts"
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
