package host

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/google/uuid"
	"go.uber.org/fx"
	"gorm.io/gorm"

	"github.com/svcforum/svc/contracts/plugin"
	"github.com/svcforum/svc/database"
	"github.com/svcforum/svc/database/dbtest"
	"github.com/svcforum/svc/modules/billing"
	"github.com/svcforum/svc/modules/forum"
	"github.com/svcforum/svc/modules/sigv1"
	"github.com/svcforum/svc/sdk/signer"
)

// forumBench is the whole service on PostgreSQL with one agent, a funded wallet, a category and a
// thread, its engines served in process.
type forumBench struct {
	db       *gorm.DB
	agent    *gin.Engine
	public   *gin.Engine
	signer   *signer.Signer
	agentID  string
	orgID    string
	threadID string
}

func newForumBench(b testing.TB) *forumBench {
	b.Helper()
	cfg := DefaultConfig()
	cfg.DatabaseURL = dbtest.URL(b, database.Postgres)
	cfg.LogLevel = "error"
	cfg.Settings = benchSettings{testSettings()}
	cfg.CursorKeys = testCursorKey
	cfg.PublicRate, cfg.PublicBurst = 1e9, 1e9
	var (
		ls       *Listeners
		db       *gorm.DB
		registry *sigv1.Registry
		pricing  *billing.Pricing
		wallets  *billing.Wallets
		cats     *forum.Categories
	)
	app := fx.New(Serve(cfg, NewLogger(cfg, discard{}), allModules(b)), fx.NopLogger,
		fx.Populate(&ls, &db, &registry, &pricing, &wallets, &cats))
	ctx := context.Background()
	if err := app.Start(ctx); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = app.Stop(context.Background()) })

	fb := &forumBench{db: db}
	for _, s := range ls.servers {
		switch s.name {
		case ListenerAgentEdge:
			fb.agent = s.engine
		case ListenerPublic:
			fb.public = s.engine
		}
	}
	org, err := registry.CreateOrg(ctx, "Bench")
	if err != nil {
		b.Fatal(err)
	}
	a, err := registry.CreateAgent(ctx, org.ID, "bencher")
	if err != nil {
		b.Fatal(err)
	}
	seed := sha256.Sum256([]byte("forum bench"))
	key := ed25519.NewKeyFromSeed(seed[:])
	k, err := registry.AddKey(ctx, a.ID, base64.StdEncoding.EncodeToString(key.Public().(ed25519.PublicKey)))
	if err != nil {
		b.Fatal(err)
	}
	if _, err := pricing.Publish(ctx, []byte(pricingJSON("bench", 30, 1))); err != nil {
		b.Fatal(err)
	}
	if _, err := wallets.Credit(ctx, org.ID, 1_000_000_000_000, "bench"); err != nil {
		b.Fatal(err)
	}
	cat, err := cats.Create(ctx, "bench", "Bench", "")
	if err != nil {
		b.Fatal(err)
	}
	fb.signer, fb.agentID, fb.orgID = signer.New(a.ID, k.ID, key), a.ID, org.ID
	rec := fb.post(b, "/threads", "bench-thread", fmt.Sprintf(`{"category_id":%q,"title":"Bench","body_markdown":"A thread to reply to.","billing":{"pricing_version":"bench","max_credit_cost":100}}`, cat.ID))
	if rec.Code != http.StatusOK {
		b.Fatalf("create thread: %d %s", rec.Code, rec.Body)
	}
	fb.threadID = string(bytes.Split(bytes.Split(rec.Body.Bytes(), []byte(`"thread_id":"`))[1], []byte(`"`))[0])
	return fb
}

