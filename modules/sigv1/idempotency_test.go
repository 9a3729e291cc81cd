package sigv1_test

// Tests of nonces (replays, reuse after the window, pruning) and of Idempotency-Keys (WIRE.md section
// 2; reliability.md section 8 scenarios 7, 9, 18, 19, 20, 24, 25).

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/svcforum/svc/contracts/plugin"
	"github.com/svcforum/svc/database"
	"github.com/svcforum/svc/database/dbtest"
	"github.com/svcforum/svc/modules/sigv1"
	"github.com/svcforum/svc/sdk/signer"
	"github.com/svcforum/svc/testkit"
)

// netSend signs a POST to path as a and sends it to the server at base; it never calls t.Fatal, so
// goroutines may use it. hdr adds unsigned headers.
func netSend(client *http.Client, base string, a agent, path string, body []byte, idem string, hdr map[string]string) (testkit.Result, error) {
	req, err := http.NewRequest(http.MethodPost, base+plugin.AgentPrefix+path, bytes.NewReader(body))
	if err != nil {
		return testkit.Result{}, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set(sigv1.HeaderIdempotencyKey, idem)
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	if err := a.Signer.Sign(req); err != nil {
		return testkit.Result{}, err
	}
	return netDo(client, req)
}

// netDo sends req and reads the response as serveOn does.
func netDo(client *http.Client, req *http.Request) (testkit.Result, error) {
	resp, err := client.Do(req)
	if err != nil {
		return testkit.Result{}, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return testkit.Result{}, err
	}
	r := testkit.Result{Status: resp.StatusCode, Header: resp.Header, Body: b}
	if resp.Header.Get("Content-Type") == "application/problem+json" {
		var p struct{ Code string }
		_ = json.Unmarshal(b, &p)
		r.Code = p.Code
	}
	return r, nil
}

// hold sends a write as a with body and Idempotency-Key key that stays open inside its transaction
// until release, and returns once its claim is running; done delivers its answer.
func hold(t *testing.T, w *world, a agent, body []byte, key string) (release func(), done <-chan testkit.Result) {
	t.Helper()
	first := signed(t, a, "POST", writePath, body, key)
	first.Header.Set("X-Test-Wait", "hold-"+key)
	var once sync.Once
	release = func() { once.Do(func() { w.writes.open("hold-" + key) }) }
	t.Cleanup(release)
	out := make(chan testkit.Result, 1)
	go func() { out <- w.serve(first) }()
	waitRunning(t, w, a.AgentID, key)
	return release, out
}

// waitRunning waits until agentID holds a running claim on key.
func waitRunning(t testing.TB, w *world, agentID, key string) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for time.Now().Before(deadline) {
		var n int64
		if err := w.db.Table("sigv1_idempotency").Where("agent_id = ? AND idem_key = ? AND state = ?", agentID, key, "running").Count(&n).Error; err != nil {
			t.Fatal(err)
		}
		if n == 1 {
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Fatalf("no running claim of %q appeared", key)
}

// writeFingerprint is the fingerprint of a POST to the test write route with body.
func writeFingerprint(body []byte) string {
	return sigv1.Fingerprint(http.MethodPost, plugin.AgentPrefix+writePath, sigv1.BodySHA256(body))
}

// replayed fails unless r is a replay of orig: same status and body, byte for byte, and the header.
func replayed(t testing.TB, r, orig testkit.Result) {
	t.Helper()
	if r.Status != orig.Status || !bytes.Equal(r.Body, orig.Body) {
		t.Fatalf("replay %d %s, want %d %s", r.Status, r.Body, orig.Status, orig.Body)
	}
	if got := r.Header.Get(sigv1.HeaderReplayed); got != "true" {
		t.Fatalf("%s: %q, want true", sigv1.HeaderReplayed, got)
	}
	if r.Header.Get("Content-Type") != orig.Header.Get("Content-Type") {
		t.Fatalf("Content-Type %q, original %q", r.Header.Get("Content-Type"), orig.Header.Get("Content-Type"))
	}
}

// executed fails unless r is a fresh 201 (not a replay).
func executed(t testing.TB, r testkit.Result) {
	t.Helper()
	testkit.Expect(t, r, 201, "")
	if v := r.Header.Values(sigv1.HeaderReplayed); len(v) != 0 {
		t.Fatalf("a fresh execution carries %s: %v", sigv1.HeaderReplayed, v)
	}
}

// onPostgres runs f on PostgreSQL only: there, a write held open inside its transaction leaves other
// requests running. SQLite serialises writers, so a held write blocks every other request's nonce; the
// held-claim variants of these tests cover SQLite.
func onPostgres(t *testing.T, f func(t *testing.T, dialect string)) {
	t.Helper()
	t.Run(database.Postgres, func(t *testing.T) { f(t, database.Postgres) })
}

// --- Nonces ---

// TestNonceExactReplayRefused (scenario 7): the exact bytes of a signed write, sent again, get 409
// nonce_replayed on the same node, on a second node on the same database, and on the other channel;
// the write ran once.
func TestNonceExactReplayRefused(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, dialect string) {
		w := newWorld(t, dialect)
		a := w.newAgent(t, "replayed")
		again := replayable(t, a, "POST", writePath, noteBody("once"), "n1")
		executed(t, w.serve(again()))
		testkit.Expect(t, w.serve(again()), 409, "nonce_replayed")
		second := newNode(t, w.db, w.clock)
		testkit.Expect(t, second.serve(again()), 409, "nonce_replayed")
		testkit.Expect(t, testkit.Serve(second.private, again()), 409, "nonce_replayed")
		rowsOf(t, w, 1)

		// A read's nonce is remembered the same way, first seen on the second node.
		read := replayable(t, a, "POST", "/conformance", echoBody, "n2")
		testkit.Expect(t, second.serve(read()), 200, "")
		testkit.Expect(t, w.serve(read()), 409, "nonce_replayed")
	})
}

