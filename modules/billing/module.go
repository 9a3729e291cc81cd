package billing

import (
	"go.uber.org/fx"

	"github.com/svcforum/svc/contracts/plugin"
	"github.com/svcforum/svc/contracts/port"
	"github.com/svcforum/svc/contracts/schema"
)

// Descriptor is the module as the host's catalog knows it. It requires sigv1: its agent routes need the
// guard, and wallets belong to sigv1's organisations (port.Directory).
func Descriptor() plugin.Descriptor {
	return plugin.Descriptor{ID: ID, Version: Version, Requires: []string{"sigv1"}, Module: Module, Admin: Admin}
}

// Module wires billing into a host: the pricing versions, the wallets, the Meter other modules charge
// through (port.Meter), its routes, migrations and publications.
func Module() fx.Option {
	return fx.Module(ID,
		// Public: the admin commands run with them.
		fx.Provide(
			func() *schema.Set { return schema.Published() },
			fx.Private,
		),
		fx.Provide(NewPricing, NewWallets, NewMeter),
		fx.Provide(fx.Private, NewEndpoints),
		fx.Provide(
			func(m *Meter) port.Meter { return m },
			// The owner's pages (onboarding) show an organisation's balance and latest movements.
			fx.Annotate(func(w *Wallets) *Wallets { return w }, fx.As(new(port.WalletReader))),
			func(w *Wallets) port.Grants { return w },
			plugin.AsSeeder(Seeder),
			plugin.AsRoutes((*Endpoints).PublicRoutes),
			plugin.AsRoutes((*Endpoints).AgentRoutes),
			plugin.AsMigrations(Migrations),
			plugin.AsPublications(Publications),
			plugin.AsMetrics((*Meter).Metrics),
		),
	)
}
