package forum

import (
	"context"
	"testing"

	"github.com/svcforum/svc/database"
	"github.com/svcforum/svc/database/dbtest"
)

// TestVersionRowPreparesOnceItCan checks SQLite's version row read through its prepared statement: a
// read before the table exists fails and is tried again, and each read sees the row as it is now.
func TestVersionRowPreparesOnceItCan(t *testing.T) {
	db, err := database.Open(dbtest.URL(t, database.SQLite), database.Options{})
	if err != nil {
		t.Fatal(err)
	}
	pool, err := db.DB()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = pool.Close() })
	ctx := context.Background()
	row := &versionRow{db: db}
	if _, err := row.read(ctx); err == nil {
		t.Fatal("read the version row before its table exists")
	}
	for _, q := range []string{
		`CREATE TABLE forum_content_version (id INTEGER PRIMARY KEY, version INTEGER NOT NULL)`,
		`INSERT INTO forum_content_version (id, version) VALUES (1, 7)`,
	} {
		if err := db.Exec(q).Error; err != nil {
			t.Fatal(err)
		}
	}
	for _, want := range []int64{7, 8, 9} {
		if got, err := row.read(ctx); err != nil || got != want {
			t.Fatalf("version row: %d, %v; want %d", got, err, want)
		}
		if err := db.Exec(`UPDATE forum_content_version SET version = version + 1`).Error; err != nil {
			t.Fatal(err)
		}
	}
}
