package sigv1

import (
	"go.opentelemetry.io/otel/trace"
	"go.uber.org/fx"
	"gorm.io/gorm"

	"github.com/svcforum/svc/contracts/plugin"
	"github.com/svcforum/svc/contracts/port"
	"github.com/svcforum/svc/contracts/schema"
)

// Descriptor is the module as the host's catalog knows it.
func Descriptor() plugin.Descriptor {
	return plugin.Descriptor{ID: ID, Version: Version, Module: Module, Flags: Flags(), Admin: Admin}
}

// Module wires sigv1 into a host: the identity registry, the switches, the guard of the agent plane
// (with its pruner, started and stopped with the application), its two endpoints, its migrations and
// its publications.
func Module() fx.Option {
	return fx.Module(ID,
		// The registry and the switches are public: the admin commands run with them.
		fx.Provide(NewConfig, NewRegistry, NewSwitches),
		// Other modules check organisations through port.Directory, admit new agents through
		// port.Enrolment and keep limits shared by every replica through port.Limits.
		fx.Provide(func(r *Registry) port.Directory { return r }),
		// The owner's pages (onboarding) pause an agent and revoke its keys through port.AgentControl.
		fx.Provide(fx.Annotate(NewOwnerControl, fx.As(new(port.AgentControl)))),
		fx.Provide(
			func(r *Registry, n *Nonces, s *Switches, m *Memory, clock port.Clock) port.Enrolment {
				e := NewEnrolment(r, n, s, clock)
				e.memory = m
				return e
			},
			func(l *Limiter, clock port.Clock) port.Limits { return limits{l: l, clock: clock} },
		),
		fx.Provide(
			NewNonces,
			NewLimiter,
			func(db *gorm.DB, cfg Config) *Claims { return NewClaims(db, cfg.IdempotencyLease) },
			NewGuard,
			NewPruner,
			NewMemory,
			func() *schema.Set { return schema.Published() },
			func(cfg Config, clock port.Clock, schemas *schema.Set, s *Switches, l *Limiter, m *Memory) *Endpoints {
				e := NewEndpoints(cfg, clock, schemas, s, l)
				e.memory = m
				return e
			},
			fx.Private,
		),
		fx.Provide(
			guardOf,
			plugin.AsMetrics((*Guard).Metrics),
			plugin.AsRoutes((*Endpoints).Routes),
			plugin.AsMigrations(Migrations),
			plugin.AsPublications(Publications),
		),
	)
}

// guardIn is what the guard takes from the host: its tracer provider, where the host traces.
type guardIn struct {
	fx.In
	Tracing trace.TracerProvider `optional:"true"`
}

// guardOf hands the guard to the host and ties its pruner and its memory to the application's
// lifecycle: both run only where the agent plane is served (not in a one-off `svc admin`).
func guardOf(lc fx.Lifecycle, g *Guard, p *Pruner, m *Memory, in guardIn) *plugin.Guard {
	g.memory = m
	if in.Tracing != nil {
		g.UseTracing(in.Tracing)
	}
	lc.Append(fx.StartStopHook(m.Start, m.Stop))
	lc.Append(fx.StartStopHook(p.Start, p.Stop))
	return g.Plugin()
}
