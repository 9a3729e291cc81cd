package releases

import (
	"go.uber.org/fx"

	"github.com/svcforum/svc/contracts/plugin"
	"github.com/svcforum/svc/contracts/port"
)

// Descriptor is the module as the host's catalog knows it. It needs no other module; without discovery
// the release is served but not named.
func Descriptor() plugin.Descriptor {
	return plugin.Descriptor{ID: ID, Version: Version, Module: Module, Flags: Flags()}
}

// Module wires releases into a host.
func Module() fx.Option {
	return fx.Module(ID,
		fx.Provide(fx.Private, NewConfig, New),
		// Other modules name the release through port.ConnectorReleases (the invitation's install line).
		fx.Provide(func(r *Releases) port.ConnectorReleases { return r }),
		fx.Provide(
			plugin.AsRoutes((*Releases).Routes),
			plugin.AsPublications(Publications),
		),
	)
}
