package sigv1_test

// Tests of the guard's state checks (agent and key states, frozen and paused writes, channel gates) and
// of POST /write-admission. The helpers prefixed gt are shared with idempotency_test.go and
// limits_test.go.

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"
	"time"

	"gorm.io/gorm"

	"github.com/svcforum/svc/contracts/plugin"
	"github.com/svcforum/svc/database/dbtest"
	"github.com/svcforum/svc/modules/sigv1"
	"github.com/svcforum/svc/sdk/signer"
	"github.com/svcforum/svc/testkit"
)

// echoBody is a valid conformance body.
var echoBody = []byte(`{"echo":"x"}`)

// noteBody is the body of a test write.
func noteBody(note string) []byte { return fmt.Appendf(nil, `{"note":%q}`, note) }

// windowHits is the sum of the hits of every rate window.
func windowHits(t testing.TB, db *gorm.DB) int64 {
	t.Helper()
	var n int64
	if err := db.Raw("SELECT COALESCE(SUM(hits), 0) FROM sigv1_rate_windows").Scan(&n).Error; err != nil {
		t.Fatalf("sum hits: %v", err)
	}
	return n
}

// replayable signs one request and returns a function that rebuilds it byte for byte (same method,
// target, headers and body, hence the same nonce and signature) as often as needed.
func replayable(t testing.TB, a agent, method, path string, body []byte, idem string) func() *http.Request {
	t.Helper()
	h := signed(t, a, method, path, body, idem).Header.Clone()
	return func() *http.Request {
		req := httptest.NewRequest(method, plugin.AgentPrefix+path, bytes.NewReader(body))
		req.Header = h.Clone()
		return req
	}
}

// retryAfter checks that r carries Retry-After (whole seconds >= 1) and, when the problem has one, an
// equal retry_after_seconds; it returns the seconds.
func retryAfter(t testing.TB, r testkit.Result) int {
	t.Helper()
	h := r.Header.Get("Retry-After")
	s, err := strconv.Atoi(h)
	if err != nil || s < 1 || strconv.Itoa(s) != h {
		t.Fatalf("Retry-After %q is not whole seconds >= 1; body %s", h, r.Body)
	}
	if v, ok := r.JSON(t)["retry_after_seconds"]; ok && v != float64(s) {
		t.Fatalf("retry_after_seconds %v != Retry-After %d", v, s)
	}
	return s
}

// secondKey registers a second key of a's agent, derived from label, and returns a as it signs with it.
func secondKey(t testing.TB, w *world, a agent, label string) agent {
	t.Helper()
	seed := sha256.Sum256([]byte("svc sigv1 test key " + label))
	key := ed25519.NewKeyFromSeed(seed[:])
	k, err := w.registry.AddKey(context.Background(), a.AgentID, base64.StdEncoding.EncodeToString(key.Public().(ed25519.PublicKey)))
	if err != nil {
		t.Fatal(err)
	}
	b := a
	b.KeyID, b.Key = k.ID, key
	b.Signer = signer.New(a.AgentID, k.ID, key, signer.WithClock(w.clock.Now))
	return b
}

// rowsOf fails unless the test write table holds want rows.
func rowsOf(t testing.TB, w *world, want int64) {
	t.Helper()
	if n := w.writes.count(t); n != want {
		t.Fatalf("test write table holds %d rows, want %d", n, want)
	}
}

func memberOf(t testing.TB, r testkit.Result, name string, want any) {
	t.Helper()
	if got := r.JSON(t)[name]; got != want {
		t.Fatalf("problem member %s = %v, want %v; body %s", name, got, want, r.Body)
	}
}

