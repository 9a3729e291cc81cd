package sigv1_test

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/svcforum/svc/database/dbtest"
	"github.com/svcforum/svc/modules/sigv1"
	"github.com/svcforum/svc/testkit"
)

// A Planned route's admission is left to its write: the nonce, the limits and the claim are the first
// step of the write's plan (on PostgreSQL one statement of its batch, on SQLite statements in its
// transaction). The answers, their order and what is kept must be those of the admission run first.

// signedPlanned signs a POST of body with key to the planned route and sets the test headers hdr (which
// are not signed: the same signed bytes can be sent with and without them).
func signedPlanned(t testing.TB, a agent, body []byte, key string, hdr ...string) *http.Request {
	t.Helper()
	req := signed(t, a, "POST", plannedPath, body, key)
	for _, h := range hdr {
		req.Header.Set(h, "1")
	}
	return req
}

// again is req sent again, byte for byte, without its test headers.
func again(req *http.Request, body []byte) *http.Request {
	again := req.Clone(context.Background())
	again.Body = io.NopCloser(bytes.NewReader(body))
	for h := range again.Header {
		if strings.HasPrefix(h, "X-Test-") {
			again.Header.Del(h)
		}
	}
	return again
}

// usedAndFreed fails unless req, a refused write with key, used its nonce (its bytes again are
// nonce_replayed) and left the key free (the write with a new nonce runs).
func usedAndFreed(t testing.TB, w *world, a agent, req *http.Request, body []byte, key string) {
	t.Helper()
	guardAnswered(t, w.serve(again(req, body)), 409, "nonce_replayed")
	executed(t, w.serve(signedPlanned(t, a, body, key)))
}

// atOnce serves reqs concurrently on the world's node and returns their answers in order.
func atOnce(w *world, reqs []*http.Request) []testkit.Result {
	results := make([]testkit.Result, len(reqs))
	var wg sync.WaitGroup
	for i, req := range reqs {
		wg.Go(func() { results[i] = w.serve(req) })
	}
	wg.Wait()
	return results
}

// guardAnswered fails unless r is the guard's own answer: nothing the route wrote (its header)
// leaked into it.
func guardAnswered(t testing.TB, r testkit.Result, status int, code string) {
	t.Helper()
	testkit.Expect(t, r, status, code)
	if v := r.Header.Get("X-Test-Route"); v != "" {
		t.Fatalf("the guard's %d %s carries the route's header X-Test-Route: %q", status, code, v)
	}
}

// admissions fails unless the node's guard recorded withWrite admissions in their writes'
// transactions and alone on their own (svc_admissions_total).
func admissions(t testing.TB, n *node, withWrite, alone float64) {
	t.Helper()
	got := testkit.Counters(t, n.guard.Metrics())
	if w, a := got[`svc_admissions_total{how="with_write"}`], got[`svc_admissions_total{how="alone"}`]; w != withWrite || a != alone {
		t.Fatalf("admissions: %v with their write and %v alone, want %v and %v", w, a, withWrite, alone)
	}
}

// TestPlannedWriteAdmission (scenarios 7, 18, 19 on a Planned route): a write runs once, its admission
// recorded in the write's own transaction, and answers with its limits; its exact bytes again are 409
// nonce_replayed; the same key and body with a new nonce replay the stored answer byte for byte; a
// different body with the key is 409 idempotency_key_conflict. Each refusal's admission is recorded
// on its own.
func TestPlannedWriteAdmission(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, dialect string) {
		w := newWorld(t, dialect)
		a := w.newAgent(t, "planner")
		body := noteBody("planned ☃")
		first := signedPlanned(t, a, body, "k")
		orig := w.serve(first)
		executed(t, orig)
		admissions(t, w.node, 1, 0)
		if p := orig.Header.Get(sigv1.HeaderRateLimitPolicy); !strings.Contains(p, `"writes"`) || orig.Header.Get(sigv1.HeaderRateLimit) == "" {
			t.Fatalf("a planned write's answer states no writes limit: %q / %q", p, orig.Header.Get(sigv1.HeaderRateLimit))
		}
		guardAnswered(t, w.serve(again(first, body)), 409, "nonce_replayed")
		replayed(t, w.serve(signedPlanned(t, a, body, "k")), orig)
		replayed(t, newNode(t, w.db, w.clock).serve(signedPlanned(t, a, body, "k")), orig)
		guardAnswered(t, w.serve(signedPlanned(t, a, noteBody("other"), "k")), 409, "idempotency_key_conflict")
		rowsOf(t, w, 1)
		admissions(t, w.node, 1, 3) // the replay, the stored answer and the conflict
	})
}

