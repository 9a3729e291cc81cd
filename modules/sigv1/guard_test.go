package sigv1_test

import (
	"bytes"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/svcforum/svc/contracts/plugin"
	"github.com/svcforum/svc/modules/sigv1"
	"github.com/svcforum/svc/testkit"

	"github.com/svcforum/svc/database/dbtest"
)

func TestConformanceProvesTheIdentity(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, dialect string) {
		w := newWorld(t, dialect)
		a := w.newAgent(t, "conformer")
		r := w.send(t, a, http.MethodPost, "/conformance", []byte(`{"echo":"héllo \u2603"}`), "k1")
		testkit.Expect(t, r, 200, "")
		got := r.JSON(t)
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

// The conformance echo is free text that the answer repeats: a private key in it is refused (422
// private_key_refused at /echo) and never echoed back.
func TestConformanceRefusesAKeyInTheEcho(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, dialect string) {
		w := newWorld(t, dialect)
		a := w.newAgent(t, "conformer")
		r := w.send(t, a, http.MethodPost, "/conformance", []byte(`{"echo":"-----BEGIN PRIVATE KEY-----\nMC4CAQAwBQYDK2VwBCIEIAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA\n-----END PRIVATE KEY-----"}`), "k1")
		testkit.Expect(t, r, 422, "private_key_refused")
		if p, _ := r.JSON(t)["pointer"].(string); p != "/echo" || bytes.Contains(r.Body, []byte("MC4CAQAw")) {
			t.Fatalf("pointer %q, body %s", p, r.Body)
		}
	})
}

// A correctly signed request from the future is refused as stale, and its nonce is recorded from its
// timestamp on: the same bytes, once the server's clock has caught up, are a replay, not a request.
func TestFutureRequestBurnsItsNonce(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, dialect string) {
		w := newWorld(t, dialect)
		a := w.newAgent(t, "time-traveller")
		now := w.clock.Now()
		w.clock.Set(now.Add(400 * time.Second))
		req := signed(t, a, http.MethodPost, writePath, []byte(`{"note":"early"}`), "early")
		w.clock.Set(now)
		testkit.Expect(t, w.serve(req), 401, "stale_timestamp")

		w.clock.Set(now.Add(200 * time.Second)) // the timestamp is fresh now
		req.Body = io.NopCloser(bytes.NewReader([]byte(`{"note":"early"}`)))
		testkit.Expect(t, w.serve(req), 409, "nonce_replayed")
		if n := w.writes.count(t); n != 0 {
			t.Fatalf("%d rows written", n)
		}

		// A request from the past is not recorded (it can never become fresh), nor is a forged one
		// from the future: its nonce stays the victim's.
		forged := signed(t, a, http.MethodPost, writePath, []byte(`{"note":"x"}`), "forged")
		forged.Header.Set(sigv1.HeaderTimestamp, strconv.FormatInt(now.Add(1000*time.Second).Unix(), 10))
		testkit.Expect(t, w.serve(forged), 401, "stale_timestamp")
		var n int64
		if err := w.db.Table("sigv1_nonces").Where("nonce = ?", forged.Header.Get(sigv1.HeaderNonce)).Count(&n).Error; err != nil || n != 0 {
			t.Fatalf("a forged request's nonce recorded (%d, %v)", n, err)
		}
	})
}

// A write that panics frees its Idempotency-Key: the retry runs at once instead of waiting for the
// lease.
func TestPanickingWriteFreesItsKey(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, dialect string) {
		w := newWorld(t, dialect)
		a := w.newAgent(t, "panicker")
		req := signed(t, a, http.MethodPost, writePath, []byte(`{"note":"boom"}`), "boom")
		req.Header.Set("X-Test-Panic", "1")
		if r := w.serve(req); r.Status != 500 {
			t.Fatalf("panic answered %d", r.Status)
		}
		testkit.Expect(t, w.send(t, a, http.MethodPost, writePath, []byte(`{"note":"boom"}`), "boom"), 201, "")
		if n := w.writes.count(t); n != 1 {
			t.Fatalf("%d rows", n)
		}
	})
}

// A write route that answers 2xx without a planned write (database.Write) stores nothing, so a retry would run it again: the
// guard says so in the log, as an error.
func TestWriteWithoutPortWriteIsLogged(t *testing.T) {
	w := newWorld(t, "sqlite")
	a := w.newAgent(t, "careless")
	var logs bytes.Buffer
	g := sigv1.NewGuard(w.cfg, w.clock, slog.New(slog.NewTextHandler(&logs, nil)), w.registry, w.switches, w.nonces, w.limiter, w.claims)
	e := mountAgent(t, plugin.ChannelEdge, g, []plugin.AgentRoute{{Method: http.MethodPost, Path: "/careless", Write: true,
		Handlers: []gin.HandlerFunc{func(c *gin.Context) { c.Status(http.StatusCreated) }}}})
	if r := testkit.Serve(e, signed(t, a, http.MethodPost, "/careless", []byte(`{}`), "k")); r.Status != 201 {
		t.Fatalf("%d", r.Status)
	}
	if !strings.Contains(logs.String(), "level=ERROR") || !strings.Contains(logs.String(), "without storing its response") {
		t.Fatalf("log: %s", logs.String())
	}
}
