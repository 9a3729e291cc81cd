package host

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"go.uber.org/fx"
	"gorm.io/gorm"

	"github.com/svcforum/svc/contracts/plugin"
	"github.com/svcforum/svc/contracts/render"
	"github.com/svcforum/svc/database"
)

// newDB opens the pool (lazily on PostgreSQL); start-up waits for the database to answer, and stop
// closes the pool.
func newDB(lc fx.Lifecycle, cfg Config, log *slog.Logger) (*gorm.DB, error) {
	opts := cfg.DB
	opts.Logger = log.With("component", "gorm")
	db, err := database.Open(cfg.DatabaseURL, opts)
	if err != nil {
		return nil, err
	}
	lc.Append(fx.Hook{
		OnStart: func(ctx context.Context) error { return waitForDB(ctx, db, cfg, log) },
		OnStop: func(context.Context) error {
			sqlDB, err := db.DB()
			if err != nil {
				return err
			}
			return sqlDB.Close()
		},
	})
	return db, nil
}

// newReadDB opens the public read plane's own pool (plugin.ReadDB) on the same database: smaller, and
// with a shorter timeout, so that heavy reads never take the connections writes need.
func newReadDB(lc fx.Lifecycle, cfg Config, log *slog.Logger) (plugin.ReadDB, error) {
	opts := cfg.ReadDB
	opts.Logger = log.With("component", "gorm", "pool", "read")
	db, err := database.Open(cfg.DatabaseURL, opts)
	if err != nil {
		return plugin.ReadDB{}, err
	}
	lc.Append(fx.StopHook(func() error {
		sqlDB, err := db.DB()
		if err != nil {
			return err
		}
		return sqlDB.Close()
	}))
	return plugin.ReadDB{DB: db}, nil
}

// waitForDB pings until the database answers or cfg.DatabaseWait passes, so that the service and its
// database may start in any order.
func waitForDB(ctx context.Context, db *gorm.DB, cfg Config, log *slog.Logger) error {
	sqlDB, err := db.DB()
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, cfg.DatabaseWait)
	defer cancel()
	for attempt := 1; ; attempt++ {
		pingCtx, pingCancel := context.WithTimeout(ctx, 5*time.Second)
		err = sqlDB.PingContext(pingCtx)
		pingCancel()
		if err == nil {
			log.Info("database ready", "dialect", database.Dialect(db), "url", database.Redact(cfg.DatabaseURL))
			return nil
		}
		if attempt == 1 {
			log.Warn("waiting for the database", "url", database.Redact(cfg.DatabaseURL), "error", err)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("database %s did not answer within %s: %w", database.Redact(cfg.DatabaseURL), cfg.DatabaseWait, err)
		case <-time.After(min(time.Duration(attempt)*200*time.Millisecond, 2*time.Second)):
		}
	}
}

// migrateParams are the inputs of the start-up migration.
type migrateParams struct {
	fx.In
	Lifecycle  fx.Lifecycle
	Config     Config
	DB         *gorm.DB
	Log        *slog.Logger
	Migrations []plugin.Migrations `group:"svc.migrations"`
}

// registerMigrate applies every enabled module's migrations at start-up, after the database answers
// and before any listener opens, unless --no-migrate.
func registerMigrate(p migrateParams) {
	if p.Config.NoMigrate {
		return
	}
	p.Lifecycle.Append(fx.Hook{OnStart: func(ctx context.Context) error {
		start := time.Now()
		if err := database.Migrate(ctx, p.DB, p.Migrations); err != nil {
			return err
		}
		p.Log.Info("migrations applied", "modules", len(p.Migrations), "took", time.Since(start).Round(time.Millisecond))
		return nil
	}})
}

// databaseReadiness checks that the database answers a query and can take a write. After a database
// restart the pool still holds connections the server closed; each is found dead by the query that
// uses it, and dropped. The check asks again on another connection while the answer is a dead one, so
// that a database that is back is reported ready at once rather than after one failed probe per stale
// connection. A database that answers reads but cannot take a write is not ready either.
func databaseReadiness(db *gorm.DB, cfg Config) plugin.Readiness {
	return plugin.Readiness{Name: "database", Check: func(ctx context.Context) error {
		var err error
		for range max(cfg.DB.MaxOpenConns, 0) + 1 {
			var one int
			if err = db.WithContext(ctx).Raw("SELECT 1").Scan(&one).Error; err == nil {
				if one != 1 {
					return errors.New("SELECT 1 returned no row")
				}
				// A write of this process committed within the last second shows the database takes
				// writes; else it is asked (database.TakesWrites).
				return database.TakesWrites(ctx, db, time.Second)
			}
			if ctx.Err() != nil || !render.Unavailable(err) {
				return err
			}
		}
		return err
	}}
}