// TestPlannedWriteRefusedBeforeWriting: a route that refuses a request before its write (422) still
// has the request admitted after it: the nonce is used (its bytes again are nonce_replayed, not 422),
// the key is freed for a corrected retry, and the admission's refusals (a key in flight) come first.
func TestPlannedWriteRefusedBeforeWriting(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, dialect string) {
		w := newWorld(t, dialect)
		a := w.newAgent(t, "refused")
		body := noteBody("fine")
		req := signedPlanned(t, a, body, "k", "X-Test-Refuse")
		r := w.serve(req)
		testkit.Expect(t, r, 422, "validation_failed")
		if r.Header.Get(sigv1.HeaderRateLimit) == "" {
			t.Fatal("a write the route refused answers without its limits")
		}
		usedAndFreed(t, w, a, req, body, "k")

		if _, err := w.claims.Claim(context.Background(), a.AgentID, "held", sigv1.Fingerprint("POST", "/agent-api/v1"+plannedPath, sigv1.BodySHA256(body)), w.clock.Now()); err != nil {
			t.Fatal(err)
		}
		guardAnswered(t, w.serve(signedPlanned(t, a, body, "held", "X-Test-Refuse")), 409, "idempotency_request_in_flight")
		rowsOf(t, w, 1)
	})
}

// TestPlannedWriteRefusedByItsPlan: a write whose plan fails at a step after the admission keeps
// nothing of it but the admission: the step's refusal is answered, the nonce is used, the key is free.
func TestPlannedWriteRefusedByItsPlan(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, dialect string) {
		w := newWorld(t, dialect)
		a := w.newAgent(t, "stepped")
		body := noteBody("stepped")
		req := signedPlanned(t, a, body, "k", "X-Test-Fail")
		testkit.Expect(t, w.serve(req), 403, "thread_locked")
		rowsOf(t, w, 0)
		usedAndFreed(t, w, a, req, body, "k")
		rowsOf(t, w, 1)
	})
}

// TestPlannedWriteLimits (scenario 12 on a Planned route): past the writes limit a write is 429 and
// keeps nothing; while that window lasts the agent's next write takes its admission first, so its
// route does not even run; the next window admits it again.
func TestPlannedWriteLimits(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, dialect string) {
		w := newWorld(t, dialect, func(c *sigv1.Config) { c.WritesPerWindow = 2 })
		a := w.newAgent(t, "limited")
		executed(t, w.serve(signedPlanned(t, a, noteBody("1"), "1")))
		executed(t, w.serve(signedPlanned(t, a, noteBody("2"), "2")))
		r := w.serve(signedPlanned(t, a, noteBody("3"), "3"))
		guardAnswered(t, r, 429, "rate_limited")
		retryAfter(t, r)
		runs := w.writes.plannedRuns.Load()
		guardAnswered(t, w.serve(signedPlanned(t, a, noteBody("4"), "4")), 429, "rate_limited")
		if n := w.writes.plannedRuns.Load(); n != runs {
			t.Fatalf("the route ran for a write of an agent the limit refuses in this window (%d runs, then %d)", runs, n)
		}
		rowsOf(t, w, 2)
		w.clock.Add(w.cfg.RateWindow)
		executed(t, w.serve(signedPlanned(t, a, noteBody("5"), "5")))
		rowsOf(t, w, 3)
	})
}

// TestPlannedWriteConcurrentSameKey (scenario 25 on a Planned route): the same write sent at once with
// one key and different nonces runs once; every other answer is its replay or 409 in flight.
func TestPlannedWriteConcurrentSameKey(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, dialect string) {
		w := newWorld(t, dialect)
		a := w.newAgent(t, "racer")
		body := noteBody("once")
		reqs := make([]*http.Request, 8)
		for i := range reqs {
			reqs[i] = signedPlanned(t, a, body, "race")
		}
		results := atOnce(w, reqs)
		var executed []testkit.Result
		for _, r := range results {
			switch {
			case r.Status == 201 && r.Header.Get(sigv1.HeaderReplayed) == "":
				executed = append(executed, r)
			case r.Status == 201, r.Status == 409 && r.Code == "idempotency_request_in_flight":
			default:
				t.Fatalf("a concurrent write answered %d %s", r.Status, r.Body)
			}
		}
		if len(executed) != 1 {
			t.Fatalf("%d of the concurrent writes ran, want 1", len(executed))
		}
		for _, r := range results {
			if r.Status == 201 && !bytes.Equal(r.Body, executed[0].Body) {
				t.Fatalf("a replay answered %s, the write %s", r.Body, executed[0].Body)
			}
		}
		rowsOf(t, w, 1)
	})
}

// TestPlannedWritePanics: a route that panics before its write is answered 500 without its headers;
// its nonce is used and its key is free.
func TestPlannedWritePanics(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, dialect string) {
		w := newWorld(t, dialect)
		a := w.newAgent(t, "panicky")
		body := noteBody("boom")
		req := signedPlanned(t, a, body, "k", "X-Test-Panic")
		guardAnswered(t, w.serve(req), 500, "internal_error") // the held answer's headers are dropped
		usedAndFreed(t, w, a, req, body, "k")
		rowsOf(t, w, 1)
	})
}