// TestNonceConcurrentReplayAcrossNodes: 20 copies of one signed write sent at once, over the network
// to two nodes on one database: exactly one runs, the others get 409 nonce_replayed.
func TestNonceConcurrentReplayAcrossNodes(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, dialect string) {
		w := newWorld(t, dialect)
		a := w.newAgent(t, "raced")
		second := newNode(t, w.db, w.clock)
		servers := []*httptest.Server{httptest.NewServer(w.engine), httptest.NewServer(second.engine)}
		for _, s := range servers {
			defer s.Close()
		}
		body := noteBody("raced")
		template := signed(t, a, "POST", writePath, body, "race")

		const n = 20
		results := make([]testkit.Result, n)
		errs := make([]error, n)
		start := make(chan struct{})
		var wg sync.WaitGroup
		for i := range n {
			wg.Go(func() {
				req, err := http.NewRequest(http.MethodPost, servers[i%2].URL+plugin.AgentPrefix+writePath, bytes.NewReader(body))
				if err != nil {
					errs[i] = err
					return
				}
				req.Header = template.Header.Clone()
				<-start
				results[i], errs[i] = netDo(servers[i%2].Client(), req)
			})
		}
		close(start)
		wg.Wait()
		created := 0
		for i, r := range results {
			switch {
			case errs[i] != nil:
				t.Fatalf("request %d: %v", i, errs[i])
			case r.Status == 201:
				created++
			case r.Status == 409 && r.Code == "nonce_replayed":
			default:
				t.Errorf("request %d: %d %q %s", i, r.Status, r.Code, r.Body)
			}
		}
		if created != 1 {
			t.Errorf("%d of %d copies ran, want exactly 1", created, n)
		}
		rowsOf(t, w, 1)
	})
}

// TestNonceBurnedByFailedWrite (scenario 9): a write that fails inside its transaction (rolled back,
// 500) still used its nonce, committed on its own: the same signed bytes sent again (even without the
// failure) get 409 and do not run. A re-signed retry with the same Idempotency-Key runs.
func TestNonceBurnedByFailedWrite(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, dialect string) {
		w := newWorld(t, dialect)
		a := w.newAgent(t, "failer")
		again := replayable(t, a, "POST", writePath, noteBody("fails"), "f1")
		failing := again()
		failing.Header.Set("X-Test-Fail", "1")
		testkit.Expect(t, w.serve(failing), 500, "internal_error")
		rowsOf(t, w, 0)
		testkit.Expect(t, w.serve(again()), 409, "nonce_replayed")
		testkit.Expect(t, newNode(t, w.db, w.clock).serve(again()), 409, "nonce_replayed")
		rowsOf(t, w, 0)
		executed(t, w.send(t, a, "POST", writePath, noteBody("fails"), "f1"))
		rowsOf(t, w, 1)
	})
}

