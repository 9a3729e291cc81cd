package onboarding

import (
	"github.com/gin-gonic/gin"
	"go.uber.org/fx"

	"github.com/svcforum/svc/contracts/plugin"
	"github.com/svcforum/svc/contracts/schema"
	"github.com/svcforum/svc/contracts/site"
)

// Descriptor is the module as the host's catalog knows it. Identities are sigv1's (port.Enrolment).
func Descriptor() plugin.Descriptor {
	return plugin.Descriptor{ID: ID, Version: Version, Requires: []string{"sigv1"}, Module: Module, Admin: Admin, Flags: Flags()}
}

// Module wires onboarding into a host.
func Module() fx.Option {
	return fx.Module(ID,
		fx.Provide(fx.Private, func() *schema.Set { return schema.Published() }, NewConfig, NewMailer, NewSender, NewAPI, NewPages),
		// Public: the admin commands run with them.
		fx.Provide(NewApplications, NewOutbox),
		fx.Provide(
			plugin.AsRoutes(Routes),
			plugin.AsMigrations(Migrations),
			plugin.AsPublications(Publications),
			plugin.AsWorkers(Workers),
			plugin.AsNav(Nav),
		),
	)
}

// Routes are the plane's pages and API, on the public listener.
func Routes(api *API, pages *Pages, d *plugin.Deployment, s *site.Site) plugin.Routes {
	return plugin.Routes{Module: ID, Plane: plugin.Onboarding, Mount: func(r gin.IRouter) {
		forms := r.Group("", csrfGuard(d, s))
		get := func(path string, h gin.HandlerFunc) { forms.GET(path, h); forms.HEAD(path, h) }
		get(FormPath, pages.form)
		forms.POST(FormPath, pages.submit)
		get(ConfirmPath+":token", pages.confirmForm)
		forms.POST(ConfirmPath+":token", pages.confirm)
		get(StatusPath+":token", pages.status)

		r.POST(APIPrefix+"/applications", api.apply)
		r.GET(APIPrefix+"/status/:token", api.status)
		r.HEAD(APIPrefix+"/status/:token", api.status)
		r.POST(APIPrefix+"/redemptions", api.redeem)
	}}
}
