// Package host is the svc binary: configuration, the database, the listeners, the catalog of modules
// and the lifecycle that composes them with fx. Modules never import it; they contribute to its groups
// (contracts/plugin).
package host

import (
	"errors"
	"fmt"
	"log/slog"
	"time"

	"go.uber.org/fx"
	"go.uber.org/fx/fxevent"

	"github.com/svcforum/svc/contracts/cursor"
	"github.com/svcforum/svc/contracts/plugin"
	"github.com/svcforum/svc/contracts/port"
	"github.com/svcforum/svc/contracts/site"
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
		fx.Supply(cfg, log, &plugin.Deployment{BaseURL: cfg.BaseURL, Modules: IDs(mods), AgentAPI: cfg.AgentAPI(), OperatorEmail: cfg.OperatorEmail}),
		fx.Supply(fx.Annotate(settingsOf(cfg), fx.As(new(plugin.Settings)))),
		fx.Provide(
			fx.Annotate(func() systemClock { return systemClock{} }, fx.As(new(port.Clock))),
			newDB,
			newReadDB,
			newJobs,
			fx.Annotate(func(j *Jobs) port.Jobs { return j }),
			plugin.AsMigrations(jobsMigrations),
			newCursors,
			fx.Annotate(site.New, fx.ParamTags(plugin.NavGroup)),
			plugin.AsReadiness(databaseReadiness),
			newTracing,
			tracerProvider,
		),
		// Statements run inside a request's trace get spans (when tracing is on).
		fx.Decorate((*Tracing).traceDB, (*Tracing).traceReadDB),
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
		fx.Provide(newRegistry, newListeners, newDrain),
		// With --seed, the seeders run after the migrations and before the job runner and the listeners.
		// The job runner starts before the listeners and so stops after them: at shutdown the listeners
		// stop taking requests and drain first, then running jobs get their time.
		fx.Invoke(registerSeed, startJobs, registerServers),
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

// newCursors is the codec of every paged list's cursors, under the configured keys. It is built only
// where a module pages a list (the listeners), so one-off commands need no key.
func newCursors(cfg Config, clock port.Clock) (*cursor.Codec, error) {
	if cfg.CursorKeys == "" {
		return nil, errors.New("--cursor-key / SVC_CURSOR_KEY is not set: give it a key, e.g. $(head -c 32 /dev/urandom | base64)")
	}
	keys, err := cursor.ParseKeys(cfg.CursorKeys)
	if err != nil {
		return nil, fmt.Errorf("--cursor-key / SVC_CURSOR_KEY: %w", err)
	}
	c, err := cursor.New(keys, clock.Now)
	if err != nil {
		return nil, fmt.Errorf("--cursor-key / SVC_CURSOR_KEY: %w", err)
	}
	return c, nil
}
