package database_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-gormigrate/gormigrate/v2"
	"gorm.io/gorm"

	"github.com/svcforum/svc/contracts/plugin"
	"github.com/svcforum/svc/database"
	"github.com/svcforum/svc/database/dbtest"
)

func TestMain(m *testing.M) { dbtest.Main(m) }

func TestParse(t *testing.T) {
	cases := []struct{ url, dialect, dsn string }{
		{"postgres://u:p@h:5432/db?sslmode=disable", database.Postgres, "postgres://u:p@h:5432/db?sslmode=disable"},
		{"postgresql://h/db", database.Postgres, "postgresql://h/db"},
		{"sqlite:./var/svc.db", database.SQLite, "./var/svc.db"},
		{"sqlite:/abs/x.db", database.SQLite, "/abs/x.db"},
	}
	for _, tc := range cases {
		d, dsn, err := database.Parse(tc.url)
		if err != nil || d != tc.dialect || dsn != tc.dsn {
			t.Errorf("Parse(%q) = %q, %q, %v", tc.url, d, dsn, err)
		}
	}
	for _, bad := range []string{"", "mysql://x", "sqlite:", "sqlite:x.db?mode=ro", "./svc.db"} {
		if _, _, err := database.Parse(bad); !errors.Is(err, database.ErrBadURL) {
			t.Errorf("Parse(%q) err = %v, want ErrBadURL", bad, err)
		}
	}
}

func TestRedact(t *testing.T) {
	if got := database.Redact("postgres://svc:secret@db:5432/svc"); got != "postgres://svc:xxxxx@db:5432/svc" {
		t.Errorf("got %q", got)
	}
	if got := database.Redact("postgres://db/svc"); got != "postgres://db/svc" {
		t.Errorf("got %q", got)
	}
	if got := database.Redact("postgres://db/svc?password=secret&sslmode=disable"); strings.Contains(got, "secret") {
		t.Errorf("password parameter kept: %q", got)
	}
}

type widget struct {
	ID   int64  `gorm:"primaryKey"`
	Name string `gorm:"uniqueIndex;not null"`
}

func widgetSteps() plugin.Migrations {
	return plugin.Migrations{Module: "demo", Steps: []*gormigrate.Migration{
		{ID: "demo_0001_widgets", Migrate: func(tx *gorm.DB) error {
			type widget struct {
				ID   int64  `gorm:"primaryKey"`
				Name string `gorm:"uniqueIndex;not null"`
			}
			// Plain CREATE TABLE: running it twice fails, which is what the concurrency test relies on.
			return tx.Migrator().CreateTable(&widget{})
		}},
		{ID: "demo_0002_seed", Migrate: func(tx *gorm.DB) error {
			return tx.Create(&widget{Name: "first"}).Error
		}},
	}}
}

func TestMigrateAppliesOnceAndTranslatesErrors(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, dialect string) {
		db := dbtest.Open(t, dialect, widgetSteps())
		ctx := context.Background()
		// Running again is a no-op.
		if err := database.Migrate(ctx, db, []plugin.Migrations{widgetSteps()}); err != nil {
			t.Fatalf("second Migrate: %v", err)
		}
		var n int64
		if err := db.Model(&widget{}).Count(&n).Error; err != nil || n != 1 {
			t.Fatalf("widgets = %d, %v; want 1 (seed applied once)", n, err)
		}
		var ids []string
		if err := db.Table(database.HistoryTable("demo")).Order("id").Pluck("id", &ids).Error; err != nil {
			t.Fatal(err)
		}
		if len(ids) != 2 || ids[0] != "demo_0001_widgets" || ids[1] != "demo_0002_seed" {
			t.Fatalf("history %v", ids)
		}
		// TranslateError turns the driver's unique violation into gorm's.
		err := db.Create(&widget{Name: "first"}).Error
		if !errors.Is(err, gorm.ErrDuplicatedKey) {
			t.Fatalf("duplicate insert: %v, want gorm.ErrDuplicatedKey", err)
		}
		if got := database.Dialect(db); got != dialect {
			t.Fatalf("Dialect = %q, want %q", got, dialect)
		}
	})
}

func TestMigrateRefusesBadSets(t *testing.T) {
	db := dbtest.Open(t, database.SQLite)
	cases := map[string][]plugin.Migrations{
		"unprefixed ID":  {{Module: "demo", Steps: []*gormigrate.Migration{{ID: "0001_x", Migrate: noop}}}},
		"foreign prefix": {{Module: "demo", Steps: []*gormigrate.Migration{{ID: "other_0001", Migrate: noop}}}},
		"duplicate ID":   {{Module: "demo", Steps: []*gormigrate.Migration{{ID: "demo_1", Migrate: noop}, {ID: "demo_1", Migrate: noop}}}},
		"module twice":   {{Module: "demo"}, {Module: "demo"}},
		"no module":      {{Steps: []*gormigrate.Migration{{ID: "_1", Migrate: noop}}}},
	}
	for name, sets := range cases {
		if err := database.Migrate(context.Background(), db, sets); err == nil {
			t.Errorf("%s: Migrate accepted %+v", name, sets)
		}
	}
}

