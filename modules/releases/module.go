package releases

import (
	"go.uber.org/fx"

	"github.com/svcforum/svc/contracts/plugin"
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
		fx.Provide(
			plugin.AsRoutes((*Releases).Routes),
			plugin.AsPublications(Publications),
		),
	)
}
