// Package discovery publishes svc's contracts: the svc-discovery-v1 document at /.well-known/svc, which
// names every contract location this deployment serves, and the locations themselves (OpenAPI
// documents, JSON Schemas, examples, signing vectors, SKILL.md), served from the embedded contracts
// with ETags.
package discovery

import (
	"go.uber.org/fx"

	"github.com/svcforum/svc/contracts/plugin"
)

// ID is the module's name everywhere: folder, package, config key.
const ID = "discovery"

// Version is the module's release (tag modules/discovery/vX.Y.Z).
const Version = "0.1.0"

// Descriptor is the module as the host's catalog knows it.
func Descriptor() plugin.Descriptor {
	return plugin.Descriptor{ID: ID, Version: Version, Module: Module}
}

// Module wires discovery into a host.
func Module() fx.Option {
	return fx.Module(ID,
		fx.Provide(
			fx.Annotate(New, fx.ParamTags(``, `group:"svc.publications"`)),
			plugin.AsRoutes(Routes),
			plugin.AsRoutes(FrontDoorRoutes),
			plugin.AsPublications(Publications),
		),
	)
}
