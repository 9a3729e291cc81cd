// Package host is the svc binary: configuration, the database, the listeners, the catalog of modules
// and the lifecycle that composes them with fx. Modules never import it; they contribute to its groups
// (contracts/plugin).
package host

import (
	"log/slog"
	"time"

	"go.uber.org/fx"
	"go.uber.org/fx/fxevent"

	"github.com/svcforum/svc/contracts/plugin"
	"github.com/svcforum/svc/contracts/port"
)

// Version is the release of the host module and of the svc binary.
const Version = "0.1.0"

// Core is the host's own part of every application: configuration, logger, clock, database,
// start-up migration and the database readiness check, plus the selected modules.
func Core(cfg Config, log *slog.Logger, mods []plugin.Descriptor) fx.Option {
	opts := []fx.Option{
		fx.WithLogger(func() fxevent.Logger {
			l := &fxevent.SlogLogger{Logger: log.With("component", "fx")}
			l.UseLogLevel(slog.LevelDebug)
			l.UseErrorLevel(slog.LevelDebug) // failures are reported once, by the caller
			return l
		}),
		fx.StartTimeout(cfg.DatabaseWait + 2*time.Minute),
		fx.StopTimeout(cfg.ShutdownTimeout + 5*time.Second),
		fx.Supply(cfg, log, &plugin.Deployment{BaseURL: cfg.BaseURL, Modules: IDs(mods)}),
		fx.Supply(fx.Annotate(settingsOf(cfg), fx.As(new(plugin.Settings)))),
		fx.Provide(
			fx.Annotate(func() systemClock { return systemClock{} }, fx.As(new(port.Clock))),
			newDB,
			plugin.AsReadiness(databaseReadiness),
		),
		fx.Invoke(registerMigrate),
	}
	for _, m := range mods {
		opts = append(opts, m.Module())
	}
	return fx.Options(opts...)
}

// Serve is Core plus the listeners: the whole running service.
func Serve(cfg Config, log *slog.Logger, mods []plugin.Descriptor) fx.Option {
	return fx.Options(
		Core(cfg, log, mods),
		fx.Provide(newRegistry, newListeners),
		fx.Invoke(registerServers),
	)
}

// settingsOf returns the modules' settings of cfg, their defaults when cfg has none.
func settingsOf(cfg Config) plugin.Settings {
	if cfg.Settings == nil {
		return DefaultSettings()
	}
	return cfg.Settings
}

type systemClock struct{}

func (systemClock) Now() time.Time { return time.Now().UTC() }
