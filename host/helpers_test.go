package host

import (
	"context"

	"go.uber.org/fx"

	"github.com/svcforum/svc/contracts/plugin"
)

func readinessOption(name string, check func(context.Context) error) fx.Option {
	return fx.Provide(plugin.AsReadiness(func() plugin.Readiness { return plugin.Readiness{Name: name, Check: check} }))
}