// TestStateSuspendedAgentRefusedEverywhere: a suspended agent gets 403 agent_suspended on every route
// and channel, conformance included; once resumed it passes again.
func TestStateSuspendedAgentRefusedEverywhere(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, dialect string) {
		w := newWorld(t, dialect)
		a := w.newAgent(t, "suspendee")
		ctx := context.Background()
		if _, err := w.registry.SetAgentState(ctx, a.AgentID, sigv1.AgentSuspended); err != nil {
			t.Fatal(err)
		}
		for i, e := range []struct {
			name  string
			serve func(*http.Request) testkit.Result
		}{{"edge", w.serve}, {"private", func(r *http.Request) testkit.Result { return testkit.Serve(w.private, r) }}} {
			idem := "s" + itoa(i)
			testkit.Expect(t, e.serve(signed(t, a, "POST", "/conformance", echoBody, idem+"c")), 403, "agent_suspended")
			testkit.Expect(t, e.serve(signed(t, a, "POST", "/write-admission", []byte(`{}`), idem+"a")), 403, "agent_suspended")
			testkit.Expect(t, e.serve(signed(t, a, "POST", writePath, noteBody("no"), idem+"w")), 403, "agent_suspended")
		}
		rowsOf(t, w, 0)
		if n := testkit.CountRows(t, w.db, "sigv1_idempotency", ""); n != 0 {
			t.Fatalf("%d idempotency rows", n)
		}

		if _, err := w.registry.SetAgentState(ctx, a.AgentID, sigv1.AgentActive); err != nil {
			t.Fatal(err)
		}
		testkit.Expect(t, w.send(t, a, "POST", "/conformance", echoBody, "r1"), 200, "")
		testkit.Expect(t, w.send(t, a, "POST", writePath, noteBody("yes"), "r2"), 201, "")
		rowsOf(t, w, 1)
	})
}

// TestStateRevokedKeyRefusedOtherKeyWorks: revoking one of an agent's two keys refuses that key only.
func TestStateRevokedKeyRefusedOtherKeyWorks(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, dialect string) {
		w := newWorld(t, dialect)
		a := w.newAgent(t, "rotator")
		b := secondKey(t, w, a, "rotator second key")
		testkit.Expect(t, w.send(t, a, "POST", "/conformance", echoBody, "k1"), 200, "")
		r := w.send(t, b, "POST", "/conformance", echoBody, "k2")
		testkit.Expect(t, r, 200, "")
		if got := r.JSON(t)["key_id"]; got != b.KeyID {
			t.Fatalf("key_id %v, want the second key %s", got, b.KeyID)
		}

		if _, err := w.registry.RevokeKey(context.Background(), a.KeyID); err != nil {
			t.Fatal(err)
		}
		testkit.Expect(t, w.send(t, a, "POST", "/conformance", echoBody, "k3"), 403, "key_revoked")
		testkit.Expect(t, w.send(t, a, "POST", writePath, noteBody("old key"), "k4"), 403, "key_revoked")
		testkit.Expect(t, testkit.Serve(w.private, signed(t, a, "POST", "/conformance", echoBody, "k5")), 403, "key_revoked")
		rowsOf(t, w, 0)

		testkit.Expect(t, w.send(t, b, "POST", "/conformance", echoBody, "k6"), 200, "")
		testkit.Expect(t, w.send(t, b, "POST", writePath, noteBody("new key"), "k7"), 201, "")
		rowsOf(t, w, 1)
	})
}

// TestStateFrozenWrites: a freeze (all, org, agent) refuses writes with 403 writes_frozen and the scope,
// and nothing else: conformance passes, another organisation's agent (or another agent of the org, for
// an agent freeze) writes on; unfreezing lets writes through again.
func TestStateFrozenWrites(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, dialect string) {
		w := newWorld(t, dialect)
		a := w.newAgent(t, "frozen-a")
		sibling := w.agentIn(t, a.OrgID, "frozen-sibling")
		other := w.newAgent(t, "frozen-other")
		ctx := context.Background()
		var rows int64
		n := 0
		key := func() string { n++; return "f" + itoa(n) }

		for _, tc := range []struct {
			scope, id   string
			sibling     bool // whether the freeze reaches a's sibling in the same org
			otherFrozen bool // whether it reaches the other org's agent
		}{
			{sigv1.ScopeAll, "", true, true},
			{sigv1.ScopeOrg, a.OrgID, true, false},
			{sigv1.ScopeAgent, a.AgentID, false, false},
		} {
			t.Run(tc.scope, func(t *testing.T) {
				if err := w.switches.SetFrozen(ctx, tc.scope, tc.id, true); err != nil {
					t.Fatal(err)
				}
				r := w.send(t, a, "POST", writePath, noteBody("frozen"), key())
				testkit.Expect(t, r, 403, "writes_frozen")
				memberOf(t, r, "scope", tc.scope)
				testkit.Expect(t, w.send(t, a, "POST", "/conformance", echoBody, key()), 200, "")
				testkit.Expect(t, testkit.Serve(w.private, signed(t, a, "POST", "/conformance", echoBody, key())), 200, "")
				for _, x := range []struct {
					ag     agent
					frozen bool
				}{{sibling, tc.sibling}, {other, tc.otherFrozen}} {
					r := w.send(t, x.ag, "POST", writePath, noteBody("bystander"), key())
					if x.frozen {
						testkit.Expect(t, r, 403, "writes_frozen")
						memberOf(t, r, "scope", tc.scope)
					} else {
						testkit.Expect(t, r, 201, "")
						rows++
					}
				}
				rowsOf(t, w, rows)

				if err := w.switches.SetFrozen(ctx, tc.scope, tc.id, false); err != nil {
					t.Fatal(err)
				}
				testkit.Expect(t, w.send(t, a, "POST", writePath, noteBody("thawed"), key()), 201, "")
				rows++
				rowsOf(t, w, rows)
			})
		}
	})
}

