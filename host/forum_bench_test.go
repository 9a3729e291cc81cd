package host

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"database/sql"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"
	"go.uber.org/fx"
	"gorm.io/gorm"

	"github.com/svcforum/svc/contracts/plugin"
	"github.com/svcforum/svc/database"
	"github.com/svcforum/svc/database/dbtest"
	"github.com/svcforum/svc/modules/arena"
	"github.com/svcforum/svc/modules/forum"
	"github.com/svcforum/svc/modules/sigv1"
	"github.com/svcforum/svc/sdk/signer"
)

// forumBench is the whole service (on PostgreSQL, or SQLite for newServiceBench) with one agent, a funded wallet, a category and a
// thread, its engines served in process.
type forumBench struct {
	rt       *roundTrips
	db       *gorm.DB
	agent    *gin.Engine
	public   *gin.Engine
	signer   *signer.Signer
	key      ed25519.PrivateKey
	agentID  string
	orgID    string
	threadID string
	matches  *arena.Matches
	ls       *Listeners
	app      *fx.App
	url      string // the database's
}

func newForumBench(b testing.TB, tweaks ...func(*Config)) *forumBench {
	b.Helper()
	return newServiceBench(b, dbtest.URL(b, database.Postgres), tweaks...)
}

func (fb *forumBench) request(b testing.TB, path, key, body string) *http.Request {
	req := httptest.NewRequestWithContext(counted(context.Background()), http.MethodPost, plugin.AgentPrefix+path, bytes.NewReader([]byte(body)))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Idempotency-Key", key)
	if err := fb.signer.Sign(req); err != nil {
		b.Fatal(err)
	}
	return req
}

func (fb *forumBench) post(b testing.TB, path, key, body string) *httptest.ResponseRecorder {
	rec := httptest.NewRecorder()
	fb.agent.ServeHTTP(rec, fb.request(b, path, key, body))
	return rec
}

// benchSettings lifts the rate limits, which a benchmark would otherwise hit.
type benchSettings struct{ plugin.Settings }

func (s benchSettings) Int(name string) int {
	switch name {
	case "sigv1-attempts-per-window", "sigv1-writes-per-window":
		return 1 << 30
	}
	return s.Settings.Int(name)
}

// BenchmarkCreateReply measures signed create_reply requests on PostgreSQL through the whole service
// (routing, guard, verification, schema, content policy, the write with its charge and stored response)
// against the write's essential statements sent as one batch (impl=baseline, essentialReply): the
// nonce, the debit, the usage event, the ledger row, the reply and the thread's count, in one round
// trip and one commit, without HTTP, signatures or Go logic. Every request is a fresh one: its own
// nonce and its own Idempotency-Key, never a replay; requests are built and signed before the timer
// starts. Beside the rate, each side reports its round trips and commits per request, counted by a
// pgx tracer (roundTrips).
func BenchmarkCreateReply(b *testing.B) {
	fb := newForumBench(b)
	body := func(i int) string {
		return fmt.Sprintf(`{"thread_id":%q,"body_markdown":"Reply number %d.","billing":{"pricing_version":"bench","max_credit_cost":100}}`, fb.threadID, i)
	}
	b.Run("impl=baseline", func(b *testing.B) {
		ctx := counted(context.Background())
		sqlDB, err := fb.db.DB()
		if err != nil {
			b.Fatal(err)
		}
		conn, err := sqlDB.Conn(ctx)
		if err != nil {
			b.Fatal(err)
		}
		defer conn.Close()
		b.ReportAllocs()
		fb.rt.reset()
		start := time.Now()
		for i := 0; i < b.N; i++ {
			if err := essentialReply(ctx, conn, fb, body(i)); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "req/s")
		fb.reportTrips(b)
	})
	b.Run("impl=svc", func(b *testing.B) {
		run := uuid.NewString() // each run of this function (one per b.N tried) has keys of its own
		reqs := make([]*http.Request, b.N)
		for i := range reqs {
			reqs[i] = fb.request(b, forum.RepliesPath, fmt.Sprintf("bench-%s-%d", run, i), body(i))
		}
		b.ReportAllocs()
		fb.rt.reset()
		b.ResetTimer()
		start := time.Now()
		for i := 0; i < b.N; i++ {
			rec := httptest.NewRecorder()
			fb.agent.ServeHTTP(rec, reqs[i])
			if rec.Code != http.StatusOK || rec.Header().Get(sigv1.HeaderReplayed) != "" {
				b.Fatalf("%d (replayed %q) %s", rec.Code, rec.Header().Get(sigv1.HeaderReplayed), rec.Body)
			}
		}
		b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "req/s")
		fb.reportTrips(b)
	})
}

// reportTrips reports the round trips and commits per op counted since the last reset.
func (fb *forumBench) reportTrips(b *testing.B) {
	trips, commits, waited := fb.rt.report(b.N)
	b.ReportMetric(trips, "round-trips/op")
	b.ReportMetric(commits, "commits/op")
	b.ReportMetric(waited, "db-ms/op")
}

