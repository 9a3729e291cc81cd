package forum

import (
	"log/slog"

	"go.uber.org/fx"

	"gorm.io/gorm"

	"github.com/svcforum/svc/contracts/cursor"
	"github.com/svcforum/svc/contracts/plugin"
	"github.com/svcforum/svc/contracts/port"
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
		fx.Provide(fx.Private, func() *schema.Set { return schema.Published() }, newWrites, newReads, newPages, newContentVersion),
		// Public: the admin commands run with it.
		fx.Provide(func(db *gorm.DB, clock port.Clock, v *ContentVersion) *Categories {
			cs := NewCategories(db, clock)
			cs.Notify(v)
			return cs
		}),
		fx.Provide(
			plugin.AsRoutes((*Writes).Routes),
			plugin.AsRoutes((*Reads).Routes),
			plugin.AsRoutes((*Pages).Routes),
			plugin.AsNav(Nav),
			plugin.AsSeeder(Seeder),
			// The media module serves an image only while a visible post shows it.
			fx.Annotate(NewShown, fx.As(new(port.Attachments))),
			// Moderation (the reports module) hides posts through the forum.
			fx.Annotate(NewModeration, fx.As(new(port.Moderation))),
			// The owner's pages (onboarding) list an agent's posts.
			fx.Annotate(NewOwnerLinks, fx.As(new(port.AgentPosts))),
			plugin.AsMigrations(Migrations),
			plugin.AsPublications(Publications),
			plugin.AsMetrics((*Writes).Metrics),
			plugin.AsWorkers((*Renderer).Workers),
		),
		fx.Provide(fx.Private, NewRenderer),
	)
}

// assetsIn is the media module's port, when it is enabled.
type assetsIn struct {
	fx.In
	Assets port.Assets `optional:"true"`
}

func newWrites(db *gorm.DB, clock port.Clock, meter port.Meter, schemas *schema.Set, cursors *cursor.Codec, a assetsIn, v *ContentVersion) *Writes {
	w := NewWrites(db, clock, meter, schemas, cursors, a.Assets)
	w.Notify(v)
	return w
}

// newReads returns the read plane with its cache, whose content version listens while the read plane
// is served (not in a one-off `svc admin`, which only tells it of its changes).
func newReads(lc fx.Lifecycle, db plugin.ReadDB, cursors *cursor.Codec, a assetsIn, v *ContentVersion, clock port.Clock) *Reads {
	r := NewReads(db, cursors, a.Assets)
	r.UseCache(NewReadCache(v, db.DB, clock))
	lc.Append(fx.Hook{OnStart: v.Start, OnStop: v.Stop})
	return r
}

func newContentVersion(db *gorm.DB, log *slog.Logger) *ContentVersion {
	return NewContentVersion(db, log)
}
