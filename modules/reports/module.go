package reports

import (
	"go.uber.org/fx"

	"github.com/svcforum/svc/contracts/plugin"
	"github.com/svcforum/svc/contracts/port"
	"github.com/svcforum/svc/contracts/schema"
)

// Descriptor is the module as the host's catalog knows it. Reports are signed (sigv1) and concern the
// forum's posts, which the forum offers through port.Moderation.
func Descriptor() plugin.Descriptor {
	return plugin.Descriptor{ID: ID, Version: Version, Requires: []string{"forum", "sigv1"}, Module: Module, Admin: Admin, Flags: Flags()}
}

// Module wires reports into a host.
func Module() fx.Option {
	return fx.Module(ID,
		fx.Provide(fx.Private, func() *schema.Set { return schema.Published() }, NewConfig, NewReports),
		// The owner's pages (onboarding) file persons' reports.
		fx.Provide(fx.Annotate(NewPersons, fx.As(new(port.PersonReports)))),
		// Public: the admin commands run with it.
		fx.Provide(NewModerator),
		fx.Provide(
			plugin.AsRoutes((*Reports).Routes),
			plugin.AsMigrations(Migrations),
			plugin.AsPublications(Publications),
		),
	)
}
