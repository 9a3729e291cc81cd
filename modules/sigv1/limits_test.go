package sigv1_test

// Tests of the guard's rate limits (reliability.md section 6; section 8 scenarios 40, 41, 42).

import (
	"context"
	"crypto/ed25519"
	"crypto/sha256"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/svcforum/svc/database/dbtest"
	"github.com/svcforum/svc/modules/sigv1"
	"github.com/svcforum/svc/sdk/signer"
	"github.com/svcforum/svc/testkit"
)

// forger returns a as someone without its private key: same agent and key ids, another key, so
// every signature fails (401 signature_mismatch).
func forger(w *world, a agent) agent {
	seed := sha256.Sum256([]byte("not the key of " + a.Handle))
	f := a
	f.Key = ed25519.NewKeyFromSeed(seed[:])
	f.Signer = signer.New(a.AgentID, a.KeyID, f.Key, signer.WithClock(w.clock.Now))
	return f
}

// fromKey builds a signed conformance request from the client address addr.
func fromKey(t testing.TB, a agent, addr string, n int) *http.Request {
	t.Helper()
	req := signed(t, a, "POST", "/conformance", echoBody, "from-"+itoa(n))
	req.RemoteAddr = addr
	return req
}

// TestLimitAttemptsAcrossNodes (scenario 40): the per-agent request limit is shared by two nodes on
// one database: with 3 per window, 2 requests on each node make the 4th a 429 with Retry-After equal
// to retry_after_seconds; writes are refused too, without a row; the next window admits again.
func TestLimitAttemptsAcrossNodes(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, dialect string) {
		opt := func(c *sigv1.Config) { c.AttemptsPerWindow = 3 }
		w := newWorld(t, dialect, opt)
		second := newNode(t, w.db, w.clock, opt)
		a := w.newAgent(t, "bursty")
		testkit.Expect(t, w.send(t, a, "POST", "/conformance", echoBody, "1"), 200, "")
		testkit.Expect(t, second.send(t, a, "POST", "/conformance", echoBody, "2"), 200, "")
		testkit.Expect(t, w.send(t, a, "POST", "/conformance", echoBody, "3"), 200, "")
		r := second.send(t, a, "POST", "/conformance", echoBody, "4")
		testkit.Expect(t, r, 429, "rate_limited")
		if s := retryAfter(t, r); s > int(w.cfg.RateWindow/time.Second) {
			t.Fatalf("Retry-After %d exceeds the window", s)
		}
		testkit.Expect(t, w.send(t, a, "POST", writePath, noteBody("limited"), "5"), 429, "rate_limited")
		rowsOf(t, w, 0)
		if n := testkit.CountRows(t, w.db, "sigv1_idempotency", ""); n != 0 {
			t.Fatalf("a rate-limited write left %d idempotency rows", n)
		}
		// Another agent has its own limit.
		b := w.newAgent(t, "calm")
		testkit.Expect(t, second.send(t, b, "POST", "/conformance", echoBody, "6"), 200, "")

		w.clock.Add(w.cfg.RateWindow)
		testkit.Expect(t, second.send(t, a, "POST", "/conformance", echoBody, "7"), 200, "")
		testkit.Expect(t, w.send(t, a, "POST", writePath, noteBody("next window"), "8"), 201, "")
		rowsOf(t, w, 1)
	})
}

// TestLimitRetryAfterRoundsUpToWindowEnd: Retry-After is the whole seconds left in the window, rounded
// up, and waiting that long is enough.
func TestLimitRetryAfterRoundsUpToWindowEnd(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, dialect string) {
		w := newWorld(t, dialect, func(c *sigv1.Config) { c.AttemptsPerWindow = 1 })
		a := w.newAgent(t, "waiter")
		// The test clock starts on a window boundary; go 44.5 s into the window.
		w.clock.Add(44500 * time.Millisecond)
		testkit.Expect(t, w.send(t, a, "POST", "/conformance", echoBody, "1"), 200, "")
		r := w.send(t, a, "POST", "/conformance", echoBody, "2")
		testkit.Expect(t, r, 429, "rate_limited")
		if s := retryAfter(t, r); s != 16 {
			t.Fatalf("Retry-After %d, want 16 (15.5 s left, rounded up)", s)
		}
		w.clock.Add(15 * time.Second)
		testkit.Expect(t, w.send(t, a, "POST", "/conformance", echoBody, "3"), 429, "rate_limited")
		w.clock.Add(time.Second)
		testkit.Expect(t, w.send(t, a, "POST", "/conformance", echoBody, "4"), 200, "")
	})
}