// TestStatePausedWrites: while writes are paused every write gets 503 writes_unavailable with
// Retry-After, on both channels; signed reads go on; resuming lets writes through.
func TestStatePausedWrites(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, dialect string) {
		w := newWorld(t, dialect)
		a := w.newAgent(t, "paused")
		ctx := context.Background()
		if err := w.switches.SetPaused(ctx, true); err != nil {
			t.Fatal(err)
		}
		r := w.send(t, a, "POST", writePath, noteBody("paused"), "p1")
		testkit.Expect(t, r, 503, "writes_unavailable")
		retryAfter(t, r)
		r = testkit.Serve(w.private, signed(t, a, "POST", writePath, noteBody("paused"), "p2"))
		testkit.Expect(t, r, 503, "writes_unavailable")
		retryAfter(t, r)
		testkit.Expect(t, w.send(t, a, "POST", "/conformance", echoBody, "p3"), 200, "")
		testkit.Expect(t, w.send(t, a, "POST", "/write-admission", []byte(`{}`), "p4"), 200, "")
		rowsOf(t, w, 0)

		if err := w.switches.SetPaused(ctx, false); err != nil {
			t.Fatal(err)
		}
		testkit.Expect(t, w.send(t, a, "POST", writePath, noteBody("resumed"), "p5"), 201, "")
		rowsOf(t, w, 1)
	})
}

// TestStateChannelGate: closing the private channel's gate answers 503 channel_closed there (before
// any verification: even a request with a bad signature), and the edge channel is unaffected.
func TestStateChannelGate(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, dialect string) {
		w := newWorld(t, dialect)
		a := w.newAgent(t, "gated")
		ctx := context.Background()
		if err := w.switches.SetGate(ctx, plugin.ChannelPrivate, false); err != nil {
			t.Fatal(err)
		}
		for i, p := range []struct {
			path string
			body []byte
		}{{"/conformance", echoBody}, {"/write-admission", []byte(`{}`)}, {writePath, noteBody("gated")}} {
			testkit.Expect(t, testkit.Serve(w.private, signed(t, a, "POST", p.path, p.body, "g"+itoa(i))), 503, "channel_closed")
		}
		unsigned := request("POST", "/conformance", echoBody, "g9")
		testkit.Expect(t, testkit.Serve(w.private, unsigned), 503, "channel_closed")
		rowsOf(t, w, 0)
		if n := testkit.CountRows(t, w.db, "sigv1_nonces", ""); n != 0 {
			t.Fatalf("a refused request at a closed gate recorded %d nonces", n)
		}

		testkit.Expect(t, w.send(t, a, "POST", "/conformance", echoBody, "e1"), 200, "")
		testkit.Expect(t, w.send(t, a, "POST", writePath, noteBody("edge"), "e2"), 201, "")
		rowsOf(t, w, 1)

		if err := w.switches.SetGate(ctx, plugin.ChannelPrivate, true); err != nil {
			t.Fatal(err)
		}
		testkit.Expect(t, testkit.Serve(w.private, signed(t, a, "POST", writePath, noteBody("private"), "e3")), 201, "")
		rowsOf(t, w, 2)
	})
}

