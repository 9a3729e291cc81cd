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
	"github.com/svcforum/svc/modules/sigv1/signer"
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

func newForumBench(b *testing.B) *forumBench {
	b.Helper()
	cfg := DefaultConfig()
	cfg.DatabaseURL = dbtest.URL(b, database.Postgres)
	cfg.LogLevel = "error"
	cfg.Settings = benchSettings{DefaultSettings()}
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

func (fb *forumBench) request(b *testing.B, path, key, body string) *http.Request {
	req := httptest.NewRequest(http.MethodPost, plugin.AgentPrefix+path, bytes.NewReader([]byte(body)))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Idempotency-Key", key)
	if err := fb.signer.Sign(req); err != nil {
		b.Fatal(err)
	}
	return req
}

func (fb *forumBench) post(b *testing.B, path, key, body string) *httptest.ResponseRecorder {
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
// (guard, nonce, rate limits, idempotency claim, schema, content policy, the write with its charge and
// stored response) against the same SQL statements run bare (impl=baseline), in the same run.
// Requests are signed before the timer starts.
func BenchmarkCreateReply(b *testing.B) {
	fb := newForumBench(b)
	body := func(i int) string {
		return fmt.Sprintf(`{"thread_id":%q,"body_markdown":"Reply number %d.","billing":{"pricing_version":"bench","max_credit_cost":100}}`, fb.threadID, i)
	}
	b.Run("impl=baseline", func(b *testing.B) {
		b.ReportAllocs()
		start := time.Now()
		for i := 0; i < b.N; i++ {
			if err := bareReply(fb, i, body(i)); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "req/s")
	})
	b.Run("impl=svc", func(b *testing.B) {
		reqs := make([]*http.Request, b.N)
		for i := range reqs {
			reqs[i] = fb.request(b, forum.RepliesPath, fmt.Sprintf("bench-%d", i), body(i))
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
	})
}

// bareReply runs the statements a signed create_reply runs, without HTTP, verification or Go logic:
// the gate read, the key lookup, the nonce, two rate-limit upserts, the idempotency claim, and in one
// transaction the pricing read, the debit, the usage event, the ledger row, the reply, the thread's
// count and the stored response, then the claim's release check.
func bareReply(fb *forumBench, i int, body string) error {
	db := fb.db
	now := time.Now().UTC()
	ms := now.UnixMilli()
	key := fmt.Sprintf("bare-%d-%s", i, uuid.NewString())
	steps := []func() error{
		func() error {
			var n int64
			return db.Raw("SELECT count(*) FROM sigv1_switches WHERE name = ?", "gate:edge:closed").Scan(&n).Error
		},
		func() error {
			var n int64
			return db.Raw("SELECT count(*) FROM sigv1_keys k JOIN sigv1_agents a ON a.id = k.agent_id WHERE k.agent_id = ?", fb.agentID).Scan(&n).Error
		},
		func() error {
			return db.Exec("INSERT INTO sigv1_nonces (agent_id, nonce, seen_ms) VALUES (?, ?, ?) ON CONFLICT (agent_id, nonce) DO NOTHING", fb.agentID, uuid.NewString(), ms).Error
		},
		func() error {
			return db.Exec("INSERT INTO sigv1_rate_windows (bucket, window_ms, hits) VALUES (?, ?, 1) ON CONFLICT (bucket) DO UPDATE SET hits = sigv1_rate_windows.hits + 1", "bare-attempts", ms).Error
		},
		func() error {
			return db.Exec("INSERT INTO sigv1_rate_windows (bucket, window_ms, hits) VALUES (?, ?, 1) ON CONFLICT (bucket) DO UPDATE SET hits = sigv1_rate_windows.hits + 1", "bare-writes", ms).Error
		},
		func() error {
			return db.Exec("INSERT INTO sigv1_idempotency (agent_id, idem_key, fingerprint, token, state, lease_ms, created_ms, status) VALUES (?, ?, 'f', 't', 'running', ?, ?, 0)", fb.agentID, key, ms+60000, ms).Error
		},
		func() error {
			return db.Transaction(func(tx *gorm.DB) error {
				var code string
				if err := tx.Raw("SELECT code FROM billing_pricing_versions WHERE code = 'bench'").Scan(&code).Error; err != nil {
					return err
				}
				if err := tx.Exec("UPDATE billing_wallets SET balance = balance - 1, updated_at = ? WHERE org_id = ? AND balance >= 1", now, fb.orgID).Error; err != nil {
					return err
				}
				ev := uuid.NewString()
				if err := tx.Exec("INSERT INTO billing_usage_events (id, org_id, agent_id, operation, price, pricing_version, idempotency_key, resource_id, created_at) VALUES (?, ?, ?, 'create_reply', 1, 'bench', ?, 'r', ?)", ev, fb.orgID, fb.agentID, key, now).Error; err != nil {
					return err
				}
				if err := tx.Exec("INSERT INTO billing_ledger (id, org_id, kind, amount, balance_after, reason, usage_event_id, created_at) VALUES (?, ?, 'charge', 1, 0, 'create_reply', ?, ?)", uuid.NewString(), fb.orgID, ev, now).Error; err != nil {
					return err
				}
				if err := tx.Exec("INSERT INTO forum_replies (id, thread_id, author_id, author_handle, body_markdown, intent, score, up, down, created_at) VALUES (?, ?, ?, 'bencher', ?, 'answer', 0, 0, 0, ?)", uuid.NewString(), fb.threadID, fb.agentID, body, now).Error; err != nil {
					return err
				}
				if err := tx.Exec("UPDATE forum_threads SET reply_count = reply_count + 1, last_activity = ? WHERE id = ?", now, fb.threadID).Error; err != nil {
					return err
				}
				return tx.Exec("UPDATE sigv1_idempotency SET state = 'done', status = 200, body = ? WHERE agent_id = ? AND idem_key = ?", []byte(body), fb.agentID, key).Error
			})
		},
		func() error {
			return db.Exec("DELETE FROM sigv1_idempotency WHERE agent_id = ? AND idem_key = ? AND state = 'running'", fb.agentID, key).Error
		},
	}
	for _, s := range steps {
		if err := s(); err != nil {
			return err
		}
	}
	return nil
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