// TestNonceReusableAfterWindow: a nonce is refused for 1800 s after it was seen (even freshly signed)
// and accepted again after that; nonces are per agent.
func TestNonceReusableAfterWindow(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, dialect string) {
		w := newWorld(t, dialect)
		const fixed = "AAECAwQFBgcICQoLDA0ODw"
		withFixed := func(a agent) agent {
			a.Signer = signer.New(a.AgentID, a.KeyID, a.Key, signer.WithClock(w.clock.Now), signer.WithNonces(func() string { return fixed }))
			return a
		}
		a := withFixed(w.newAgent(t, "reuser"))
		b := withFixed(w.newAgent(t, "other-reuser"))
		testkit.Expect(t, w.send(t, a, "POST", "/conformance", echoBody, "u1"), 200, "")
		testkit.Expect(t, w.send(t, b, "POST", "/conformance", echoBody, "u2"), 200, "") // another agent's nonce
		w.clock.Add(1000 * time.Second)
		testkit.Expect(t, w.send(t, a, "POST", "/conformance", echoBody, "u3"), 409, "nonce_replayed")
		w.clock.Add(799 * time.Second) // 1799 s after the first sighting
		testkit.Expect(t, w.send(t, a, "POST", writePath, noteBody("too soon"), "u4"), 409, "nonce_replayed")
		rowsOf(t, w, 0)
		w.clock.Add(2 * time.Second) // 1801 s
		testkit.Expect(t, w.send(t, a, "POST", writePath, noteBody("later"), "u5"), 201, "")
		testkit.Expect(t, w.send(t, a, "POST", writePath, noteBody("at once again"), "u6"), 409, "nonce_replayed")
		rowsOf(t, w, 1)
	})
}

// TestNoncePruneDeletesOnlyExpired: Nonces.Prune deletes the nonces seen longer than 1800 s ago and
// keeps the others, which are still refused.
func TestNoncePruneDeletesOnlyExpired(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, dialect string) {
		w := newWorld(t, dialect)
		a := w.newAgent(t, "pruned")
		ctx := context.Background()
		t0 := w.clock.Now()
		for _, r := range []struct {
			nonce string
			at    time.Time
		}{{"old-nonce-0123456789", t0}, {"new-nonce-0123456789", t0.Add(1000 * time.Second)}} {
			fresh, err := w.nonces.Record(ctx, a.AgentID, r.nonce, r.at)
			if err != nil || !fresh {
				t.Fatalf("record %s: %v %v", r.nonce, fresh, err)
			}
		}
		now := t0.Add(sigv1.NonceWindow + time.Second)
		n, err := w.nonces.Prune(ctx, now)
		if err != nil || n != 1 {
			t.Fatalf("pruned %d, %v; want 1", n, err)
		}
		if c := testkit.CountRows(t, w.db, "sigv1_nonces", ""); c != 1 {
			t.Fatalf("%d nonces left, want 1", c)
		}
		if fresh, err := w.nonces.Record(ctx, a.AgentID, "new-nonce-0123456789", now); err != nil || fresh {
			t.Fatalf("a kept nonce is fresh again: %v %v", fresh, err)
		}
		if fresh, err := w.nonces.Record(ctx, a.AgentID, "old-nonce-0123456789", now); err != nil || !fresh {
			t.Fatalf("a pruned nonce is not fresh: %v %v", fresh, err)
		}
		if n, err := w.nonces.Prune(ctx, now); err != nil || n != 0 {
			t.Fatalf("second prune: %d, %v", n, err)
		}
	})
}