// TestStateRefusedWriteBurnsItsNonce: reliability.md section 8 ("rejected" means: nonce recorded
// whenever the signature was valid) and scenario 9. A validly signed write refused because writes are
// frozen or paused (or the agent is suspended) must still use up its nonce; otherwise anyone who saw the bytes
// can replay them, inside the 300 s freshness window, once the operator lifts the freeze or pause (or
// resumes the agent), and a write the agent gave up on executes. The replay must get 409 nonce_replayed.
// (The 403/503 may still be answered before the 409, as WIRE.md orders the checks; what matters is
// that the nonce is recorded once the signature verifies.)
func TestStateRefusedWriteBurnsItsNonce(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, dialect string) {
		ctx := context.Background()
		t.Run("frozen", func(t *testing.T) {
			w := newWorld(t, dialect)
			a := w.newAgent(t, "burner")
			if err := w.switches.SetFrozen(ctx, sigv1.ScopeAgent, a.AgentID, true); err != nil {
				t.Fatal(err)
			}
			again := replayable(t, a, "POST", writePath, noteBody("abandoned"), "b1")
			testkit.Expect(t, w.serve(again()), 403, "writes_frozen")
			if err := w.switches.SetFrozen(ctx, sigv1.ScopeAgent, a.AgentID, false); err != nil {
				t.Fatal(err)
			}
			w.clock.Add(10 * time.Second)
			testkit.Expect(t, w.serve(again()), 409, "nonce_replayed")
			rowsOf(t, w, 0)
		})
		t.Run("paused", func(t *testing.T) {
			w := newWorld(t, dialect)
			a := w.newAgent(t, "burner")
			if err := w.switches.SetPaused(ctx, true); err != nil {
				t.Fatal(err)
			}
			again := replayable(t, a, "POST", writePath, noteBody("abandoned"), "b1")
			testkit.Expect(t, w.serve(again()), 503, "writes_unavailable")
			if err := w.switches.SetPaused(ctx, false); err != nil {
				t.Fatal(err)
			}
			w.clock.Add(10 * time.Second)
			testkit.Expect(t, w.serve(again()), 409, "nonce_replayed")
			rowsOf(t, w, 0)
		})
		t.Run("suspended", func(t *testing.T) {
			w := newWorld(t, dialect)
			a := w.newAgent(t, "burner")
			if _, err := w.registry.SetAgentState(ctx, a.AgentID, sigv1.AgentSuspended); err != nil {
				t.Fatal(err)
			}
			again := replayable(t, a, "POST", writePath, noteBody("abandoned"), "b1")
			testkit.Expect(t, w.serve(again()), 403, "agent_suspended")
			if _, err := w.registry.SetAgentState(ctx, a.AgentID, sigv1.AgentActive); err != nil {
				t.Fatal(err)
			}
			w.clock.Add(10 * time.Second)
			testkit.Expect(t, w.serve(again()), 409, "nonce_replayed")
			rowsOf(t, w, 0)
		})
	})
}

// TestWriteAdmissionAdmits: {} on an unblocked agent answers exactly the three members, channel edge.
func TestWriteAdmissionAdmits(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, dialect string) {
		w := newWorld(t, dialect)
		a := w.newAgent(t, "admitted")
		r := w.send(t, a, "POST", "/write-admission", []byte(`{}`), "a1")
		testkit.Expect(t, r, 200, "")
		m := r.JSON(t)
		if len(m) != 3 || m["admitted"] != true || m["channel"] != "edge" {
			t.Fatalf("body %s", r.Body)
		}
		if v, ok := m["blocked_by"]; !ok || v != nil {
			t.Fatalf("blocked_by must be present and null: %s", r.Body)
		}
	})
}

// TestWriteAdmissionBodyMustBeEmptyObject: only the two bytes {} are accepted, as application/json.
func TestWriteAdmissionBodyMustBeEmptyObject(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, dialect string) {
		w := newWorld(t, dialect)
		a := w.newAgent(t, "admission-body")
		for i, body := range []string{`{ }`, "{}\n", `{"a":1}`, ``, ` {}`, `[]`, `null`} {
			r := w.send(t, a, "POST", "/write-admission", []byte(body), "b"+itoa(i))
			if r.Status != 422 || r.Code != "validation_failed" {
				t.Errorf("body %q: got %d %q, want 422 validation_failed", body, r.Status, r.Code)
			}
		}
		req := signed(t, a, "POST", "/write-admission", []byte(`{}`), "ct")
		req.Header.Set("Content-Type", "text/plain")
		testkit.Expect(t, w.serve(req), 415, "unsupported_media_type")
	})
}

