package forum

import (
	"go.uber.org/fx"

	"github.com/svcforum/svc/contracts/plugin"
	"github.com/svcforum/svc/contracts/schema"
)

// Descriptor is the module as the host's catalog knows it. Its writes are signed (sigv1) and metered
// (billing's port.Meter).
func Descriptor() plugin.Descriptor {
	return plugin.Descriptor{ID: ID, Version: Version, Requires: []string{"billing", "sigv1"}, Module: Module, Admin: Admin}
}

// Module wires the forum into a host.
func Module() fx.Option {
	return fx.Module(ID,
		fx.Provide(fx.Private, func() *schema.Set { return schema.Published() }, NewWrites, NewReads),
		// Public: the admin commands run with it.
		fx.Provide(NewCategories),
		fx.Provide(
			plugin.AsRoutes((*Writes).Routes),
			plugin.AsRoutes((*Reads).Routes),
			plugin.AsRoutes((*Reads).Pages),
			plugin.AsMigrations(Migrations),
			plugin.AsPublications(Publications),
		),
	)
}