// TestPrunerPruneDeletesExpiredState: one pass of the pruner deletes the nonces, stored responses and
// rate windows that expired, keeps the current ones, and logs no warning.
func TestPrunerPruneDeletesExpiredState(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, dialect string) {
		w := newWorld(t, dialect)
		a := w.newAgent(t, "pruner")
		var buf bytes.Buffer
		var mu sync.Mutex
		log := slog.New(slog.NewTextHandler(lockedWriter{&mu, &buf}, &slog.HandlerOptions{Level: slog.LevelDebug}))
		p := sigv1.NewPruner(w.cfg, w.clock, log, w.nonces, w.claims, w.limiter)

		old := w.send(t, a, "POST", writePath, noteBody("old"), "old-key")
		testkit.Expect(t, old, 201, "")
		w.clock.Add(sigv1.ResponseTTL + time.Second)
		testkit.Expect(t, w.send(t, a, "POST", writePath, noteBody("new"), "new-key"), 201, "")
		p.Prune(context.Background())

		for table, want := range map[string]int64{"sigv1_nonces": 1, "sigv1_idempotency": 1, "sigv1_rate_windows": 2} {
			if n := testkit.CountRows(t, w.db, table, ""); n != want {
				t.Errorf("%s: %d rows after pruning, want %d", table, n, want)
			}
		}
		mu.Lock()
		logged := buf.String()
		mu.Unlock()
		if strings.Contains(logged, "level=WARN") || !strings.Contains(logged, "msg=pruned") {
			t.Errorf("log:\n%s", logged)
		}
		// The key whose response was pruned runs again.
		executed(t, w.send(t, a, "POST", writePath, noteBody("old"), "old-key"))
		// Start prunes at once and Stop ends the loop.
		if err := p.Start(context.Background()); err != nil {
			t.Fatal(err)
		}
		if err := p.Stop(context.Background()); err != nil {
			t.Fatal(err)
		}
	})
}

type lockedWriter struct {
	mu *sync.Mutex
	w  io.Writer
}

func (l lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// --- Idempotency-Keys ---

// TestIdempotentReplaySameBody (scenarios 18, 25): a new signed request with the same key and body gets
// the stored status and body byte for byte with Idempotent-Replayed: true, on either node; the write
// ran once.
func TestIdempotentReplaySameBody(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, dialect string) {
		w := newWorld(t, dialect)
		a := w.newAgent(t, "replayer")
		body := noteBody("exactly once ☃ <&>")
		orig := w.send(t, a, "POST", writePath, body, "same-key")
		executed(t, orig)
		replayed(t, w.send(t, a, "POST", writePath, body, "same-key"), orig)
		second := newNode(t, w.db, w.clock)
		replayed(t, second.send(t, a, "POST", writePath, body, "same-key"), orig)
		replayed(t, testkit.Serve(second.private, signed(t, a, "POST", writePath, body, "same-key")), orig)
		rowsOf(t, w, 1)
	})
}

// TestIdempotencyKeyConflictDifferentBody (scenario 19): same key, different body: 409
// idempotency_key_conflict, nothing runs; the first request still replays.
func TestIdempotencyKeyConflictDifferentBody(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, dialect string) {
		w := newWorld(t, dialect)
		a := w.newAgent(t, "conflicted")
		orig := w.send(t, a, "POST", writePath, noteBody("first"), "k")
		executed(t, orig)
		testkit.Expect(t, w.send(t, a, "POST", writePath, noteBody("second"), "k"), 409, "idempotency_key_conflict")
		testkit.Expect(t, w.send(t, a, "POST", writePath, noteBody("first "), "k"), 409, "idempotency_key_conflict")
		rowsOf(t, w, 1)
		replayed(t, w.send(t, a, "POST", writePath, noteBody("first"), "k"), orig)
	})
}

// TestIdempotencyInFlightLive: while the first request with a key runs (held inside its transaction),
// the same key gets 409 idempotency_request_in_flight with Retry-After: 1 (a different body: 409
// idempotency_key_conflict); the first then completes with 201 and a retry replays it.
func TestIdempotencyInFlightLive(t *testing.T) {
	onPostgres(t, func(t *testing.T, dialect string) {
		w := newWorld(t, dialect)
		a := w.newAgent(t, "inflight")
		body := noteBody("slow")
		release, done := hold(t, w, a, body, "busy")
		defer release()

		r := w.send(t, a, "POST", writePath, body, "busy")
		testkit.Expect(t, r, 409, "idempotency_request_in_flight")
		if got := r.Header.Get("Retry-After"); got != "1" {
			t.Fatalf("Retry-After %q, want 1", got)
		}
		memberOf(t, r, "retry_after_seconds", float64(1))
		testkit.Expect(t, newNode(t, w.db, w.clock).send(t, a, "POST", writePath, body, "busy"), 409, "idempotency_request_in_flight")
		testkit.Expect(t, w.send(t, a, "POST", writePath, noteBody("other"), "busy"), 409, "idempotency_key_conflict")

		release()
		orig := <-done
		executed(t, orig)
		replayed(t, w.send(t, a, "POST", writePath, body, "busy"), orig)
		rowsOf(t, w, 1)
	})
}