// essentialReply sends a reply's essential statements as one pgx batch on conn: one round trip, one
// implicit transaction. The debit cannot overdraw (its condition) and the ledger row reads the balance
// it left.
func essentialReply(ctx context.Context, conn *sql.Conn, fb *forumBench, body string) error {
	now := time.Now().UTC().Truncate(time.Microsecond)
	event, reply := uuid.NewString(), uuid.NewString()
	batch := &pgx.Batch{}
	batch.Queue(`INSERT INTO sigv1_nonces (agent_id, nonce, seen_ms) VALUES ($1, $2, $3)`, fb.agentID, uuid.NewString(), now.UnixMilli())
	batch.Queue(`UPDATE billing_wallets SET balance = balance - 1, updated_at = $1 WHERE org_id = $2 AND balance >= 1`, now, fb.orgID)
	batch.Queue(`INSERT INTO billing_usage_events (id, org_id, agent_id, operation, price, pricing_version, idempotency_key, resource_id, created_at)
VALUES ($1, $2, $3, 'create_reply', 1, 'bench', $4, $5, $6)`, event, fb.orgID, fb.agentID, uuid.NewString(), reply, now)
	batch.Queue(`INSERT INTO billing_ledger (id, org_id, kind, amount, balance_after, reason, usage_event_id, created_at)
SELECT $1::text, org_id, 'charge', -1, balance, 'create_reply', $3::text, $4::timestamptz FROM billing_wallets WHERE org_id = $2`, uuid.NewString(), fb.orgID, event, now)
	batch.Queue(`INSERT INTO forum_replies (id, thread_id, author_id, author_handle, body_markdown, intent, score, up, down, created_at)
VALUES ($1, $2, $3, 'bencher', $4, 'answer', 0, 0, 0, $5)`, reply, fb.threadID, fb.agentID, body, now)
	batch.Queue(`UPDATE forum_threads SET last_activity = $1, reply_count = reply_count + 1 WHERE id = $2 AND tombstoned_at IS NULL`, now, fb.threadID)
	return conn.Raw(func(dc any) error {
		return dc.(*stdlib.Conn).Conn().SendBatch(ctx, batch).Close()
	})
}

// BenchmarkConformance measures signed conformance requests on PostgreSQL through the whole service
// (the agent engine, the guard with its key lookup, nonce and rate limit, the endpoint) against a bare
// verifier (impl=baseline): a gin handler that checks the same request's Ed25519 signature over its
// canonical string with the key in hand and answers the same bytes, with no database. Each request is
// fresh (own nonce), signed before the timer starts.
func BenchmarkConformance(b *testing.B) {
	fb := newForumBench(b)
	const body = `{"echo":"hello, conformance"}`
	var answer []byte
	pub := fb.key.Public().(ed25519.PublicKey)
	bare := gin.New()
	bare.POST(plugin.AgentPrefix+sigv1.ConformancePath, func(c *gin.Context) {
		raw, err := io.ReadAll(c.Request.Body)
		if err != nil {
			c.AbortWithStatus(http.StatusBadRequest)
			return
		}
		env, err := sigv1.ParseHeaders(c.Request.Method, c.Request.RequestURI, c.Request.Header)
		if err != nil {
			c.AbortWithStatus(http.StatusBadRequest)
			return
		}
		env.BodySHA256 = sigv1.BodySHA256(raw)
		if !ed25519.Verify(pub, []byte(env.Canonical()), env.Signature) {
			c.AbortWithStatus(http.StatusUnauthorized)
			return
		}
		c.Data(http.StatusOK, "application/json", answer)
	})
	rec := fb.post(b, sigv1.ConformancePath, "warm", body)
	if rec.Code != http.StatusOK {
		b.Fatalf("%d %s", rec.Code, rec.Body)
	}
	answer = rec.Body.Bytes()
	for _, tc := range []struct {
		name string
		h    http.Handler
	}{{"impl=baseline", bare}, {"impl=svc", fb.agent}} {
		b.Run(tc.name, func(b *testing.B) {
			reqs := make([]*http.Request, b.N)
			for i := range reqs {
				reqs[i] = fb.request(b, sigv1.ConformancePath, "c", body)
			}
			b.ReportAllocs()
			fb.rt.reset()
			b.ResetTimer()
			start := time.Now()
			for i := 0; i < b.N; i++ {
				w := httptest.NewRecorder()
				tc.h.ServeHTTP(w, reqs[i])
				if w.Code != http.StatusOK {
					b.Fatalf("%d %s", w.Code, w.Body)
				}
			}
			b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "req/s")
			fb.reportTrips(b)
		})
	}
}

// BenchmarkThreadPage measures a thread read through the public engine, as JSON (GET
// /api/v1/threads/{id}: the thread with its references and votes, marshalled with an ETag) and as the
// HTML page (GET /forum/threads/{id}: the thread and its replies rendered), each against a gin handler
// answering the same bytes from memory (impl=baseline), on PostgreSQL and on SQLite, where a cached
// answer still reads the content's version row.
func BenchmarkThreadPage(b *testing.B) {
	for _, dialect := range []string{database.Postgres, database.SQLite} {
		b.Run("db="+dialect, func(b *testing.B) {
			benchThreadPage(b, newServiceBench(b, dbtest.URL(b, dialect)))
		})
	}
}

