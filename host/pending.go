package host

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	"go.uber.org/fx"
	"gorm.io/gorm"

	"github.com/svcforum/svc/contracts/plugin"
	"github.com/svcforum/svc/database"
)

// pendingParams are what the pending-migration check reads.
type pendingParams struct {
	fx.In
	Lifecycle  fx.Lifecycle
	DB         *gorm.DB
	Migrations []plugin.Migrations `group:"svc.migrations"`
}

// refuseWhilePending makes start-up fail, with one line naming `svc migrate`, while an enabled module
// has a migration the database has not applied: an admin command never migrates as a side effect,
// and never runs on a schema its code was not written for. The hook runs once the database answers,
// before any hook of the services the command asked for.
func refuseWhilePending(p pendingParams) {
	p.Lifecycle.Append(fx.Hook{OnStart: func(ctx context.Context) error {
		pending, err := pendingMigrations(ctx, p.DB, p.Migrations)
		if err != nil {
			return err
		}
		if len(pending) == 0 {
			return nil
		}
		var parts []string
		for _, m := range slices.Sorted(maps.Keys(pending)) {
			parts = append(parts, fmt.Sprintf("%s %d", m, pending[m]))
		}
		return fmt.Errorf("the database has migrations to apply (%s): run \"svc migrate\" first; admin commands never migrate", strings.Join(parts, ", "))
	}})
}

// pendingMigrations returns how many steps of each module the database has not applied (modules with
// none pending are left out).
func pendingMigrations(ctx context.Context, db *gorm.DB, sets []plugin.Migrations) (map[string]int, error) {
	db = db.WithContext(ctx)
	out := map[string]int{}
	for _, set := range sets {
		if len(set.Steps) == 0 {
			continue
		}
		applied := map[string]bool{}
		table := database.HistoryTable(set.Module)
		if db.Migrator().HasTable(table) {
			var ids []string
			if err := db.Table(table).Pluck("id", &ids).Error; err != nil {
				return nil, fmt.Errorf("read the migrations of %s: %w", set.Module, err)
			}
			for _, id := range ids {
				applied[id] = true
			}
		}
		for _, s := range set.Steps {
			if !applied[s.ID] {
				out[set.Module]++
			}
		}
	}
	return out, nil
}
