package sigv1_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/logger"

	"github.com/svcforum/svc/database"
	"github.com/svcforum/svc/database/dbtest"
	"github.com/svcforum/svc/modules/sigv1"
	"github.com/svcforum/svc/sdk/signer"
	"github.com/svcforum/svc/testkit"
)

// statements is a gorm logger that keeps every statement it is given.
type statements struct {
	logger.Interface
	mu   sync.Mutex
	sqls []string
}

func (s *statements) Trace(_ context.Context, _ time.Time, fc func() (string, int64), _ error) {
	sql, _ := fc()
	s.mu.Lock()
	defer s.mu.Unlock()
	s.sqls = append(s.sqls, sql)
}

// touching returns the statements since from that name one of tables.
func (s *statements) touching(from int, tables ...string) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for _, q := range s.sqls[from:] {
		for _, t := range tables {
			if strings.Contains(q, t) {
				out = append(out, q)
				break
			}
		}
	}
	return out
}

func (s *statements) len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.sqls)
}

// TestAdmissionInOneStatement: once a signature verifies, the nonce, both rate limits and the
// Idempotency-Key's claim are one statement on PostgreSQL (one round trip), and after a write that
// committed no statement touches the claim again; every outcome of the admission (fresh, replayed,
// limited, claimed, replayed response, conflict) is still answered as before.
func TestAdmissionInOneStatement(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, dialect string) {
		w := newWorld(t, dialect)
		log := &statements{Interface: logger.Discard}
		db := w.db.Session(&gorm.Session{Logger: log})
		n := newNode(t, db, w.clock, func(c *sigv1.Config) { c.WritesPerWindow = 3 })
		a := w.newAgent(t, "admitted")
		guardTables := []string{"sigv1_nonces", "sigv1_rate_windows", "sigv1_idempotency"}

		from := log.len()
		testkit.Expect(t, n.send(t, a, "POST", writePath, []byte(`{"note":"one"}`), "one"), 201, "")
		var admit []string
		for _, q := range log.touching(from, guardTables...) {
			switch {
			case strings.HasPrefix(q, "DELETE"):
				t.Fatalf("a statement ran after the committed write: %s", q)
			case !strings.HasPrefix(q, `UPDATE "sigv1_idempotency"`): // the completion, in the write's transaction
				admit = append(admit, q)
			}
		}
		if dialect == database.Postgres && len(admit) != 1 {
			t.Fatalf("the guard ran %d statements on its tables, want 1:\n%s", len(admit), strings.Join(admit, "\n---\n"))
		}

		from = log.len()
		r := n.send(t, a, "POST", writePath, []byte(`{"note":"one"}`), "one")
		testkit.Expect(t, r, 201, "")
		if r.Header.Get("Idempotent-Replayed") != "true" {
			t.Fatal("the same key and body were not answered with the stored response")
		}
		if got := log.touching(from, guardTables...); dialect == database.Postgres && len(got) != 1 {
			t.Fatalf("a replay ran %d statements on the guard's tables, want 1", len(got))
		}
		testkit.Expect(t, n.send(t, a, "POST", writePath, []byte(`{"note":"two"}`), "one"), 409, "idempotency_key_conflict")
		testkit.Expect(t, n.send(t, a, "POST", writePath, []byte(`{"note":"three"}`), "three"), 429, "rate_limited")

		// A replayed nonce is refused, and counts no hit.
		fixed := a
		fixed.Signer = signer.New(a.AgentID, a.KeyID, a.Key, signer.WithClock(w.clock.Now), signer.WithNonces(func() string { return "AAECAwQFBgcICQoLDA0ODw" }))
		testkit.Expect(t, n.send(t, fixed, "POST", "/conformance", echoBody, "c"), 200, "")
		var before int64
		if err := w.db.Table("sigv1_rate_windows").Where("bucket = ?", "attempts:"+a.AgentID).Select("hits").Scan(&before).Error; err != nil {
			t.Fatal(err)
		}
		testkit.Expect(t, n.send(t, fixed, "POST", "/conformance", echoBody, "c"), 409, "nonce_replayed")
		var after int64
		if err := w.db.Table("sigv1_rate_windows").Where("bucket = ?", "attempts:"+a.AgentID).Select("hits").Scan(&after).Error; err != nil {
			t.Fatal(err)
		}
		if after != before {
			t.Fatalf("a replayed nonce counted a hit: %d then %d", before, after)
		}
	})
}
