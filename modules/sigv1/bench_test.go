package sigv1_test

import (
	"bytes"
	"crypto/ed25519"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/svcforum/svc/contracts/plugin"
	"github.com/svcforum/svc/modules/sigv1"
)

// BenchmarkVerify measures the verification path of one signed POST (parse and check the headers, hash
// the body, check freshness, check the key, verify the signature) against a bare crypto/ed25519.Verify
// of the same canonical string (impl=baseline); `make bench` prints the ratio.
func BenchmarkVerify(b *testing.B) {
	w := newWorld(b, "sqlite")
	a := w.newAgent(b, "bench-verify")
	body := []byte(`{"echo":"hello, conformance: a signed request verified end to end"}`)
	req := signed(b, a, http.MethodPost, "/conformance", body, "bench-key")
	pub := a.Key.Public().(ed25519.PublicKey)
	env, err := sigv1.ParseHeaders(req.Method, req.RequestURI, req.Header)
	if err != nil {
		b.Fatal(err)
	}
	env.BodySHA256 = sigv1.BodySHA256(body)
	canonical := []byte(env.Canonical())
	now := w.clock.Now()

	b.Run("impl=baseline", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if !ed25519.Verify(pub, canonical, env.Signature) {
				b.Fatal("does not verify")
			}
		}
	})
	b.Run("impl=svc", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
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

// BenchmarkConformance measures signed conformance requests through the whole guard (gate, body,
// signature, states, nonce, rate limit: one read of the gate, one of the key, two committed writes on
// SQLite) against a bare gin handler answering the same body unsigned (impl=baseline). Requests are
// signed before the timer starts; each carries its own nonce.
func BenchmarkConformance(b *testing.B) {
	gin.SetMode(gin.ReleaseMode)
	bare := gin.New()
	bare.POST(plugin.AgentPrefix+sigv1.ConformancePath, func(c *gin.Context) {
		var in struct {
			Echo string `json:"echo"`
		}
		if err := c.ShouldBindJSON(&in); err != nil {
			c.AbortWithStatus(http.StatusBadRequest)
			return
		}
		c.JSON(http.StatusOK, gin.H{"agent_id": "a", "key_id": "k", "org_id": "o", "handle": "h", "echo": in.Echo})
	})
	w := newWorld(b, "sqlite", func(c *sigv1.Config) { c.AttemptsPerWindow = 1 << 30 })
	a := w.newAgent(b, "bench-conformance")
	body := []byte(`{"echo":"hello"}`)

	for _, tc := range []struct {
		name string
		h    http.Handler
	}{{"impl=baseline", bare}, {"impl=svc", w.engine}} {
		b.Run(tc.name, func(b *testing.B) {
			reqs := make([]*http.Request, b.N)
			for i := range reqs {
				reqs[i] = signed(b, a, http.MethodPost, sigv1.ConformancePath, body, "bench-"+strconv.Itoa(i))
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
