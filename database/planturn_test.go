package database_test

import (
	"context"
	"database/sql"
	"errors"
	"testing"

	"github.com/svcforum/svc/contracts/write"

	"github.com/svcforum/svc/database"
	"github.com/svcforum/svc/database/dbtest"
)

// TestPlannedWriteBuildsInTheWritersTurn: on SQLite a planned write is planned inside its transaction,
// holding the database's one write lock, so that the ids and times it makes sort in commit order
// (the forum's catch-up pages by them). While the plan is made, another connection, even one that
// does not queue in this process, cannot begin a write; a plan that fails is answered as it is, and
// leaves the lock to the next writer.
func TestPlannedWriteBuildsInTheWritersTurn(t *testing.T) {
	db := dbtest.Open(t, database.SQLite)
	if err := db.Exec("CREATE TABLE turn_posts (id VARCHAR(8) PRIMARY KEY)").Error; err != nil {
		t.Fatal(err)
	}
	var file string
	if err := db.Raw("SELECT file FROM pragma_database_list WHERE name = 'main'").Scan(&file).Error; err != nil || file == "" {
		t.Fatalf("database file %q: %v", file, err)
	}
	other, err := sql.Open("sqlite", "file:"+file+"?_pragma=busy_timeout(0)")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = other.Close() })
	otherBegins := func() error {
		conn, err := other.Conn(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		if _, err := conn.ExecContext(context.Background(), "BEGIN IMMEDIATE"); err != nil {
			return err
		}
		_, err = conn.ExecContext(context.Background(), "ROLLBACK")
		return err
	}

	ctx := context.Background()
	var whilePlanning error
	_, _, err = database.Write(ctx, db, func(p *write.Plan) (int, any, error) {
		whilePlanning = otherBegins()
		p.Exec(1, nil, "INSERT INTO turn_posts (id) VALUES ('a')")
		return 200, map[string]string{"id": "a"}, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if whilePlanning == nil {
		t.Fatal("another connection began a write while the plan was made: the plan's ids may not sort in commit order")
	}

	refused := errors.New("refused while planning")
	if _, _, err := database.Write(ctx, db, func(p *write.Plan) (int, any, error) {
		p.Exec(1, nil, "INSERT INTO turn_posts (id) VALUES ('b')")
		return 0, nil, refused
	}); err != refused {
		t.Fatalf("a plan's own error came back as %v", err)
	}
	if err := otherBegins(); err != nil {
		t.Fatalf("the write lock was kept after a refused plan: %v", err)
	}
	var n int64
	if err := db.Raw("SELECT COUNT(*) FROM turn_posts").Scan(&n).Error; err != nil || n != 1 {
		t.Fatalf("%d posts (%v), want the one committed", n, err)
	}
}
