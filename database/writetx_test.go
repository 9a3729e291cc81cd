package database_test

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"

	"gorm.io/gorm"

	"github.com/svcforum/svc/contracts/port"
	"github.com/svcforum/svc/database"
	"github.com/svcforum/svc/database/dbtest"
)

var errReplayed = errors.New("nonce used before")

// txAdmission stands in for the guard's admission: it records the request's nonce, and refuses a nonce
// seen before. Its step in a transaction is the guard's shape: a statement that checks itself on
// PostgreSQL, Go statements on SQLite; refuseInTx makes that step refuse whatever it finds, as when
// what it found changed before it ran alone.
type txAdmission struct {
	db         *gorm.DB
	nonce      string
	refuseInTx bool
	state      string // "", "uncertain", "with_write", "alone", "refused"
}

func (a *txAdmission) AdmitIn(p *port.Plan) bool {
	if a.state != "" && a.state != "uncertain" {
		return false
	}
	a.state = "uncertain"
	step := port.Step{}
	if p.Dialect() == database.Postgres {
		step.Checked = true
		step.SQL = `WITH i AS (INSERT INTO tx_nonces (nonce) VALUES ($1) ON CONFLICT DO NOTHING RETURNING 1)
SELECT 1/(CASE WHEN $2 THEN 0 ELSE (SELECT count(*) FROM i) END)`
		step.Vars = []any{a.nonce, a.refuseInTx}
	} else {
		step.Run = func(tx *gorm.DB) (bool, error) {
			res := tx.Exec("INSERT INTO tx_nonces (nonce) VALUES (?) ON CONFLICT DO NOTHING", a.nonce)
			return res.RowsAffected == 1 && !a.refuseInTx, res.Error
		}
	}
	p.Prepend(step)
	p.OnCommit(func() { a.state = "with_write" })
	return true
}

func (a *txAdmission) Admit(ctx context.Context) error {
	switch a.state {
	case "with_write", "alone":
		return nil
	case "refused":
		return errReplayed
	}
	res := a.db.WithContext(ctx).Exec("INSERT INTO tx_nonces (nonce) VALUES (?) ON CONFLICT DO NOTHING", a.nonce)
	if res.Error != nil {
		return res.Error
	}
	if res.RowsAffected == 0 {
		a.state = "refused"
		return errReplayed
	}
	a.state = "alone"
	return nil
}

// txClaim stores the write's outcome in its transaction.
type txClaim struct{ settled bool }

func (c *txClaim) Complete(tx *gorm.DB, status int, body []byte) error {
	return tx.Exec("INSERT INTO tx_outcomes (status, body) VALUES (?, ?)", status, string(body)).Error
}
func (c *txClaim) CompleteIn(*port.Plan, int, []byte) { panic("not planned") }
func (c *txClaim) Settled()                           { c.settled = true }

