package sigv1_test

// The server against every case of the published signing vectors: each case's request, as it reaches
// the server, goes through the guard of a node whose clock is the case's server_time, and gets the
// case's verdict.

import (
	"bytes"
	"encoding/base64"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/svcforum/svc/contracts/plugin"
	"github.com/svcforum/svc/contracts/render"
	"github.com/svcforum/svc/database"
	"github.com/svcforum/svc/database/dbtest"
	"github.com/svcforum/svc/modules/sigv1"
	"github.com/svcforum/svc/modules/sigv1/internal/vectorgen"
	"github.com/svcforum/svc/sdk/envelope"
	"github.com/svcforum/svc/testkit"
)

// vCatchAll mounts n's guard in front of GET, POST and PUT routes on every path under the agent prefix
// (none of them a write) that answer 200 {"ok": true}, so that any target reaches the guard.
func vCatchAll(t testing.TB, n *node) *gin.Engine {
	e, _ := vCatchAllCounting(t, n)
	return e
}

// vCatchAllCounting is catchAll with a count of the requests the handler answered.
func vCatchAllCounting(t testing.TB, n *node) (*gin.Engine, *atomic.Int64) {
	t.Helper()
	var hits atomic.Int64
	ok := func(c *gin.Context) {
		hits.Add(1)
		render.JSON(c, http.StatusOK, map[string]bool{"ok": true})
	}
	var routes []plugin.AgentRoute
	for _, m := range []string{http.MethodGet, http.MethodPost, http.MethodPut} {
		routes = append(routes, plugin.AgentRoute{Method: m, Path: "/*path", Handlers: []gin.HandlerFunc{ok}})
	}
	return mountAgent(t, plugin.ChannelEdge, n.guard, routes), &hits
}

// The fixed organisation and handle the vector identities are registered under.
const (
	vectorOrgID  = "0190b1c0-0000-7000-8000-000000000001"
	vectorHandle = "vector-agent"
)

// vectorIdentity is the agent id and key id that c's request names, which the vectors' notes assume
// to exist, belong together and hold the case's public key. Where the request's header is malformed
// (the case is refused with 400 before any lookup) the signer's identity, from signed_canonical,
// stands in for it.
func vectorIdentity(c vectorgen.Case) (agentID, keyID string) {
	lines := strings.Split(c.SignedCanonical, "\n")
	agentID, keyID = c.Request.Headers[sigv1.HeaderAgentID], c.Request.Headers[sigv1.HeaderKeyID]
	if !envelope.ValidAgentID(agentID) {
		agentID = lines[3]
	}
	if !envelope.ValidKeyID(keyID) {
		keyID = lines[4]
	}
	return agentID, keyID
}

// registerVectorIdentity inserts the organisation, agent and key of c directly, with the exact ids the
// vectors use (the registry issues its own ids).
func registerVectorIdentity(t *testing.T, w *world, c vectorgen.Case) {
	t.Helper()
	agentID, keyID := vectorIdentity(c)
	at := time.Unix(c.ServerTime, 0).UTC()
	for _, q := range []struct {
		sql  string
		args []any
	}{
		{`INSERT INTO sigv1_orgs (id, name, created_at) VALUES (?, ?, ?)`, []any{vectorOrgID, "vectors", at}},
		{`INSERT INTO sigv1_agents (id, org_id, handle, state, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?)`,
			[]any{agentID, vectorOrgID, vectorHandle, sigv1.AgentActive, at, at}},
		{`INSERT INTO sigv1_keys (id, agent_id, public_key, state, created_at) VALUES (?, ?, ?, ?, ?)`,
			[]any{keyID, agentID, c.Key.PublicKeyBase64, sigv1.KeyActive, at}},
	} {
		if err := w.db.Exec(q.sql, q.args...).Error; err != nil {
			t.Fatalf("register the vector identity: %v", err)
		}
	}
}

// resetVectorState empties what one case leaves behind in a shared world: nonces (several cases
// share one request and so one nonce), rate windows (the failed-authentication count of the test's
// single client address), and the identities (two cases name the same key id for another agent, or
// the same public key under another key id, which cannot coexist with the first).
func resetVectorState(t *testing.T, w *world) {
	t.Helper()
	for _, table := range []string{"sigv1_nonces", "sigv1_rate_windows", "sigv1_idempotency", "sigv1_keys", "sigv1_agents", "sigv1_orgs"} {
		if err := w.db.Exec("DELETE FROM " + table).Error; err != nil {
			t.Fatal(err)
		}
	}
}

// vectorRequest builds the request of c exactly as it reaches the server.
func vectorRequest(t *testing.T, c vectorgen.Case) *http.Request {
	t.Helper()
	body, err := base64.StdEncoding.DecodeString(c.Request.BodyBase64)
	if err != nil || string(body) != c.Request.Body {
		t.Fatalf("body and body_base64 disagree: %v", err)
	}
	var rd io.Reader
	if len(body) > 0 {
		rd = bytes.NewReader(body)
	}
	req := httptest.NewRequest(c.Request.Method, c.Request.Target, rd)
	req.RequestURI = c.Request.Target
	for k, v := range c.Request.Headers {
		req.Header[http.CanonicalHeaderKey(k)] = []string{v}
	}
	if len(body) > 0 {
		req.Header.Set("Content-Type", "application/json")
	}
	return req
}

// TestVectorsAgainstServer serves every case of the signing vectors through the guard.
func TestVectorsAgainstServer(t *testing.T) {
	f := loadVectors(t)
	if len(f.Cases) == 0 {
		t.Fatal("the vectors file has no cases")
	}
	dbtest.Each(t, func(t *testing.T, dialect string) {
		// SQLite: a fresh world per case. PostgreSQL: one world for all cases (a database per case is
		// slow), emptied between cases.
		var shared *world
		var sharedEngine *gin.Engine
		var sharedHits *atomic.Int64
		if dialect != database.SQLite {
			shared = newWorld(t, dialect)
			sharedEngine, sharedHits = vCatchAllCounting(t, shared.node)
		}
		ran := 0
		codes := map[string]int{}
		for _, c := range f.Cases {
			t.Run(c.Name, func(t *testing.T) {
				ran++
				codes[c.Expected.Code]++
				w, e, hits := shared, sharedEngine, sharedHits
				if w == nil {
					w = newWorld(t, dialect)
					e, hits = vCatchAllCounting(t, w.node)
				} else {
					resetVectorState(t, w)
				}
				registerVectorIdentity(t, w, c)
				w.clock.Set(time.Unix(c.ServerTime, 0).UTC())
				before := hits.Load()

				r := testkit.Serve(e, vectorRequest(t, c))
				if c.Expected.Code == "ok" {
					if c.Expected.Status != http.StatusOK {
						t.Fatalf("case expects ok with status %d", c.Expected.Status)
					}
					testkit.Expect(t, r, http.StatusOK, "")
					if hits.Load() != before+1 {
						t.Fatal("accepted, but the route's handler did not run")
					}
				} else {
					vExpectProblem(t, r, c.Expected.Status, c.Expected.Code)
					if hits.Load() != before {
						t.Fatal("refused, but the route's handler ran")
					}
				}
			})
		}
		if ran != len(f.Cases) {
			t.Errorf("%d of %d cases ran", ran, len(f.Cases))
		}
		t.Logf("%d signing vectors served on %s: %v", ran, dialect, codes)
	})
}