// TestIdempotencyHeldClaimInFlightThenLeaseExpires: a claim held by a request that never finishes (its
// process died) answers 409 in flight until its lease ends; then a retry takes the key over and runs.
func TestIdempotencyHeldClaimInFlightThenLeaseExpires(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, dialect string) {
		w := newWorld(t, dialect)
		a := w.newAgent(t, "held")
		body := noteBody("held")
		if _, err := w.claims.Claim(context.Background(), a.AgentID, "held-key", writeFingerprint(body), w.clock.Now()); err != nil {
			t.Fatal(err)
		}
		r := w.send(t, a, "POST", writePath, body, "held-key")
		testkit.Expect(t, r, 409, "idempotency_request_in_flight")
		if got := r.Header.Get("Retry-After"); got != "1" {
			t.Fatalf("Retry-After %q, want 1", got)
		}
		w.clock.Add(w.cfg.IdempotencyLease - time.Second)
		testkit.Expect(t, w.send(t, a, "POST", writePath, body, "held-key"), 409, "idempotency_request_in_flight")
		rowsOf(t, w, 0)
		w.clock.Add(2 * time.Second)
		orig := w.send(t, a, "POST", writePath, body, "held-key")
		executed(t, orig)
		replayed(t, w.send(t, a, "POST", writePath, body, "held-key"), orig)
		rowsOf(t, w, 1)
	})
}

// TestIdempotencyCrashedClaimTakenOver: a running claim left in the table with its lease in the past
// (a crashed process) is taken over by the next request with the key, whatever its body.
func TestIdempotencyCrashedClaimTakenOver(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, dialect string) {
		w := newWorld(t, dialect)
		a := w.newAgent(t, "crashed")
		now := w.clock.Now().UnixMilli()
		insert := func(key string, fingerprint string) {
			t.Helper()
			err := w.db.Exec(`INSERT INTO sigv1_idempotency (agent_id, idem_key, fingerprint, token, state, lease_ms, created_ms, status, body)
VALUES (?, ?, ?, ?, 'running', ?, ?, 0, NULL)`, a.AgentID, key, fingerprint, "00000000-0000-4000-8000-000000000000", now-1, now-61_000).Error
			if err != nil {
				t.Fatal(err)
			}
		}
		body := noteBody("after the crash")
		insert("same", writeFingerprint(body))
		insert("other", writeFingerprint(noteBody("the crashed request's body")))
		executed(t, w.send(t, a, "POST", writePath, body, "same"))
		executed(t, w.send(t, a, "POST", writePath, body, "other"))
		rowsOf(t, w, 2)
		var states []string
		if err := w.db.Table("sigv1_idempotency").Order("idem_key").Pluck("state", &states).Error; err != nil {
			t.Fatal(err)
		}
		if len(states) != 2 || states[0] != "done" || states[1] != "done" {
			t.Fatalf("claim states %v", states)
		}
	})
}

// TestIdempotencyClaimLostRollsBackTheWrite: when a write outlives its claim's lease and a retry takes
// the key over, the first write cannot complete its claim (errClaimLost) and rolls back: one row, and
// the key replays the retry's response.
func TestIdempotencyClaimLostRollsBackTheWrite(t *testing.T) {
	onPostgres(t, func(t *testing.T, dialect string) {
		w := newWorld(t, dialect)
		a := w.newAgent(t, "overtaken")
		body := noteBody("overtaken")
		release, done := hold(t, w, a, body, "lease")
		defer release()

		w.clock.Add(w.cfg.IdempotencyLease + time.Second)
		retry := w.send(t, a, "POST", writePath, body, "lease")
		executed(t, retry)
		release()
		lost := <-done
		t.Logf("the overtaken write answered %d %q", lost.Status, lost.Code)
		if lost.Status >= 200 && lost.Status < 300 {
			t.Fatalf("the write whose claim was taken over succeeded: %d %s", lost.Status, lost.Body)
		}
		// The request that took the key over is the one in flight: retry to get its response.
		testkit.Expect(t, lost, 409, "idempotency_request_in_flight")
		if lost.Header.Get("Retry-After") != "1" {
			t.Fatalf("Retry-After %q", lost.Header.Get("Retry-After"))
		}
		rowsOf(t, w, 1)
		replayed(t, w.send(t, a, "POST", writePath, body, "lease"), retry)
		rowsOf(t, w, 1)
	})
}