func benchThreadPage(b *testing.B, fb *forumBench) {
	for i := range 20 {
		if rec := fb.post(b, forum.RepliesPath, fmt.Sprintf("page-%d", i), fmt.Sprintf(`{"thread_id":%q,"body_markdown":"Reply **%d**, with [a link](https://example.com/%d) and a list:\n\n- one\n- two","billing":{"pricing_version":"bench","max_credit_cost":100}}`, fb.threadID, i, i)); rec.Code != http.StatusOK {
			b.Fatalf("reply: %d %s", rec.Code, rec.Body)
		}
	}
	for _, page := range []struct{ name, path, route, accept string }{
		{"page=json", forum.ThreadPath + "/" + fb.threadID, forum.ThreadPath + "/:id", "application/json"},
		{"page=html", forum.ThreadPages + "/" + fb.threadID, forum.ThreadPages + "/:id", "text/html"},
	} {
		read := func() *http.Request {
			req := httptest.NewRequestWithContext(counted(context.Background()), http.MethodGet, page.path, nil)
			req.Header.Set("Accept", page.accept)
			return req
		}
		rec := httptest.NewRecorder()
		fb.public.ServeHTTP(rec, read())
		if rec.Code != http.StatusOK {
			b.Fatalf("%s: %d %s", page.path, rec.Code, rec.Body)
		}
		want, contentType := rec.Body.Bytes(), rec.Header().Get("Content-Type")
		static := gin.New()
		static.GET(page.route, func(c *gin.Context) { c.Data(http.StatusOK, contentType, want) })
		for _, tc := range []struct {
			name string
			h    http.Handler
		}{{"impl=baseline", static}, {"impl=svc", fb.public}} {
			b.Run(page.name+"/"+tc.name, func(b *testing.B) {
				b.ReportAllocs()
				req := read()
				fb.rt.reset()
				start := time.Now()
				for b.Loop() {
					w := httptest.NewRecorder()
					tc.h.ServeHTTP(w, req)
					if w.Code != http.StatusOK {
						b.Fatalf("%d", w.Code)
					}
				}
				b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "req/s")
				fb.reportTrips(b)
			})
		}
	}
}

// BenchmarkWritesBesideSearches measures signed create_reply requests on PostgreSQL while 16 readers
// search the forum for a word in every one of its 50,000 replies, without pause (impl=svc), against
// the same writes with no reader (impl=baseline). Public reads have a pool of their own, smaller than
// the writes' and with a shorter timeout, so heavy searches slow writes only by the CPU they share
// with them, never by taking their connections. The ratio is the write throughput kept.
func BenchmarkWritesBesideSearches(b *testing.B) {
	fb := newForumBench(b)
	if err := fb.db.Exec(`INSERT INTO forum_replies (id, thread_id, author_id, author_handle, body_markdown, intent, score, up, down, created_at)
SELECT gen_random_uuid()::text, ?, ?, 'bencher', 'A common lentil word in reply ' || n, 'answer', 0, 0, 0, now()
FROM generate_series(1, 50000) AS n`, fb.threadID, fb.agentID).Error; err != nil {
		b.Fatal(err)
	}
	body := func(i int) string {
		return fmt.Sprintf(`{"thread_id":%q,"body_markdown":"Reply number %d.","billing":{"pricing_version":"bench","max_credit_cost":100}}`, fb.threadID, i)
	}
	writes := func(b *testing.B) {
		run := uuid.NewString()
		reqs := make([]*http.Request, b.N)
		for i := range reqs {
			reqs[i] = fb.request(b, forum.RepliesPath, fmt.Sprintf("beside-%s-%d", run, i), body(i))
		}
		b.ReportAllocs()
		b.ResetTimer()
		start := time.Now()
		for i := 0; i < b.N; i++ {
			rec := httptest.NewRecorder()
			fb.agent.ServeHTTP(rec, reqs[i])
			if rec.Code != http.StatusOK {
				b.Fatalf("%d %s", rec.Code, rec.Body)
			}
		}
		b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "req/s")
	}
	b.Run("impl=baseline", writes)
	b.Run("impl=svc", func(b *testing.B) {
		stop := make(chan struct{})
		var searched, refused atomic.Int64
		var wg sync.WaitGroup
		for range 16 {
			wg.Go(func() {
				for {
					select {
					case <-stop:
						return
					default:
					}
					rec := httptest.NewRecorder()
					fb.public.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, forum.SearchPath+"?q=common+lentil+word&limit=100", nil))
					if rec.Code == http.StatusOK {
						searched.Add(1)
					} else {
						refused.Add(1) // 503: the read pool's timeout ended a search; the writes go on
					}
				}
			})
		}
		writes(b)
		b.StopTimer()
		close(stop)
		wg.Wait()
		b.ReportMetric(float64(searched.Load()), "searches")
		b.ReportMetric(float64(refused.Load()), "searches-refused")
	})
}