// TestLimitConcurrentBurstAcrossNodes: 30 requests at once over the network to two nodes, 10 allowed per
// window: exactly 10 pass (no increment is lost, none counted twice), 20 get 429.
func TestLimitConcurrentBurstAcrossNodes(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, dialect string) {
		opt := func(c *sigv1.Config) { c.AttemptsPerWindow = 10 }
		w := newWorld(t, dialect, opt)
		second := newNode(t, w.db, w.clock, opt)
		a := w.newAgent(t, "burst")
		servers := []*httptest.Server{httptest.NewServer(w.engine), httptest.NewServer(second.engine)}
		for _, s := range servers {
			defer s.Close()
		}
		const n = 30
		results := make([]testkit.Result, n)
		errs := make([]error, n)
		start := make(chan struct{})
		var wg sync.WaitGroup
		for i := range n {
			wg.Go(func() {
				<-start
				s := servers[i%2]
				results[i], errs[i] = netSend(s.Client(), s.URL, a, "/conformance", echoBody, "b"+itoa(i), nil)
			})
		}
		close(start)
		wg.Wait()
		ok, limited := 0, 0
		for i, r := range results {
			switch {
			case errs[i] != nil:
				t.Fatalf("request %d: %v", i, errs[i])
			case r.Status == 200:
				ok++
			case r.Status == 429 && r.Code == "rate_limited" && r.Header.Get("Retry-After") != "":
				limited++
			default:
				t.Errorf("request %d: %d %q %s", i, r.Status, r.Code, r.Body)
			}
		}
		if ok != 10 || limited != 20 {
			t.Fatalf("%d passed and %d were limited, want 10 and 20", ok, limited)
		}
	})
}

// TestLimitWritesPerWindow: with 2 writes per window the third write gets 429 while reads pass, and
// write-admission reports it.
func TestLimitWritesPerWindow(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, dialect string) {
		w := newWorld(t, dialect, func(c *sigv1.Config) { c.WritesPerWindow = 2 })
		a := w.newAgent(t, "writer")
		executed(t, w.send(t, a, "POST", writePath, noteBody("1"), "1"))
		executed(t, w.send(t, a, "POST", writePath, noteBody("2"), "2"))
		r := w.send(t, a, "POST", writePath, noteBody("3"), "3")
		testkit.Expect(t, r, 429, "rate_limited")
		retryAfter(t, r)
		testkit.Expect(t, w.send(t, a, "POST", "/conformance", echoBody, "4"), 200, "")
		r = w.send(t, a, "POST", "/write-admission", []byte(`{}`), "5")
		testkit.Expect(t, r, 200, "")
		if m := r.JSON(t); m["admitted"] != false {
			t.Fatalf("write-admission: %s", r.Body)
		}
		rowsOf(t, w, 2)
	})
}

// TestLimitWriteAdmissionUncounted: write-admission is not counted against the request limit, and
// answers 200 (reporting the limit) rather than 429 once the limit is used up.
func TestLimitWriteAdmissionUncounted(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, dialect string) {
		w := newWorld(t, dialect, func(c *sigv1.Config) { c.AttemptsPerWindow = 2 })
		a := w.newAgent(t, "asker")
		for i := range 5 {
			r := w.send(t, a, "POST", "/write-admission", []byte(`{}`), "q"+itoa(i))
			testkit.Expect(t, r, 200, "")
			if m := r.JSON(t); m["admitted"] != true {
				t.Fatalf("write-admission %d: %s", i, r.Body)
			}
		}
		if h := windowHits(t, w.db); h != 0 {
			t.Fatalf("write-admission counted %d hits", h)
		}
		testkit.Expect(t, w.send(t, a, "POST", "/conformance", echoBody, "c1"), 200, "")
		testkit.Expect(t, w.send(t, a, "POST", "/conformance", echoBody, "c2"), 200, "")
		testkit.Expect(t, w.send(t, a, "POST", "/conformance", echoBody, "c3"), 429, "rate_limited")
		r := w.send(t, a, "POST", "/write-admission", []byte(`{}`), "q-last")
		testkit.Expect(t, r, 200, "")
		b, _ := r.JSON(t)["blocked_by"].(map[string]any)
		if b["code"] != "rate_limited" || b["status"] != float64(429) {
			t.Fatalf("write-admission after the limit: %s", r.Body)
		}
	})
}