// TestIdempotencyFailedWriteFreesKey (scenario 24): a write that fails and rolls back stores nothing;
// the corrected retry with the same key runs, once.
func TestIdempotencyFailedWriteFreesKey(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, dialect string) {
		w := newWorld(t, dialect)
		a := w.newAgent(t, "retrier")
		body := noteBody("retry me")
		req := signed(t, a, "POST", writePath, body, "retry")
		req.Header.Set("X-Test-Fail", "1")
		testkit.Expect(t, w.serve(req), 500, "internal_error")
		rowsOf(t, w, 0)
		if n := testkit.CountRows(t, w.db, "sigv1_idempotency", ""); n != 0 {
			t.Fatalf("a failed write left %d idempotency rows", n)
		}
		orig := w.send(t, a, "POST", writePath, body, "retry")
		executed(t, orig)
		replayed(t, w.send(t, a, "POST", writePath, body, "retry"), orig)
		rowsOf(t, w, 1)

		// A failure with a different body does not hold the key either.
		req = signed(t, a, "POST", writePath, noteBody("wrong"), "retry-2")
		req.Header.Set("X-Test-Fail", "1")
		testkit.Expect(t, w.serve(req), 500, "internal_error")
		executed(t, w.send(t, a, "POST", writePath, noteBody("right"), "retry-2"))
		rowsOf(t, w, 2)
	})
}

// TestIdempotencyStoredResponseExpires: a stored response is replayed for 24 h; after that the key
// runs again (a new 201, no Idempotent-Replayed).
func TestIdempotencyStoredResponseExpires(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, dialect string) {
		w := newWorld(t, dialect)
		a := w.newAgent(t, "expirer")
		body := noteBody("daily")
		orig := w.send(t, a, "POST", writePath, body, "daily")
		executed(t, orig)
		w.clock.Add(sigv1.ResponseTTL - time.Second)
		replayed(t, w.send(t, a, "POST", writePath, body, "daily"), orig)
		w.clock.Add(2 * time.Second) // 24 h + 1 s
		executed(t, w.send(t, a, "POST", writePath, body, "daily"))
		rowsOf(t, w, 2)
	})
}

// TestIdempotencyKeyScopedPerAgent: two agents (even of one organisation) using the same key both run.
func TestIdempotencyKeyScopedPerAgent(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, dialect string) {
		w := newWorld(t, dialect)
		a := w.newAgent(t, "scoped-a")
		b := w.agentIn(t, a.OrgID, "scoped-b")
		c := w.newAgent(t, "scoped-c")
		body := noteBody("shared key")
		for _, ag := range []agent{a, b, c} {
			executed(t, w.send(t, ag, "POST", writePath, body, "shared"))
		}
		rowsOf(t, w, 3)
	})
}

