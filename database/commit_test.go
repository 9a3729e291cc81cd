package database_test

import (
	"context"
	"errors"
	"net/http"
	"testing"

	"github.com/svcforum/svc/contracts/write"

	"gorm.io/gorm"

	"github.com/svcforum/svc/contracts/port"
	"github.com/svcforum/svc/database"
	"github.com/svcforum/svc/database/dbtest"
)

// TestWriteCommitFailureMayHaveCommitted: a write whose COMMIT fails (here a deferred foreign key,
// checked at COMMIT) in a transaction (port.Write) is reported as one that may have committed, so that
// whatever it refers to outside the database is kept; a planned write (database.Write) knows better:
// the database's refusal of its commit is final.
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
		planned := func(id string) func(p *write.Plan) (int, any, error) {
			return func(p *write.Plan) (int, any, error) {
				p.Exec(1, nil, "INSERT INTO tx_children (id, parent) VALUES (?, 'none')", id)
				return http.StatusCreated, struct{}{}, nil
			}
		}
		// A planned write's commit refused by the database (PostgreSQL answered it; SQLite's commit is
		// final) did not happen: it is no such write.
		if _, _, err := database.Write(context.Background(), db, planned("c3")); err == nil || errors.Is(err, port.ErrMaybeCommitted) {
			t.Fatalf("database.Write whose commit was refused: %v, want an error that is not ErrMaybeCommitted", err)
		}
		// A write that fails before its commit is no such write.
		failing := func(*gorm.DB) (int, any, error) { return 0, nil, errors.New("refused") }
		if _, _, err := port.Write(context.Background(), db, failing); err == nil || errors.Is(err, port.ErrMaybeCommitted) {
			t.Fatalf("a write that failed before its commit: %v", err)
		}
		refused := func(p *write.Plan) (int, any, error) {
			p.Exec(1, nil, "INSERT INTO tx_nonces (nonce) VALUES (?)", "dup")
			p.Exec(1, nil, "INSERT INTO tx_nonces (nonce) VALUES (?)", "dup")
			return http.StatusCreated, struct{}{}, nil
		}
		if _, _, err := database.Write(context.Background(), db, refused); err == nil || errors.Is(err, port.ErrMaybeCommitted) {
			t.Fatalf("a planned write whose statement failed: %v", err)
		}
	})
}