// TestLimitFailedAuthPerAddress (scenario 42): requests failing authentication are limited per client
// address: the 4th of 3 allowed gets 429 instead of 401; another address still gets 401. The address
// is the connection's: the engine trusts no proxy, so X-Forwarded-For and X-Real-IP change nothing.
// A valid request from the limited address is not affected.
func TestLimitFailedAuthPerAddress(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, dialect string) {
		w := newWorld(t, dialect, func(c *sigv1.Config) { c.FailedAuthPerWindow = 3 })
		a := w.newAgent(t, "victim")
		forger := forger(w, a)
		const bad, other = "203.0.113.7:1234", "198.51.100.9:4321"
		n := 0
		next := func() int { n++; return n }
		for range 3 {
			testkit.Expect(t, w.serve(fromKey(t, forger, bad, next())), 401, "signature_mismatch")
		}
		r := w.serve(fromKey(t, forger, bad, next()))
		testkit.Expect(t, r, 429, "rate_limited")
		retryAfter(t, r)
		testkit.Expect(t, w.serve(fromKey(t, forger, other, next())), 401, "signature_mismatch")

		for _, h := range []map[string]string{
			{"X-Forwarded-For": "198.51.100.200"},
			{"X-Forwarded-For": "198.51.100.201, 198.51.100.202"},
			{"X-Real-IP": "198.51.100.203"},
			{"X-Forwarded-For": "192.0.2.99", "X-Real-IP": "192.0.2.98", "Forwarded": "for=192.0.2.97"},
		} {
			req := fromKey(t, forger, bad, next())
			for k, v := range h {
				req.Header.Set(k, v)
			}
			testkit.Expect(t, w.serve(req), 429, "rate_limited")
		}
		// Spoofing the limited address from elsewhere does not borrow its count either.
		req := fromKey(t, forger, other, next())
		req.Header.Set("X-Forwarded-For", "203.0.113.7")
		testkit.Expect(t, w.serve(req), 401, "signature_mismatch")

		testkit.Expect(t, w.serve(fromKey(t, a, bad, next())), 200, "")
		w.clock.Add(w.cfg.RateWindow)
		testkit.Expect(t, w.serve(fromKey(t, forger, bad, next())), 401, "signature_mismatch")
	})
}

// TestLimitRefusedWriteLeavesKeyFree: a write refused with 429 inserts nothing, keeps no claim, and its
// Idempotency-Key runs normally after the window.
func TestLimitRefusedWriteLeavesKeyFree(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, dialect string) {
		w := newWorld(t, dialect, func(c *sigv1.Config) { c.WritesPerWindow = 1 })
		a := w.newAgent(t, "patient")
		executed(t, w.send(t, a, "POST", writePath, noteBody("first"), "k1"))
		testkit.Expect(t, w.send(t, a, "POST", writePath, noteBody("second"), "k2"), 429, "rate_limited")
		rowsOf(t, w, 1)
		var n int64
		if err := w.db.Table("sigv1_idempotency").Where("idem_key = ?", "k2").Count(&n).Error; err != nil || n != 0 {
			t.Fatalf("the refused write's key: %d rows, %v", n, err)
		}
		w.clock.Add(w.cfg.RateWindow)
		executed(t, w.send(t, a, "POST", writePath, noteBody("second"), "k2"))
		rowsOf(t, w, 2)
	})
}

