package sigv1_test

import (
	"bytes"
	"crypto/ed25519"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/svcforum/svc/contracts/plugin"
	"github.com/svcforum/svc/contracts/port"
	"github.com/svcforum/svc/contracts/schema"
	"github.com/svcforum/svc/modules/sigv1"
	"github.com/svcforum/svc/sdk/signer"
	"github.com/svcforum/svc/testkit"
)

// BenchmarkVerify measures the verification path of signed POSTs against the bare verifier
// (impl=baseline: crypto/ed25519.Verify of each request's signature over its canonical string, both
// prepared before the timer starts). impl=svc does that same check and, besides it, what the guard does
// in memory: parse and check the headers, hash the body, check freshness, build the canonical string,
// check every field's alphabet and the key's strictness (sigv1.Verify). What the ratio measures is
// everything but the signature check itself; the key lookup, the nonce and the rest of the guard are in
// BenchmarkConformance. Every request is a fresh one, signed with its own nonce and Idempotency-Key.
func BenchmarkVerify(b *testing.B) {
	w := newWorld(b, "sqlite")
	a := w.newAgent(b, "bench-verify")
	body := []byte(`{"echo":"hello, conformance: a signed request verified end to end"}`)
	pub := a.Key.Public().(ed25519.PublicKey)
	now := w.clock.Now()
	// fresh signs n requests, each with its own nonce and key, before the timer starts.
	fresh := func(b *testing.B, n int) []*http.Request {
		reqs := make([]*http.Request, n)
		for i := range reqs {
			reqs[i] = signed(b, a, http.MethodPost, sigv1.ConformancePath, body, "bench-"+signer.RandomNonce())
		}
		return reqs
	}

	b.Run("impl=baseline", func(b *testing.B) {
		type check struct{ canonical, sig []byte }
		checks := make([]check, b.N)
		for i, req := range fresh(b, b.N) {
			env, err := sigv1.ParseHeaders(req.Method, req.RequestURI, req.Header)
			if err != nil {
				b.Fatal(err)
			}
			env.BodySHA256 = sigv1.BodySHA256(body)
			checks[i] = check{[]byte(env.Canonical()), env.Signature}
		}
		b.ReportAllocs()
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			if !ed25519.Verify(pub, checks[i].canonical, checks[i].sig) {
				b.Fatal("does not verify")
			}
		}
	})
	b.Run("impl=svc", func(b *testing.B) {
		reqs := fresh(b, b.N)
		b.ReportAllocs()
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			req := reqs[i]
			e, err := sigv1.ParseHeaders(req.Method, req.RequestURI, req.Header)
			if err != nil {
				b.Fatal(err)
			}
			e.BodySHA256 = sigv1.BodySHA256(body)
			if e.CheckFreshness(now) != nil || !sigv1.Verify(pub, e) {
				b.Fatal("does not verify")
			}
		}
	})
}

// BenchmarkConformance measures signed conformance requests through the guard and the endpoint
// (impl=svc: gate, body, headers, freshness, key, signature, states, nonce, rate limit: on SQLite one
// read of the gate, one of the key, and two committed writes, the nonce and the attempt; then the body
// decoded against its schema and the identity answered) against the same requests to the same engine
// configuration, route and handler without the guard (impl=baseline: the test kit's stand-in sets the
// principal and verifies nothing). What the ratio measures is the guard. Every request is a fresh one,
// signed before the timer starts with its own nonce and its own Idempotency-Key (never reused across
// rounds or runs), and must answer 200: a replayed nonce would answer 409 and stop the benchmark.
// POST /conformance is not a write, so the guard claims no key; writes are measured in the host.
func BenchmarkConformance(b *testing.B) {
	w := newWorld(b, "sqlite", func(c *sigv1.Config) { c.AttemptsPerWindow = 1 << 30 })
	a := w.newAgent(b, "bench-conformance")
	endpoints := sigv1.NewEndpoints(w.cfg, w.clock, schema.Published(), w.switches, w.limiter)
	bare := testkit.Engine(b)
	testkit.MountAgent(b, bare, plugin.ChannelEdge, []gin.HandlerFunc{testkit.StandInGuard}, endpoints.Routes().Agent)
	body := []byte(`{"echo":"hello"}`)

	for _, tc := range []struct {
		name string
		h    http.Handler
	}{{"impl=baseline", bare}, {"impl=svc", w.engine}} {
		b.Run(tc.name, func(b *testing.B) {
			reqs := make([]*http.Request, b.N)
			for i := range reqs {
				reqs[i] = testkit.As(signed(b, a, http.MethodPost, sigv1.ConformancePath, body, "bench-"+signer.RandomNonce()),
					port.Principal{AgentID: a.AgentID, KeyID: a.KeyID, OrgID: a.OrgID, Handle: a.Handle})
			}
			b.ReportAllocs()
			b.ResetTimer()
			start := time.Now()
			for i := 0; i < b.N; i++ {
				rec := httptest.NewRecorder()
				reqs[i].Body = readCloser(body)
				tc.h.ServeHTTP(rec, reqs[i])
				if rec.Code != http.StatusOK {
					b.Fatalf("status %d: %s", rec.Code, rec.Body)
				}
			}
			b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "req/s")
		})
	}
}

type bodyReader struct{ *bytes.Reader }

func (bodyReader) Close() error { return nil }

func readCloser(b []byte) bodyReader { return bodyReader{bytes.NewReader(b)} }
