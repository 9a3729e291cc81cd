package database

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/go-gormigrate/gormigrate/v2"
	"gorm.io/gorm"

	"github.com/svcforum/svc/contracts/plugin"
)

// migrationLock is the PostgreSQL advisory lock key held while migrating, so replicas starting together
// apply each step once. (The bytes of "svcmigr".)
const migrationLock int64 = 0x7376636d696772

// HistoryTable is the table in which a module's applied steps are recorded.
func HistoryTable(module string) string { return module + "_migrations" }

// Migrate applies every module's pending steps, module by module in ID order, each step in its own
// transaction. On PostgreSQL it holds an advisory lock for the whole run; waiting for it honours ctx.
func Migrate(ctx context.Context, db *gorm.DB, sets []plugin.Migrations) error {
	sets = slices.Clone(sets)
	slices.SortFunc(sets, func(a, b plugin.Migrations) int { return cmp.Compare(a.Module, b.Module) })
	if err := check(sets); err != nil {
		return err
	}
	db = db.WithContext(ctx)
	if Dialect(db) != Postgres {
		return apply(db, sets)
	}
	// A session-level lock belongs to one connection: pin one for the lock and the steps. Waiting for
	// another replica's migration, or building an index on a large table, may take longer than the
	// server timeouts every connection has (timeouts.go): lift them on this connection while it
	// migrates, and restore them before it goes back to the pool.
	return db.Connection(func(conn *gorm.DB) error {
		restore := conn.Session(&gorm.Session{Context: context.WithoutCancel(ctx)})
		for _, name := range serverTimeouts {
			if err := conn.Exec("SET " + name + " = 0").Error; err != nil {
				return fmt.Errorf("lift %s for migrations: %w", name, err)
			}
			defer restore.Exec("RESET " + name)
		}
		if err := conn.Exec("SELECT pg_advisory_lock(?)", migrationLock).Error; err != nil {
			return fmt.Errorf("take migration lock: %w", err)
		}
		defer restore.Exec("SELECT pg_advisory_unlock(?)", migrationLock)
		return apply(conn, sets)
	})
}

func apply(db *gorm.DB, sets []plugin.Migrations) error {
	for _, set := range sets {
		if len(set.Steps) == 0 {
			continue
		}
		// A session of its own: without a transaction gormigrate chains every query on the handle it
		// is given, and a handle that is not a session would accumulate their conditions.
		m := gormigrate.New(db.Session(&gorm.Session{}), &gormigrate.Options{
			TableName:      HistoryTable(set.Module),
			IDColumnName:   "id",
			IDColumnSize:   255,
			UseTransaction: !set.OwnTransactions,
		}, set.Steps)
		if err := m.Migrate(); err != nil {
			return fmt.Errorf("migrate %s: %w", set.Module, err)
		}
	}
	return nil
}

// check enforces the habits of append-only migrations: one set per module, IDs prefixed by the module,
// no ID twice.
func check(sets []plugin.Migrations) error {
	seen := map[string]bool{}
	for i, set := range sets {
		if set.Module == "" {
			return fmt.Errorf("migrations without a module")
		}
		if i > 0 && sets[i-1].Module == set.Module {
			return fmt.Errorf("module %s contributes migrations twice", set.Module)
		}
		for _, s := range set.Steps {
			if s == nil || !strings.HasPrefix(s.ID, set.Module+"_") {
				return fmt.Errorf("module %s: migration ID %q must start with %q", set.Module, idOf(s), set.Module+"_")
			}
			if seen[s.ID] {
				return fmt.Errorf("module %s: migration ID %q appears twice", set.Module, s.ID)
			}
			seen[s.ID] = true
		}
	}
	return nil
}

func idOf(s *gormigrate.Migration) string {
	if s == nil {
		return "<nil>"
	}
	return s.ID
}
