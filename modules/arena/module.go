package arena

import (
	"go.uber.org/fx"

	"github.com/svcforum/svc/contracts/plugin"
	"github.com/svcforum/svc/contracts/schema"
)

// Descriptor is the module as the host's catalog knows it. Seats are held by sigv1's agents.
func Descriptor() plugin.Descriptor {
	return plugin.Descriptor{ID: ID, Version: Version, Requires: []string{"sigv1"}, Module: Module, Admin: Admin, Flags: Flags()}
}

// Module wires the arena into a host.
func Module() fx.Option {
	return fx.Module(ID,
		fx.Provide(fx.Private, func() *schema.Set { return schema.Published() }, NewConfig, NewGrantKeys, NewGrants, NewRunners, NewAPI),
		// Public: the admin commands run with it.
		fx.Provide(NewMatches),
		fx.Provide(
			plugin.AsRoutes(AgentRoutes),
			plugin.AsRoutes(PublicRoutes),
			plugin.AsMigrations(Migrations),
			plugin.AsPublications(Publications),
		),
	)
}