// TestWriteTx: the admission is the transaction's first statement, so a write and its admission
// commit together; a refused admission writes nothing; a write that refuses after its admission rolls
// both back, and the admission is recorded alone before the write's refusal is answered; an admission
// that refuses in the transaction but admits alone lets the write run after it. On both databases.
func TestWriteTx(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, dialect string) {
		db := dbtest.Open(t, dialect)
		for _, s := range []string{
			"CREATE TABLE tx_nonces (nonce VARCHAR(16) PRIMARY KEY)",
			"CREATE TABLE tx_posts (id VARCHAR(16) PRIMARY KEY)",
			"CREATE TABLE tx_outcomes (status INTEGER NOT NULL, body TEXT NOT NULL)",
		} {
			if err := db.Exec(s).Error; err != nil {
				t.Fatal(err)
			}
		}
		errRefused := errors.New("the write refuses")
		write := func(a *txAdmission, id string, refuse bool) (*txClaim, int, []byte, error) {
			a.db = db
			claim := &txClaim{}
			ctx := port.WithAdmission(port.WithClaim(context.Background(), claim), a)
			status, body, err := database.WriteTx(ctx, db, func(tx *gorm.DB) (int, any, error) {
				if err := tx.Exec("INSERT INTO tx_posts (id) VALUES (?)", id).Error; err != nil {
					return 0, nil, err
				}
				if refuse {
					return 0, nil, errRefused
				}
				return http.StatusAccepted, map[string]string{"post": id}, nil
			})
			return claim, status, body, err
		}
		count := func(table, where string, args ...any) int64 {
			t.Helper()
			var n int64
			if err := db.Table(table).Where(where, args...).Count(&n).Error; err != nil {
				t.Fatal(err)
			}
			return n
		}

		a := &txAdmission{nonce: "n1"}
		claim, status, body, err := write(a, "p1", false)
		if err != nil || status != http.StatusAccepted || strings.TrimSpace(string(body)) != `{"post":"p1"}` || !claim.settled || a.state != "with_write" {
			t.Fatalf("a fresh write: %d %s %v, settled %v, admission %q", status, body, err, claim.settled, a.state)
		}
		if count("tx_nonces", "nonce = ?", "n1") != 1 || count("tx_posts", "id = ?", "p1") != 1 || count("tx_outcomes", "body = ?", string(body)) != 1 {
			t.Fatal("the nonce, the post and the stored answer did not commit together")
		}

		a = &txAdmission{nonce: "n1"}
		if _, _, _, err := write(a, "p2", false); !errors.Is(err, errReplayed) || a.state != "refused" {
			t.Fatalf("a replayed nonce: %v, admission %q", err, a.state)
		}
		if count("tx_posts", "id = ?", "p2") != 0 {
			t.Fatal("a refused admission wrote")
		}

		a = &txAdmission{nonce: "n3"}
		if _, _, _, err := write(a, "p3", true); !errors.Is(err, errRefused) || a.state != "alone" {
			t.Fatalf("a write that refuses: %v, admission %q", err, a.state)
		}
		if count("tx_nonces", "nonce = ?", "n3") != 1 || count("tx_posts", "id = ?", "p3") != 0 || count("tx_outcomes", "1 = 1") != 1 {
			t.Fatal("a refused write kept more than its nonce")
		}

		a = &txAdmission{nonce: "n4", refuseInTx: true}
		claim, status, _, err = write(a, "p4", false)
		if err != nil || status != http.StatusAccepted || !claim.settled || a.state != "alone" || count("tx_posts", "id = ?", "p4") != 1 {
			t.Fatalf("admitted alone after all: %d %v, settled %v, admission %q", status, err, claim.settled, a.state)
		}
	})
}

// TestWriteCommitFailureMayHaveCommitted: a write whose COMMIT fails (here a deferred foreign key,
// checked at COMMIT) is reported as one that may have committed, with and without an admission in
// its transaction, so that whatever it refers to outside the database is kept.
func TestWriteCommitFailureMayHaveCommitted(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, dialect string) {
		db := dbtest.Open(t, dialect)
		for _, s := range []string{
			"CREATE TABLE tx_nonces (nonce VARCHAR(16) PRIMARY KEY)",
			"CREATE TABLE tx_parents (id VARCHAR(16) PRIMARY KEY)",
			"CREATE TABLE tx_children (id VARCHAR(16) PRIMARY KEY, parent VARCHAR(16) REFERENCES tx_parents (id) DEFERRABLE INITIALLY DEFERRED)",
		} {
			if err := db.Exec(s).Error; err != nil {
				t.Fatal(err)
			}
		}
		orphan := func(id string) func(tx *gorm.DB) (int, any, error) {
			return func(tx *gorm.DB) (int, any, error) {
				if err := tx.Exec("INSERT INTO tx_children (id, parent) VALUES (?, 'none')", id).Error; err != nil {
					return 0, nil, err
				}
				return http.StatusCreated, struct{}{}, nil
			}
		}
		if _, _, err := port.Write(context.Background(), db, orphan("c1")); !errors.Is(err, port.ErrMaybeCommitted) {
			t.Fatalf("port.Write whose commit failed: %v, want ErrMaybeCommitted", err)
		}
		a := &txAdmission{db: db, nonce: "n1"}
		ctx := port.WithAdmission(context.Background(), a)
		if _, _, err := database.WriteTx(ctx, db, orphan("c2")); !errors.Is(err, port.ErrMaybeCommitted) || a.state != "uncertain" {
			t.Fatalf("WriteTx whose commit failed: %v, admission %q; want ErrMaybeCommitted, uncertain", err, a.state)
		}
		// A write that fails before its commit is no such write.
		failing := func(*gorm.DB) (int, any, error) { return 0, nil, errors.New("refused") }
		if _, _, err := port.Write(context.Background(), db, failing); err == nil || errors.Is(err, port.ErrMaybeCommitted) {
			t.Fatalf("a write that failed before its commit: %v", err)
		}
	})
}