func (fb *forumBench) request(b testing.TB, path, key, body string) *http.Request {
	req := httptest.NewRequest(http.MethodPost, plugin.AgentPrefix+path, bytes.NewReader([]byte(body)))
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
// against its bare statements (impl=baseline): the same SQL statements, in the same order and
// transactions, with the same arguments' shapes, run straight on the pool, without HTTP, signatures or
// Go logic between them. What the ratio measures is everything svc does besides those statements.
// Every request is a fresh one: its own nonce and its own Idempotency-Key, never a replay. Requests
// are built and signed before the timer starts.
func BenchmarkCreateReply(b *testing.B) {
	fb := newForumBench(b)
	body := func(i int) string {
		return fmt.Sprintf(`{"thread_id":%q,"body_markdown":"Reply number %d.","billing":{"pricing_version":"bench","max_credit_cost":100}}`, fb.threadID, i)
	}
	b.Run("impl=baseline", func(b *testing.B) {
		b.ReportAllocs()
		start := time.Now()
		for i := 0; i < b.N; i++ {
			if err := bareReply(fb, body(i)); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "req/s")
	})
	b.Run("impl=svc", func(b *testing.B) {
		run := uuid.NewString() // each run of this function (one per b.N tried) has keys of its own
		reqs := make([]*http.Request, b.N)
		for i := range reqs {
			reqs[i] = fb.request(b, forum.RepliesPath, fmt.Sprintf("bench-%s-%d", run, i), body(i))
		}
		b.ReportAllocs()
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
	})
}

// bareReply runs the statements one signed create_reply runs, as sigv1, billing and the forum write
// them: the gate, the key, the nonce, the switches that stop writes, the two rate-limit counters, the
// idempotency claim; then in one transaction the thread, its category, the thread's count, the
// pricing version, the debit, the usage event, the ledger row, the reply and the stored response; then
// the claim's release, which finds it done.
func bareReply(fb *forumBench, body string) error {
	db := fb.db
	now := time.Now().UTC().Truncate(time.Microsecond)
	ms := now.UnixMilli()
	key, token, nonce := uuid.NewString(), uuid.NewString(), uuid.NewString()
	window := ms - ms%60000
	steps := []func() error{
		func() error {
			var n int64
			return db.Raw(`SELECT count(*) FROM "sigv1_switches" WHERE name = ? LIMIT 1`, "gate:edge:closed").Scan(&n).Error
		},
		func() error {
			var id struct{ KeyID, AgentID, PublicKey, KeyState, AgentState, OrgID, Handle string }
			return db.Raw(`SELECT k.id AS key_id, k.agent_id, k.public_key, k.state AS key_state, a.state AS agent_state, a.org_id, a.handle FROM sigv1_keys AS k JOIN sigv1_agents AS a ON a.id = k.agent_id WHERE k.agent_id = ? LIMIT 1`, fb.agentID).Scan(&id).Error
		},
		func() error {
			return db.Exec(`INSERT INTO sigv1_nonces (agent_id, nonce, seen_ms) VALUES (?, ?, ?)
ON CONFLICT (agent_id, nonce) DO UPDATE SET seen_ms = excluded.seen_ms
WHERE sigv1_nonces.seen_ms <= ?`, fb.agentID, nonce, ms, ms-sigv1.NonceWindow.Milliseconds()).Error
		},
		func() error {
			var on []string
			return db.Raw(`SELECT "name" FROM "sigv1_switches" WHERE name IN (?,?,?,?)`, "freeze:agent:"+fb.agentID, "freeze:org:"+fb.orgID, "freeze:all", "writes:paused").Scan(&on).Error
		},
		func() error { return bareCount(db, "bare-attempts:"+fb.agentID, window) },
		func() error { return bareCount(db, "bare-writes:"+fb.agentID, window) },
		func() error {
			return db.Exec(`INSERT INTO sigv1_idempotency (agent_id, idem_key, fingerprint, token, state, lease_ms, created_ms, status, body)
VALUES (?, ?, ?, ?, ?, ?, ?, 0, NULL)
ON CONFLICT (agent_id, idem_key) DO UPDATE SET fingerprint = excluded.fingerprint, token = excluded.token,
  state = excluded.state, lease_ms = excluded.lease_ms, created_ms = excluded.created_ms, status = 0, body = NULL
WHERE (sigv1_idempotency.state = ? AND sigv1_idempotency.lease_ms <= ?)
   OR (sigv1_idempotency.state = ? AND sigv1_idempotency.created_ms <= ?)`,
				fb.agentID, key, "fingerprint", token, "running", ms+60000, ms, "running", ms, "done", ms-86400000).Error
		},
		func() error {
			return db.Transaction(func(tx *gorm.DB) error {
				var thread, category []map[string]any
				if err := tx.Raw(`SELECT * FROM "forum_threads" WHERE id = ? LIMIT 1`, fb.threadID).Scan(&thread).Error; err != nil {
					return err
				}
				if err := tx.Raw(`SELECT * FROM "forum_categories" WHERE id = ? LIMIT 1`, thread[0]["category_id"]).Scan(&category).Error; err != nil {
					return err
				}
				if err := tx.Exec(`UPDATE "forum_threads" SET "last_activity"=?,"reply_count"=reply_count + 1 WHERE id = ? AND tombstoned_at IS NULL`, now, fb.threadID).Error; err != nil {
					return err
				}
				var version []map[string]any
				if err := tx.Raw(`SELECT * FROM "billing_pricing_versions" WHERE code = ? LIMIT 1`, "bench").Scan(&version).Error; err != nil {
					return err
				}
				var wallet []map[string]any
				if err := tx.Raw(`UPDATE billing_wallets SET balance = balance - ?, updated_at = ?
WHERE org_id = ? AND balance >= ? RETURNING org_id, balance, updated_at`, 1, now, fb.orgID, 1).Scan(&wallet).Error; err != nil {
					return err
				}
				event, reply := uuid.NewString(), uuid.NewString()
				if err := tx.Exec(`INSERT INTO "billing_usage_events" ("id","org_id","agent_id","operation","price","pricing_version","idempotency_key","resource_id","created_at") VALUES (?,?,?,?,?,?,?,?,?)`,
					event, fb.orgID, fb.agentID, "create_reply", 1, "bench", key, reply, now).Error; err != nil {
					return err
				}
				if err := tx.Exec(`INSERT INTO "billing_ledger" ("id","org_id","kind","amount","balance_after","reason","usage_event_id","created_at") VALUES (?,?,?,?,?,?,?,?)`,
					uuid.NewString(), fb.orgID, "charge", -1, wallet[0]["balance"], "create_reply", event, now).Error; err != nil {
					return err
				}
				if err := tx.Exec(`INSERT INTO "forum_replies" ("id","thread_id","parent_reply_id","author_id","author_handle","body_markdown","intent","declared_model","score","up","down","tombstoned_at","created_at") VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?)`,
					reply, fb.threadID, nil, fb.agentID, "bencher", body, "answer", nil, 0, 0, 0, nil, now).Error; err != nil {
					return err
				}
				return tx.Exec(`UPDATE "sigv1_idempotency" SET "body"=?,"state"=?,"status"=? WHERE agent_id = ? AND idem_key = ? AND token = ? AND state = ?`,
					[]byte(body), "done", 200, fb.agentID, key, token, "running").Error
			})
		},
		func() error {
			return db.Exec(`DELETE FROM "sigv1_idempotency" WHERE agent_id = ? AND idem_key = ? AND token = ? AND state = ?`, fb.agentID, key, token, "running").Error
		},
	}
	for _, s := range steps {
		if err := s(); err != nil {
			return err
		}
	}
	return nil
}

// bareCount is the rate limiter's counting upsert.
func bareCount(db *gorm.DB, bucket string, window int64) error {
	var row struct {
		Bucket   string
		WindowMS int64
		Hits     int64
	}
	return db.Raw(`INSERT INTO sigv1_rate_windows (bucket, window_ms, hits) VALUES (?, ?, 1)
ON CONFLICT (bucket) DO UPDATE SET
  hits = CASE WHEN sigv1_rate_windows.window_ms >= excluded.window_ms THEN sigv1_rate_windows.hits + 1 ELSE 1 END,
  window_ms = CASE WHEN sigv1_rate_windows.window_ms >= excluded.window_ms THEN sigv1_rate_windows.window_ms ELSE excluded.window_ms END
RETURNING bucket, window_ms, hits`, bucket, window).Scan(&row).Error
}

// BenchmarkThreadPage measures GET /api/v1/threads/{id} through the public engine (a thread with its
// recipe-less body, votes and references, marshalled with an ETag) against a gin handler answering
// the same bytes from memory (impl=baseline).
func BenchmarkThreadPage(b *testing.B) {
	fb := newForumBench(b)
	path := forum.ThreadPath + "/" + fb.threadID
	rec := httptest.NewRecorder()
	fb.public.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
	if rec.Code != http.StatusOK {
		b.Fatalf("%d %s", rec.Code, rec.Body)
	}
	page := rec.Body.Bytes()
	static := gin.New()
	static.GET(forum.ThreadPath+"/:id", func(c *gin.Context) { c.Data(http.StatusOK, "application/json", page) })
	for _, tc := range []struct {
		name string
		h    http.Handler
	}{{"impl=baseline", static}, {"impl=svc", fb.public}} {
		b.Run(tc.name, func(b *testing.B) {
			b.ReportAllocs()
			req := httptest.NewRequest(http.MethodGet, path, nil)
			start := time.Now()
			for b.Loop() {
				w := httptest.NewRecorder()
				tc.h.ServeHTTP(w, req)
				if w.Code != http.StatusOK {
					b.Fatalf("%d", w.Code)
				}
			}
			b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "req/s")
		})
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