// TestWriteAdmissionReportsBlockers: write-admission answers 200 admitted false with the status and code
// the write would get: a freeze (with its scope), the pause, a used-up write limit.
func TestWriteAdmissionReportsBlockers(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, dialect string) {
		w := newWorld(t, dialect, func(c *sigv1.Config) { c.WritesPerWindow = 1 })
		a := w.newAgent(t, "blocked")
		ctx := context.Background()
		n := 0
		admission := func(t *testing.T) map[string]any {
			t.Helper()
			n++
			r := w.send(t, a, "POST", "/write-admission", []byte(`{}`), "w"+itoa(n))
			testkit.Expect(t, r, 200, "")
			m := r.JSON(t)
			if m["admitted"] != false || m["channel"] != "edge" {
				t.Fatalf("body %s", r.Body)
			}
			b, ok := m["blocked_by"].(map[string]any)
			if !ok {
				t.Fatalf("blocked_by is no object: %s", r.Body)
			}
			return b
		}

		t.Run("frozen org", func(t *testing.T) {
			if err := w.switches.SetFrozen(ctx, sigv1.ScopeOrg, a.OrgID, true); err != nil {
				t.Fatal(err)
			}
			b := admission(t)
			if b["status"] != float64(403) || b["code"] != "writes_frozen" || b["scope"] != "org" {
				t.Fatalf("blocked_by %v", b)
			}
			if err := w.switches.SetFrozen(ctx, sigv1.ScopeOrg, a.OrgID, false); err != nil {
				t.Fatal(err)
			}
		})
		t.Run("paused", func(t *testing.T) {
			if err := w.switches.SetPaused(ctx, true); err != nil {
				t.Fatal(err)
			}
			b := admission(t)
			if b["status"] != float64(503) || b["code"] != "writes_unavailable" {
				t.Fatalf("blocked_by %v", b)
			}
			if err := w.switches.SetPaused(ctx, false); err != nil {
				t.Fatal(err)
			}
		})
		t.Run("write limit", func(t *testing.T) {
			testkit.Expect(t, w.send(t, a, "POST", writePath, noteBody("the one write"), "only"), 201, "")
			b := admission(t)
			s, _ := b["retry_after_seconds"].(float64)
			if b["status"] != float64(429) || b["code"] != "rate_limited" || s < 1 || s != float64(int(s)) {
				t.Fatalf("blocked_by %v", b)
			}
			// And the write it predicts is indeed refused.
			testkit.Expect(t, w.send(t, a, "POST", writePath, noteBody("one too many"), "more"), 429, "rate_limited")
		})
	})
}

// TestWriteAdmissionChangesOnlyTheNonce: a write-admission call records its nonce and nothing else: no
// rate-limit hit, no idempotency claim, no write.
func TestWriteAdmissionChangesOnlyTheNonce(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, dialect string) {
		w := newWorld(t, dialect)
		a := w.newAgent(t, "untouched")
		// Some state first, so that the counts compared below are not all zero.
		testkit.Expect(t, w.send(t, a, "POST", writePath, noteBody("before"), "x1"), 201, "")
		testkit.Expect(t, w.send(t, a, "POST", "/conformance", echoBody, "x2"), 200, "")
		tables := []string{"sigv1_rate_windows", "sigv1_idempotency", "sigv1test_writes", "sigv1_switches"}
		before := map[string]int64{}
		for _, tb := range tables {
			before[tb] = testkit.CountRows(t, w.db, tb, "")
		}
		hits, nonces := windowHits(t, w.db), testkit.CountRows(t, w.db, "sigv1_nonces", "")

		for i := range 3 {
			testkit.Expect(t, w.send(t, a, "POST", "/write-admission", []byte(`{}`), "x-adm"+itoa(i)), 200, "")
		}
		for _, tb := range tables {
			if n := testkit.CountRows(t, w.db, tb, ""); n != before[tb] {
				t.Errorf("%s: %d rows, was %d", tb, n, before[tb])
			}
		}
		if h := windowHits(t, w.db); h != hits {
			t.Errorf("rate-limit hits %d, was %d: write-admission was counted", h, hits)
		}
		if n := testkit.CountRows(t, w.db, "sigv1_nonces", ""); n != nonces+3 {
			t.Errorf("nonces %d, want %d", n, nonces+3)
		}
	})
}

// TestWriteAdmissionPrivateChannel: on the private engine the channel is "private".
func TestWriteAdmissionPrivateChannel(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, dialect string) {
		w := newWorld(t, dialect)
		a := w.newAgent(t, "privateer")
		r := testkit.Serve(w.private, signed(t, a, "POST", "/write-admission", []byte(`{}`), "p1"))
		testkit.Expect(t, r, 200, "")
		if m := r.JSON(t); m["channel"] != "private" || m["admitted"] != true {
			t.Fatalf("body %s", r.Body)
		}
	})
}