// TestLimitStoreUnavailableFailsClosed (scenario 41): when the limiter's table cannot be used, the
// guard fails closed: a valid request that needs a count gets 503 not_ready with Retry-After (never
// 500, never let through uncounted), and a write inserts nothing. Counting failed authentications is
// best-effort: a request with a bad signature still gets its 401 (it is refused either way).
func TestLimitStoreUnavailableFailsClosed(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, dialect string) {
		w := newWorld(t, dialect)
		a := w.newAgent(t, "storeless")
		testkit.Expect(t, w.send(t, a, "POST", "/conformance", echoBody, "before"), 200, "")
		if err := w.db.Exec("DROP TABLE sigv1_rate_windows").Error; err != nil {
			t.Fatal(err)
		}
		r := w.send(t, a, "POST", "/conformance", echoBody, "after")
		testkit.Expect(t, r, 503, "not_ready")
		retryAfter(t, r)
		r = w.send(t, a, "POST", writePath, noteBody("uncounted"), "w")
		testkit.Expect(t, r, 503, "not_ready")
		retryAfter(t, r)
		rowsOf(t, w, 0)
		testkit.Expect(t, w.serve(signed(t, forger(w, a), "POST", "/conformance", echoBody, "forged")), 401, "signature_mismatch")
		malformed := signed(t, a, "POST", "/conformance", echoBody, "malformed")
		malformed.Header.Set(sigv1.HeaderNonce, "short")
		testkit.Expect(t, w.serve(malformed), 400, "malformed_signature_headers")
	})
}

// TestLimitStoreUnavailableWriteAdmissionNot500 (scenario 41): write-admission reads the limiter's
// table too (Peek); when it cannot, it must answer like the guard, 503 not_ready with Retry-After (its
// documented problems list no 500), not 500 internal_error.
func TestLimitStoreUnavailableWriteAdmissionNot500(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, dialect string) {
		w := newWorld(t, dialect)
		a := w.newAgent(t, "storeless-asker")
		if err := w.db.Exec("DROP TABLE sigv1_rate_windows").Error; err != nil {
			t.Fatal(err)
		}
		r := w.send(t, a, "POST", "/write-admission", []byte(`{}`), "adm")
		testkit.Expect(t, r, 503, "not_ready")
		retryAfter(t, r)
	})
}

// TestLimitPruneKeepsLongWindows: the pruner, which runs with the guard's 1-minute window, keeps another
// module's 1-hour window (port.Limits) until twice its own length has passed, so its count is not reset
// early; a 1-minute window of the same time is pruned.
func TestLimitPruneKeepsLongWindows(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, dialect string) {
		w := newWorld(t, dialect)
		ctx := context.Background()
		t0 := w.clock.Now()
		for _, hit := range []struct {
			bucket string
			window time.Duration
		}{{"test:hour", time.Hour}, {"test:hour", time.Hour}, {"test:minute", time.Minute}} {
			if ok, _, err := w.limiter.Take(ctx, hit.bucket, 2, hit.window, t0); err != nil || !ok {
				t.Fatalf("a hit within the limit on %s: %v, %v", hit.bucket, ok, err)
			}
		}
		later := t0.Add(5 * time.Minute)
		n, err := w.limiter.Prune(ctx, w.cfg.RateWindow, later)
		if err != nil || n != 1 {
			t.Fatalf("pruned %d, %v; want the 1-minute window only", n, err)
		}
		for bucket, want := range map[string]int64{"test:hour": 1, "test:minute": 0} {
			var rows int64
			if err := w.db.Table("sigv1_rate_windows").Where("bucket = ?", bucket).Count(&rows).Error; err != nil || rows != want {
				t.Errorf("%s: %d rows, %v; want %d", bucket, rows, err, want)
			}
		}
		if ok, retry, err := w.limiter.Take(ctx, "test:hour", 2, time.Hour, later); err != nil || ok || retry != 55*60 {
			t.Fatalf("the third hit in the hour: ok %v, retry after %d, %v; want refused for 3300 s", ok, retry, err)
		}
		// The hour's window goes once twice its length has passed.
		if n, err := w.limiter.Prune(ctx, w.cfg.RateWindow, t0.Add(2*time.Hour)); err != nil || n != 1 {
			t.Fatalf("pruned %d, %v at the end; want the 1-hour window", n, err)
		}
	})
}