// TestPlannedWriteStatesFirst: a write the agent's state or the write switches refuse never reaches
// its route.
func TestPlannedWriteStatesFirst(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, dialect string) {
		w := newWorld(t, dialect)
		a := w.newAgent(t, "frozen")
		if err := w.switches.SetFrozen(context.Background(), "agent", a.AgentID, true); err != nil {
			t.Fatal(err)
		}
		guardAnswered(t, w.serve(signedPlanned(t, a, noteBody("x"), "k")), 403, "writes_frozen")
		if n := w.writes.plannedRuns.Load(); n != 0 {
			t.Fatalf("the route ran %d times for a frozen agent", n)
		}
		rowsOf(t, w, 0)
	})
}

// TestPlannedWriteClientLeavesBeforeWriting: a client that goes away while the route runs, before its
// write, has still used its nonce: the same bytes again are 409 nonce_replayed, never run.
func TestPlannedWriteClientLeavesBeforeWriting(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, dialect string) {
		w := newWorld(t, dialect)
		a := w.newAgent(t, "leaver")
		body := noteBody("gone")
		req := signedPlanned(t, a, body, "k", "X-Test-Cancel")
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		w.serve(req.WithContext(context.WithValue(ctx, testCancel{}, cancel)))
		usedAndFreed(t, w, a, req, body, "k")
		rowsOf(t, w, 1)
	})
}

// TestPlannedWriteBatchFails: a write whose batch fails with an error (not a refusal) answers 500; its
// nonce is used, it counts against the limits once, and its key is free for a retry.
func TestPlannedWriteBatchFails(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, dialect string) {
		w := newWorld(t, dialect, func(c *sigv1.Config) { c.WritesPerWindow = 2 })
		a := w.newAgent(t, "broken")
		body := noteBody("broken")
		req := signedPlanned(t, a, body, "k", "X-Test-Broken")
		testkit.Expect(t, w.serve(req), 500, "internal_error")
		rowsOf(t, w, 0)
		usedAndFreed(t, w, a, req, body, "k")
		guardAnswered(t, w.serve(signedPlanned(t, a, noteBody("third"), "k3")), 429, "rate_limited")
		rowsOf(t, w, 1)
	})
}

// TestPlannedWriteRefusalCountsOnce: a write refused by a step of its plan, then admitted on its own,
// counts once against the writes limit, as a write refused after its admission always did.
func TestPlannedWriteRefusalCountsOnce(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, dialect string) {
		w := newWorld(t, dialect, func(c *sigv1.Config) { c.WritesPerWindow = 2 })
		a := w.newAgent(t, "counted")
		r := w.serve(signedPlanned(t, a, noteBody("1"), "1", "X-Test-Fail"))
		testkit.Expect(t, r, 403, "thread_locked")
		if got := r.Header.Get(sigv1.HeaderRateLimit); !strings.Contains(got, `"writes";r=1;`) {
			t.Fatalf("the refused write left %q, want one write of two counted", got)
		}
		executed(t, w.serve(signedPlanned(t, a, noteBody("2"), "2")))
		guardAnswered(t, w.serve(signedPlanned(t, a, noteBody("3"), "3")), 429, "rate_limited")
		rowsOf(t, w, 1)
	})
}

// TestPlannedWriteStoredAnswerFirst: a key whose write is stored answers its stored response, before
// the route's own refusals (before writing, or by a step of the plan).
func TestPlannedWriteStoredAnswerFirst(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, dialect string) {
		w := newWorld(t, dialect)
		a := w.newAgent(t, "stored")
		body := noteBody("x")
		orig := w.serve(signedPlanned(t, a, body, "k"))
		executed(t, orig)
		replayed(t, w.serve(signedPlanned(t, a, body, "k", "X-Test-Refuse")), orig)
		replayed(t, w.serve(signedPlanned(t, a, body, "k", "X-Test-Fail")), orig)
		rowsOf(t, w, 1)
	})
}

// TestPlannedWriteConcurrentExactBytes (scenario 7, at once): the same signed bytes sent concurrently
// run once; every other copy is 409 nonce_replayed.
func TestPlannedWriteConcurrentExactBytes(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, dialect string) {
		w := newWorld(t, dialect)
		a := w.newAgent(t, "copies")
		body := noteBody("copies")
		first := signedPlanned(t, a, body, "k")
		reqs := make([]*http.Request, 8)
		for i := range reqs {
			reqs[i] = again(first, body)
		}
		results := atOnce(w, reqs)
		ran := 0
		for _, r := range results {
			switch {
			case r.Status == 201:
				ran++
			case r.Status == 409 && r.Code == "nonce_replayed":
			default:
				t.Fatalf("a copy answered %d %s", r.Status, r.Body)
			}
		}
		if ran != 1 {
			t.Fatalf("%d copies ran, want 1", ran)
		}
		rowsOf(t, w, 1)
	})
}
