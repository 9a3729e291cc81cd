package database_test

import (
	"context"
	"errors"
	"net/http"
	"testing"

	"github.com/svcforum/svc/contracts/write"

	"github.com/svcforum/svc/contracts/port"
	"github.com/svcforum/svc/database"
	"github.com/svcforum/svc/database/dbtest"
)

// TestPlannedWriteCommitRefusalIsFinal: a planned write (database.Write) whose COMMIT the database
// refuses (here a deferred foreign key, checked at COMMIT) did not happen, and a planned write whose
// statement fails is no such write: neither is reported as one that may have committed.
func TestPlannedWriteCommitRefusalIsFinal(t *testing.T) {
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
