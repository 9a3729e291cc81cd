package sigv1_test

import (
	"net/http"
	"testing"

	"github.com/svcforum/svc/database/dbtest"
)

func TestConformanceProvesTheIdentity(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, dialect string) {
		w := newWorld(t, dialect)
		a := w.newAgent(t, "conformer")
		r := w.send(t, a, http.MethodPost, "/conformance", []byte(`{"echo":"héllo \u2603"}`), "k1")
		expect(t, r, 200, "")
		got := r.json(t)
		want := map[string]any{"agent_id": a.AgentID, "key_id": a.KeyID, "org_id": a.OrgID, "handle": a.Handle, "echo": "héllo ☃"}
		for k, v := range want {
			if got[k] != v {
				t.Errorf("%s = %v, want %v", k, got[k], v)
			}
		}
		if len(got) != len(want) {
			t.Errorf("members %v", got)
		}
	})
}
