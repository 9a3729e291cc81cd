package sigv1_test

import (
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/svcforum/svc/database/dbtest"
	"github.com/svcforum/svc/modules/sigv1"
	"github.com/svcforum/svc/testkit"
)

// limitMember is one member of a RateLimit-Policy or RateLimit field as the guard writes it: a String
// naming the policy, then Integer parameters (draft-ietf-httpapi-ratelimit-headers, RFC 9651 syntax).
var limitMember = regexp.MustCompile(`^"([a-z-]+)"((?:;[a-z]+=[0-9]+)+)$`)

// fields parses a field of the guard's into policy -> parameter -> value; an empty field is nil.
func fields(t testing.TB, r testkit.Result, name string) map[string]map[string]int {
	t.Helper()
	vs := r.Header.Values(name)
	if len(vs) == 0 {
		return nil
	}
	if len(vs) != 1 {
		t.Fatalf("%s given %d times: %q", name, len(vs), vs)
	}
	out := map[string]map[string]int{}
	for _, m := range regexp.MustCompile(`, `).Split(vs[0], -1) {
		g := limitMember.FindStringSubmatch(m)
		if g == nil {
			t.Fatalf("%s: member %q is not a String with Integer parameters", name, m)
		}
		params := map[string]int{}
		for _, p := range regexp.MustCompile(`;([a-z]+)=([0-9]+)`).FindAllStringSubmatch(g[2], -1) {
			n, _ := strconv.Atoi(p[2])
			params[p[1]] = n
		}
		out[g[1]] = params
	}
	return out
}

// expect checks the policies and the windows r announces: want maps each policy to its "r" and
// "t" (nil: the policy is stated but the request did not count against it).
func expect(t testing.TB, r testkit.Result, policies map[string][2]int, left map[string][2]int) {
	t.Helper()
	gotP, gotL := fields(t, r, sigv1.HeaderRateLimitPolicy), fields(t, r, sigv1.HeaderRateLimit)
	if len(gotP) != len(policies) || len(gotL) != len(left) {
		t.Fatalf("RateLimit-Policy %q, RateLimit %q: want policies %v, windows %v", r.Header.Get(sigv1.HeaderRateLimitPolicy), r.Header.Get(sigv1.HeaderRateLimit), policies, left)
	}
	for name, qw := range policies {
		if p := gotP[name]; len(p) != 2 || p["q"] != qw[0] || p["w"] != qw[1] {
			t.Fatalf("RateLimit-Policy %q: %s wants q=%d;w=%d", r.Header.Get(sigv1.HeaderRateLimitPolicy), name, qw[0], qw[1])
		}
	}
	for name, rt := range left {
		if l := gotL[name]; len(l) != 2 || l["r"] != rt[0] || l["t"] != rt[1] {
			t.Fatalf("RateLimit %q: %s wants r=%d;t=%d", r.Header.Get(sigv1.HeaderRateLimit), name, rt[0], rt[1])
		}
	}
}

// Signed responses state the limits they count against (RateLimit-Policy) and what the request left
// of each window (RateLimit), from the admission's own counts, on both databases: reads count
// attempts, writes attempts and writes, a replayed write too; the 429 of either limit carries them
// (r=0, t equal to Retry-After); write-admission, which counts against neither, and a request refused
// before it counted (a replayed nonce) carry none; a new window starts full.
func TestRateLimitFields(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, dialect string) {
		w := newWorld(t, dialect, func(c *sigv1.Config) { c.AttemptsPerWindow, c.WritesPerWindow = 4, 2 })
		a := w.newAgent(t, "counted")
		attempts, writes := [2]int{4, 60}, [2]int{2, 60}
		w.clock.Add(20500 * time.Millisecond) // 39.5 s left in the window: t is 40

		r := w.send(t, a, "POST", "/conformance", echoBody, "c-1")
		testkit.Expect(t, r, 200, "")
		expect(t, r, map[string][2]int{"attempts": attempts}, map[string][2]int{"attempts": {3, 40}})

		r = w.send(t, a, "POST", writePath, noteBody("one"), "w-1")
		testkit.Expect(t, r, 201, "")
		expect(t, r, map[string][2]int{"attempts": attempts, "writes": writes}, map[string][2]int{"attempts": {2, 40}, "writes": {1, 40}})

		r = w.send(t, a, "POST", writePath, noteBody("one"), "w-1")
		testkit.Expect(t, r, 201, "")
		if r.Header.Get(sigv1.HeaderReplayed) != "true" {
			t.Fatal("the same key and body again is not a replay")
		}
		expect(t, r, map[string][2]int{"attempts": attempts, "writes": writes}, map[string][2]int{"attempts": {1, 40}, "writes": {0, 40}})

		r = w.send(t, a, "POST", "/write-admission", []byte(`{}`), "adm-1")
		testkit.Expect(t, r, 200, "")
		expect(t, r, nil, nil)

		// The writes limit refuses the third write: its 429 says so; attempts still counted.
		r = w.send(t, a, "POST", writePath, noteBody("two"), "w-2")
		testkit.Expect(t, r, 429, "rate_limited")
		expect(t, r, map[string][2]int{"attempts": attempts, "writes": writes}, map[string][2]int{"attempts": {0, 40}, "writes": {0, 40}})
		if retryAfter(t, r) != 40 {
			t.Fatalf("Retry-After %s, RateLimit t=40", r.Header.Get("Retry-After"))
		}

		// The attempts limit refuses a write before its writes window counts it.
		r = w.send(t, a, "POST", writePath, noteBody("three"), "w-3")
		testkit.Expect(t, r, 429, "rate_limited")
		expect(t, r, map[string][2]int{"attempts": attempts, "writes": writes}, map[string][2]int{"attempts": {0, 40}})

		// A replayed nonce counts nothing and states nothing.
		w.clock.Add(w.cfg.RateWindow)
		req := signed(t, a, "POST", "/conformance", echoBody, "c-2")
		replay := request("POST", "/conformance", echoBody, "c-2")
		replay.Header = req.Header.Clone()
		testkit.Expect(t, w.serve(req), 200, "")
		r = w.serve(replay)
		testkit.Expect(t, r, 409, "nonce_replayed")
		expect(t, r, nil, nil)

		// The new window: full again, less this window's first request.
		r = w.send(t, a, "POST", "/conformance", echoBody, "c-3")
		testkit.Expect(t, r, 200, "")
		expect(t, r, map[string][2]int{"attempts": attempts}, map[string][2]int{"attempts": {2, 40}})
	})
}

// The 429 of the per-address limit on failed authentication states its policy and that nothing is
// left until the window ends.
func TestRateLimitFieldsFailedAuth(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, dialect string) {
		w := newWorld(t, dialect, func(c *sigv1.Config) { c.FailedAuthPerWindow = 2 })
		forger := forger(w, w.newAgent(t, "forged"))
		const addr = "203.0.113.8:1234"
		for i := range 2 {
			r := w.serve(fromKey(t, forger, addr, i))
			testkit.Expect(t, r, 401, "signature_mismatch")
			expect(t, r, nil, nil)
		}
		r := w.serve(fromKey(t, forger, addr, 3))
		testkit.Expect(t, r, 429, "rate_limited")
		expect(t, r, map[string][2]int{"failed-auth": {2, 60}}, map[string][2]int{"failed-auth": {0, retryAfter(t, r)}})
	})
}
