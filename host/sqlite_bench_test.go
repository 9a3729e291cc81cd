package host

import (
	"errors"
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"gorm.io/gorm"

	"github.com/svcforum/svc/modules/forum"
	"github.com/svcforum/svc/modules/sigv1"
)

// sqliteWriters is how many writers BenchmarkSQLiteWriters runs at once.
const sqliteWriters = 16

// BenchmarkSQLiteWriters measures the latency of signed create_reply requests on the embedded SQLite
// default (a file, WAL) while sqliteWriters of them run at once, through the whole service's agent
// engine (impl=svc): routing, the guard (the key's lookup, then its admission: nonce, rate limits and
// Idempotency-Key claim in one transaction), verification, schema, content policy and the write's
// transaction with its charge and stored response. Every request is a fresh one, its own nonce and
// Idempotency-Key, built and signed before the timer starts. It reports each request's p50 and p99,
// their ratio (the tail: how much longer the unluckiest request in a hundred waits than the typical
// one) and the throughput.
//
// impl=baseline is the same sqliteWriters writers running the same statements straight on the
// service's pool (database.Open, so whatever the database package does for writers applies to both):
// the key's lookup, then the admission's four statements and the write's nine in one transaction (the
// service takes a forum write's admission with the write), with the same arguments' shapes, without HTTP, signatures or Go logic between them. So
// `benchstat -col /impl` reads, for each metric, what the service adds to what SQLite and the pool
// alone give 16 writers.
func BenchmarkSQLiteWriters(b *testing.B) {
	fb := newServiceBench(b, "sqlite:"+filepath.Join(b.TempDir(), "svc.db"))
	var keyID string
	if err := fb.db.Raw(`SELECT id FROM sigv1_keys WHERE agent_id = ? LIMIT 1`, fb.agentID).Scan(&keyID).Error; err != nil || keyID == "" {
		b.Fatalf("the agent's key: %q, %v", keyID, err)
	}
	body := func(i int) string {
		return fmt.Sprintf(`{"thread_id":%q,"body_markdown":"Reply number %d.","billing":{"pricing_version":"bench","max_credit_cost":100}}`, fb.threadID, i)
	}
	b.Run("impl=baseline", func(b *testing.B) {
		measureWriters(b, func(i int) error { return bareSQLiteReply(fb, keyID, body(i)) })
	})
	b.Run("impl=svc", func(b *testing.B) {
		run := uuid.NewString() // each run of this function (one per b.N tried) has keys of its own
		reqs := make([]*http.Request, b.N)
		for i := range reqs {
			reqs[i] = fb.request(b, forum.RepliesPath, fmt.Sprintf("sqlite-%s-%d", run, i), body(i))
		}
		measureWriters(b, func(i int) error {
			rec := httptest.NewRecorder()
			fb.agent.ServeHTTP(rec, reqs[i])
			if rec.Code != http.StatusOK || rec.Header().Get(sigv1.HeaderReplayed) != "" {
				return fmt.Errorf("%d (replayed %q) %s", rec.Code, rec.Header().Get(sigv1.HeaderReplayed), rec.Body)
			}
			return nil
		})
	})
}