func noop(*gorm.DB) error { return nil }

// A failing step rolls back entirely and is retried on the next run.
func TestFailingStepCommitsNothing(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, dialect string) {
		db := dbtest.Open(t, dialect)
		fail := true
		set := plugin.Migrations{Module: "demo", Steps: []*gormigrate.Migration{{ID: "demo_0001", Migrate: func(tx *gorm.DB) error {
			type widget struct {
				ID   int64 `gorm:"primaryKey"`
				Name string
			}
			if err := tx.Migrator().CreateTable(&widget{}); err != nil {
				return err
			}
			if fail {
				return errors.New("injected")
			}
			return nil
		}}}}
		if err := database.Migrate(context.Background(), db, []plugin.Migrations{set}); err == nil {
			t.Fatal("failing step reported success")
		}
		if db.Migrator().HasTable("widgets") {
			t.Fatal("failed step left its table behind")
		}
		fail = false
		if err := database.Migrate(context.Background(), db, []plugin.Migrations{set}); err != nil {
			t.Fatalf("retry: %v", err)
		}
	})
}

// Replicas starting together on one PostgreSQL database each apply every step exactly once.
func TestConcurrentMigrateOnPostgres(t *testing.T) {
	url := dbtest.URL(t, database.Postgres)
	const replicas = 4
	var wg sync.WaitGroup
	errs := make(chan error, replicas)
	for range replicas {
		wg.Add(1)
		go func() {
			defer wg.Done()
			db, err := database.Open(url, database.Options{MaxOpenConns: 2})
			if err != nil {
				errs <- err
				return
			}
			defer func() { s, _ := db.DB(); s.Close() }()
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			errs <- database.Migrate(ctx, db, []plugin.Migrations{widgetSteps()})
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatalf("replica: %v", err)
		}
	}
	db, err := database.Open(url, database.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var n int64
	if err := db.Model(&widget{}).Count(&n).Error; err != nil || n != 1 {
		t.Fatalf("widgets = %d, %v; want 1", n, err)
	}
}

// Concurrent writers on the SQLite default queue on the write lock instead of failing with SQLITE_BUSY.
func TestSQLiteConcurrentWriters(t *testing.T) {
	db := dbtest.Open(t, database.SQLite, widgetSteps())
	var wg sync.WaitGroup
	errs := make(chan error, 40)
	for i := range 40 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs <- db.Transaction(func(tx *gorm.DB) error {
				var n int64
				if err := tx.Model(&widget{}).Count(&n).Error; err != nil {
					return err
				}
				return tx.Create(&widget{Name: "w" + string(rune('A'+i))}).Error
			})
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatalf("writer: %v", err)
		}
	}
}

// The SQLite default runs in WAL mode with a busy timeout and foreign keys on, and checkpoints in the
// background rather than in commits.
func TestSQLitePragmas(t *testing.T) {
	db := dbtest.Open(t, database.SQLite)
	for pragma, want := range map[string]string{"journal_mode": "wal", "busy_timeout": "5000", "foreign_keys": "1", "wal_autocheckpoint": "0"} {
		var got string
		if err := db.Raw("PRAGMA " + pragma).Scan(&got).Error; err != nil || got != want {
			t.Errorf("PRAGMA %s = %q, %v; want %q", pragma, got, err, want)
		}
	}
}

// A set whose steps manage their own transactions applies each step once too, however often Migrate
// runs.
func TestMigrateOwnTransactions(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, dialect string) {
		db := dbtest.Open(t, dialect)
		runs := 0
		set := plugin.Migrations{Module: "own", OwnTransactions: true, Steps: []*gormigrate.Migration{
			{ID: "own_0001", Migrate: func(*gorm.DB) error { runs++; return nil }},
			{ID: "own_0002", Migrate: func(*gorm.DB) error { runs++; return nil }},
		}}
		for range 3 {
			if err := database.Migrate(context.Background(), db, []plugin.Migrations{set}); err != nil {
				t.Fatalf("Migrate: %v", err)
			}
		}
		if runs != 2 {
			t.Fatalf("the steps ran %d times, want 2", runs)
		}
	})
}

// ForUpdate locks what the next read returns on PostgreSQL, and adds nothing SQLite would refuse.
func TestForUpdate(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, dialect string) {
		t.Parallel()
		db := dbtest.Open(t, dialect)
		sql := db.ToSQL(func(tx *gorm.DB) *gorm.DB {
			var n []int
			return database.ForUpdate(tx).Table("widgets").Where("id = ?", 1).Find(&n)
		})
		if locked := strings.HasSuffix(sql, "FOR UPDATE"); locked != (dialect == database.Postgres) {
			t.Fatalf("%s: %q", dialect, sql)
		}
	})
}
