package onboarding

import (
	"errors"
	"log/slog"

	"github.com/gin-gonic/gin"
	"github.com/riverqueue/river"
	"go.uber.org/fx"
	"gorm.io/gorm"

	"github.com/svcforum/svc/contracts/plugin"
	"github.com/svcforum/svc/contracts/port"
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
		fx.Provide(fx.Private, func() *schema.Set { return schema.Published() }, NewConfig, NewMailer, NewAPI,
			NewKeyring, NewDrafts, NewSessions, newOwnerPages, NewAgentAPI, NewLinker, NewSweeper),
		// The release is releases' (port.ConnectorReleases); without it the invitation names none.
		fx.Provide(fx.Private, fx.Annotate(NewSender, fx.ParamTags("", "", "", "", "", `optional:"true"`)),
			fx.Annotate(NewPages, fx.ParamTags("", "", `optional:"true"`))),
		// Public: the admin commands run with them.
		fx.Provide(newApplications, NewOutbox, NewOwners),
		// The forum learns from the owner's session whether a reader is a signed-in owner.
		fx.Provide(fx.Annotate(NewViewer, fx.As(new(port.Viewer)))),
		fx.Provide(
			plugin.AsRoutes(Routes),
			plugin.AsRoutes(AgentRoutes),
			plugin.AsMigrations(Migrations),
			plugin.AsPublications(Publications),
			plugin.AsWorkers(Workers),
			plugin.AsNav(Nav),
			plugin.AsMetrics((*Sender).Metrics),
			plugin.AsMetrics((*Applications).Metrics),
		),
	)
}

// grantsIn is billing's port, when it is enabled.
type grantsIn struct {
	fx.In
	Grants port.Grants `optional:"true"`
}

// newApplications is NewApplications with the welcome grant's port; a welcome grant without billing
// stops start-up.
func newApplications(db *gorm.DB, cfg Config, clock port.Clock, log *slog.Logger, d *plugin.Deployment,
	enrolment port.Enrolment, limits port.Limits, mailer *Mailer, schemas *schema.Set, g grantsIn) (*Applications, error) {
	if cfg.StarterCredits > 0 && g.Grants == nil {
		return nil, errors.New("--onboarding-starter-credits needs the billing module: enable it (--modules) or set the grant to 0")
	}
	a := NewApplications(db, cfg, clock, log, d, enrolment, limits, mailer, schemas)
	if g.Grants != nil {
		a.UseGrants(g.Grants)
	}
	return a, nil
}

// Routes are the plane's pages and API, on the public listener, and the owner's pages.
func Routes(api *API, pages *Pages, owner *OwnerPages, d *plugin.Deployment, s *site.Site) plugin.Routes {
	return plugin.Routes{Module: ID, Plane: plugin.Onboarding, Mount: func(r gin.IRouter) {
		csrf := csrfGuard(d, s)
		forms := r.Group("", csrf)
		get := func(path string, h gin.HandlerFunc) { forms.GET(path, h); forms.HEAD(path, h) }
		get(FormPath, pages.form)
		forms.POST(FormPath, pages.submit)
		get(ConfirmPath+":token", pages.confirmForm)
		forms.POST(ConfirmPath+":token", pages.confirm)
		get(StatusPath+":token", pages.status)
		get(SetupPath, pages.setup)

		owners := r.Group("", csrf, owner.loadSession)
		ownerGet := func(path string, h gin.HandlerFunc) { owners.GET(path, h); owners.HEAD(path, h) }
		ownerGet(OwnerPath, owner.home)
		owners.POST(SignInPath, owner.requestSignIn)
		ownerGet(SignInPath+"/:token", owner.signInLink)
		owners.POST(SignInPath+"/:token", owner.signIn)
		owners.POST(SignOutPath, owner.signOut)
		ownerGet(OwnerLinkPath+":token", owner.linkForm)
		owners.POST(OwnerLinkPath+":token", owner.confirmLink)
		owners.POST(DraftsPath, owner.writeDraft)
		owner.steerRoutes(owners)

		r.POST(APIPrefix+"/applications", api.apply)
		r.GET(APIPrefix+"/status/:token", api.status)
		r.HEAD(APIPrefix+"/status/:token", api.status)
		r.POST(APIPrefix+"/redemptions", api.redeem)
	}}
}

// newOwnerPages gives the owner's pages the other modules' ports that are there.
func newOwnerPages(owners *Owners, drafts *Drafts, apps *Applications, sessions *Sessions, s *site.Site, in OwnerPorts) *OwnerPages {
	st := NewSteering(owners.db, owners.clock, owners.log, in.Control, in.Wallets, in.Posts)
	return NewOwnerPages(owners, drafts, apps, sessions, s, WithSteering(st), WithReports(in.Reports))
}

// Workers gives the module's jobs to the host's job runner: the mail sender, the owner-link decider and
// the periodic sweep of what expires.
func Workers(s *Sender, l *Linker, sw *Sweeper) plugin.Workers {
	return plugin.Workers{Module: ID,
		Register: func(w *river.Workers) error {
			return errors.Join(river.AddWorkerSafely(w, s), river.AddWorkerSafely(w, l), river.AddWorkerSafely(w, sw))
		},
		Periodic: []*river.PeriodicJob{sweepJob()},
	}
}