// measureWriters runs do(0) to do(b.N-1) from sqliteWriters goroutines at once, times each call, and
// reports the p50 and p99 of those times in milliseconds, p99/p50, and the calls per second. Anything
// done before it is called is outside the timer.
func measureWriters(b *testing.B, do func(i int) error) {
	lat := make([]time.Duration, b.N)
	var (
		next     atomic.Int64
		wg       sync.WaitGroup
		mu       sync.Mutex
		firstErr error
	)
	b.ResetTimer()
	start := time.Now()
	for range sqliteWriters {
		wg.Go(func() {
			for {
				i := int(next.Add(1) - 1)
				if i >= b.N {
					return
				}
				began := time.Now()
				err := do(i)
				lat[i] = time.Since(began)
				if err != nil {
					mu.Lock()
					firstErr = errors.Join(firstErr, fmt.Errorf("call %d: %w", i, err))
					mu.Unlock()
					next.Store(int64(b.N)) // stop the others
					return
				}
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	b.StopTimer()
	if firstErr != nil {
		b.Fatal(firstErr)
	}
	slices.Sort(lat)
	quantile := func(q float64) time.Duration {
		return lat[max(0, int(math.Ceil(q*float64(len(lat))))-1)]
	}
	p50, p99 := quantile(0.50), quantile(0.99)
	b.ReportMetric(float64(p50)/float64(time.Millisecond), "p50-ms")
	b.ReportMetric(float64(p99)/float64(time.Millisecond), "p99-ms")
	b.ReportMetric(float64(p99)/float64(p50), "p99/p50")
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "req/s")
}

// bareSQLiteReply runs the statements one signed create_reply runs on SQLite, as sigv1, billing and the
// forum write them: the key's lookup; the admission in one transaction (the nonce, the two rate-limit
// counters, the Idempotency-Key's claim); then in another the thread, its category, the thread's
// count, the pricing version, the debit, the usage event, the ledger row, the reply and the stored
// response on the claim.
func bareSQLiteReply(fb *forumBench, keyID, body string) error {
	db := fb.db
	now := time.Now().UTC().Truncate(time.Millisecond)
	ms := now.UnixMilli()
	key, token, nonce := uuid.NewString(), uuid.NewString(), uuid.NewString()
	window := ms - ms%60000
	var id struct{ KeyID, AgentID, PublicKey, KeyState, AgentState, OrgID, Handle string }
	if err := db.Raw(`SELECT k.id AS key_id, k.agent_id, k.public_key, k.state AS key_state, a.state AS agent_state, a.org_id, a.handle FROM sigv1_keys AS k JOIN sigv1_agents AS a ON a.id = k.agent_id WHERE k.id = ? AND k.agent_id = ? LIMIT 1`, keyID, fb.agentID).Scan(&id).Error; err != nil {
		return err
	}
	admit := func(tx *gorm.DB) error {
		if err := tx.Exec(`INSERT INTO sigv1_nonces (agent_id, nonce, seen_ms) VALUES (?, ?, ?)
ON CONFLICT (agent_id, nonce) DO UPDATE SET seen_ms = excluded.seen_ms
WHERE sigv1_nonces.seen_ms <= ?`, fb.agentID, nonce, ms, ms-sigv1.NonceWindow.Milliseconds()).Error; err != nil {
			return err
		}
		for _, bucket := range []string{"bare-attempts:", "bare-writes:"} {
			var row struct {
				Bucket   string
				WindowMS int64
				Hits     int64
			}
			if err := tx.Raw(`INSERT INTO sigv1_rate_windows (bucket, window_ms, hits, span_ms) VALUES (?, ?, 1, ?)
ON CONFLICT (bucket) DO UPDATE SET hits = CASE WHEN sigv1_rate_windows.window_ms >= excluded.window_ms THEN sigv1_rate_windows.hits + 1 ELSE 1 END,
  window_ms = CASE WHEN sigv1_rate_windows.window_ms >= excluded.window_ms THEN sigv1_rate_windows.window_ms ELSE excluded.window_ms END,
  span_ms = excluded.span_ms
RETURNING bucket, window_ms, hits`, bucket+fb.agentID, window, 60000).Scan(&row).Error; err != nil {
				return err
			}
		}
		return tx.Exec(`INSERT INTO sigv1_idempotency (agent_id, idem_key, fingerprint, token, state, lease_ms, created_ms, status, body)
VALUES (?, ?, ?, ?, 'running', ?, ?, 0, NULL)
ON CONFLICT (agent_id, idem_key) DO UPDATE SET fingerprint = excluded.fingerprint, token = excluded.token,
  state = excluded.state, lease_ms = excluded.lease_ms, created_ms = excluded.created_ms, status = 0, body = NULL
  WHERE (sigv1_idempotency.state = 'running' AND sigv1_idempotency.lease_ms <= ?)
     OR (sigv1_idempotency.state = 'done' AND sigv1_idempotency.created_ms <= ?)`,
			fb.agentID, key, "fingerprint", token, ms+60000, ms, ms, ms-86400000).Error
	}
	return db.Transaction(func(tx *gorm.DB) error {
		if err := admit(tx); err != nil {
			return err
		}
		var thread, category []map[string]any
		if err := tx.Raw("SELECT * FROM `forum_threads` WHERE id = ? LIMIT 1", fb.threadID).Scan(&thread).Error; err != nil {
			return err
		}
		if len(thread) == 0 {
			return errors.New("no thread")
		}
		if err := tx.Raw("SELECT * FROM `forum_categories` WHERE id = ? LIMIT 1", thread[0]["category_id"]).Scan(&category).Error; err != nil {
			return err
		}
		if err := tx.Exec("UPDATE `forum_threads` SET `last_activity`=?,`reply_count`=reply_count + 1 WHERE id = ? AND tombstoned_at IS NULL AND hidden_at IS NULL", now, fb.threadID).Error; err != nil {
			return err
		}
		var version []map[string]any
		if err := tx.Raw("SELECT * FROM `billing_pricing_versions` WHERE code = ? LIMIT 1", "bench").Scan(&version).Error; err != nil {
			return err
		}
		var wallet []map[string]any
		if err := tx.Raw(`UPDATE billing_wallets SET balance = balance - ?, updated_at = ?
WHERE org_id = ? AND balance >= ? RETURNING org_id, balance, updated_at`, 1, now, fb.orgID, 1).Scan(&wallet).Error; err != nil {
			return err
		}
		if len(wallet) == 0 {
			return errors.New("no wallet")
		}
		event, reply := uuid.NewString(), uuid.NewString()
		if err := tx.Exec("INSERT INTO `billing_usage_events` (`id`,`org_id`,`agent_id`,`operation`,`price`,`pricing_version`,`idempotency_key`,`resource_id`,`created_at`) VALUES (?,?,?,?,?,?,?,?,?)",
			event, fb.orgID, fb.agentID, "create_reply", 1, "bench", key, reply, now).Error; err != nil {
			return err
		}
		if err := tx.Exec("INSERT INTO `billing_ledger` (`id`,`org_id`,`kind`,`amount`,`balance_after`,`reason`,`usage_event_id`,`created_at`) VALUES (?,?,?,?,?,?,?,?)",
			uuid.NewString(), fb.orgID, "charge", 1, wallet[0]["balance"], "create_reply", event, now).Error; err != nil {
			return err
		}
		if err := tx.Exec("INSERT INTO `forum_replies` (`id`,`thread_id`,`parent_reply_id`,`author_id`,`author_handle`,`body_markdown`,`body_html`,`intent`,`declared_model`,`score`,`up`,`down`,`tombstoned_at`,`hidden_at`,`created_at`) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
			reply, fb.threadID, nil, fb.agentID, "bencher", body, "<p>"+body+"</p>\n", "answer", nil, 0, 0, 0, nil, nil, now).Error; err != nil {
			return err
		}
		return tx.Exec("UPDATE `sigv1_idempotency` SET `body`=?,`state`=?,`status`=? WHERE agent_id = ? AND idem_key = ? AND token = ? AND state = ?",
			[]byte(body), "done", 200, fb.agentID, key, token, "running").Error
	})
}
