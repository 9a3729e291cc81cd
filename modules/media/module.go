package media

import (
	"context"

	"go.uber.org/fx"

	"github.com/svcforum/svc/contracts/plugin"
	"github.com/svcforum/svc/contracts/port"
	"github.com/svcforum/svc/contracts/schema"
)

// Descriptor is the module as the host's catalog knows it. Uploads are signed (sigv1) and metered
// (billing's port.Meter); the images are shown by a module that attaches them (the forum).
func Descriptor() plugin.Descriptor {
	return plugin.Descriptor{ID: ID, Version: Version, Requires: []string{"billing", "sigv1"}, Module: Module, Flags: Flags()}
}

// Module wires media into a host: the storage, the upload and status endpoints, the processing job,
// the public images, and port.Assets for the module that attaches them.
func Module() fx.Option {
	return fx.Module(ID,
		fx.Provide(fx.Private, func() *schema.Set { return schema.Published() }, NewConfig, NewStorage,
			NewUploads, NewProcessor, NewSweeper, NewImages),
		fx.Provide(
			NewAssets,
			func(a *Assets) port.Assets { return a },
			plugin.AsRoutes((*Uploads).Routes),
			plugin.AsRoutes((*Images).Routes),
			plugin.AsWorkers((*Processor).Workers),
			plugin.AsMigrations(Migrations),
			plugin.AsPublications(Publications),
			plugin.AsReadiness(readiness),
		),
	)
}

// readiness reports whether the storage can be used (503 media_unavailable answers would follow).
func readiness(s Storage) plugin.Readiness {
	return plugin.Readiness{Name: "media-storage", Check: func(ctx context.Context) error { return s.Check(ctx) }}
}