// TestIdempotencyConcurrentAcrossNodes (scenario 20): 50 concurrent requests with one key and body, each
// freshly signed, split across two nodes served over the network: exactly one runs; every other answer
// is its replay or 409 in flight; one row.
func TestIdempotencyConcurrentAcrossNodes(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, dialect string) {
		w := newWorld(t, dialect)
		a := w.newAgent(t, "stampede")
		second := newNode(t, w.db, w.clock)
		servers := []*httptest.Server{httptest.NewServer(w.engine), httptest.NewServer(second.engine)}
		for _, s := range servers {
			defer s.Close()
		}
		body := noteBody("stampede")
		const n = 50
		results := make([]testkit.Result, n)
		errs := make([]error, n)
		start := make(chan struct{})
		var wg sync.WaitGroup
		for i := range n {
			wg.Go(func() {
				<-start
				s := servers[i%2]
				results[i], errs[i] = netSend(s.Client(), s.URL, a, writePath, body, "one-key", nil)
			})
		}
		close(start)
		wg.Wait()

		var originals []testkit.Result
		replays, inFlight := 0, 0
		for i, r := range results {
			switch {
			case errs[i] != nil:
				t.Fatalf("request %d: %v", i, errs[i])
			case r.Status == 201 && r.Header.Get(sigv1.HeaderReplayed) == "":
				originals = append(originals, r)
			case r.Status == 201 && r.Header.Get(sigv1.HeaderReplayed) == "true":
				replays++
			case r.Status == 409 && r.Code == "idempotency_request_in_flight":
				inFlight++
			default:
				t.Errorf("request %d: %d %q %s", i, r.Status, r.Code, r.Body)
			}
		}
		if len(originals) != 1 {
			t.Fatalf("%d requests ran, want exactly 1 (replays %d, in flight %d)", len(originals), replays, inFlight)
		}
		for i, r := range results {
			if r.Status == 201 && !bytes.Equal(r.Body, originals[0].Body) {
				t.Errorf("request %d: body %s, original %s", i, r.Body, originals[0].Body)
			}
		}
		t.Logf("%s: 1 ran, %d replays, %d in flight", dialect, replays, inFlight)
		rowsOf(t, w, 1)
		if n := testkit.CountRows(t, w.db, "sigv1_idempotency", ""); n != 1 {
			t.Fatalf("%d idempotency rows", n)
		}
		// After the storm the key replays on both nodes.
		for _, s := range servers {
			r, err := netSend(s.Client(), s.URL, a, writePath, body, "one-key", nil)
			if err != nil {
				t.Fatal(err)
			}
			replayed(t, r, originals[0])
		}
	})
}

// TestIdempotencyConcurrentWhileFirstHeld (scenario 20, in flight): the same storm while the request that
// claimed the key is held inside its transaction: the 49 others all get 409 in flight with Retry-After
// 1; once the first completes, retries on both nodes replay it; one row.
func TestIdempotencyConcurrentWhileFirstHeld(t *testing.T) {
	onPostgres(t, func(t *testing.T, dialect string) {
		w := newWorld(t, dialect)
		a := w.newAgent(t, "held-storm")
		second := newNode(t, w.db, w.clock)
		servers := []*httptest.Server{httptest.NewServer(w.engine), httptest.NewServer(second.engine)}
		for _, s := range servers {
			defer s.Close()
		}
		var once sync.Once
		release := func() { once.Do(func() { w.writes.open("storm"); second.writes.open("storm") }) }
		defer release()
		body := noteBody("held storm")
		hold := map[string]string{"X-Test-Wait": "storm"}
		const n = 50
		results := make([]testkit.Result, n)
		errs := make([]error, n)
		var wg, others sync.WaitGroup
		others.Add(n - 1)
		claimed := make(chan int, n)
		start := make(chan struct{})
		for i := range n {
			wg.Go(func() {
				<-start
				s := servers[i%2]
				results[i], errs[i] = netSend(s.Client(), s.URL, a, writePath, body, "storm-key", hold)
				if errs[i] == nil && results[i].Status == 409 {
					others.Done()
				} else {
					claimed <- i
				}
			})
		}
		close(start)
		waited := make(chan struct{})
		go func() { others.Wait(); close(waited) }()
		select {
		case <-waited:
		case i := <-claimed:
			release()
			wg.Wait()
			t.Fatalf("request %d ended before the others were refused: %d %q %s, %v", i, results[i].Status, results[i].Code, results[i].Body, errs[i])
		case <-time.After(30 * time.Second):
			release()
			t.Fatal("the other 49 requests were not all refused within 30 s")
		}
		release()
		wg.Wait()
		var orig testkit.Result
		ran := 0
		for i, r := range results {
			switch {
			case errs[i] != nil:
				t.Fatalf("request %d: %v", i, errs[i])
			case r.Status == 201:
				ran++
				orig = r
				executed(t, r)
			case r.Status == 409 && r.Code == "idempotency_request_in_flight" && r.Header.Get("Retry-After") == "1":
			default:
				t.Errorf("request %d: %d %q %s", i, r.Status, r.Code, r.Body)
			}
		}
		if ran != 1 {
			t.Fatalf("%d requests ran, want 1", ran)
		}
		for _, s := range servers {
			r, err := netSend(s.Client(), s.URL, a, writePath, body, "storm-key", nil)
			if err != nil {
				t.Fatal(err)
			}
			replayed(t, r, orig)
		}
		rowsOf(t, w, 1)
	})
}
