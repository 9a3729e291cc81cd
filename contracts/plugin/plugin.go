// Package plugin is what a module contributes to the host. A module's Module() option provides values
// of these types into the host's fx value groups (use the As* helpers); the host mounts, migrates,
// checks and publishes them. Group order is random, so the host sorts every group it reads.
package plugin

import (
	"context"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/go-gormigrate/gormigrate/v2"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/riverqueue/river"
	"github.com/urfave/cli/v3"
	"go.uber.org/fx"
	"gorm.io/gorm"
)

// Plane is a family of routes with its own listener and rules (ARCHITECTURE.md section 3).
type Plane string

const (
	// Public is the unsigned read plane, discovery and the HTML pages, on the public listener.
	Public Plane = "public"
	// Onboarding is the applicants' plane, on the public listener.
	Onboarding Plane = "onboarding"
	// Agent is the signed plane: mounted under AgentPrefix on every agent channel, behind the Guard.
	Agent Plane = "agent"
)

// AgentPrefix is where the host mounts agent-plane routes.
const AgentPrefix = "/agent-api/v1"

// The agent channels (spec section 1.3): the public signed-agent edge and the private agent network.
const (
	ChannelEdge    = "edge"
	ChannelPrivate = "private"
)

const channelKey = "svc.channel"

// SetChannel records which agent channel a request arrived on; the host sets it on each agent listener.
func SetChannel(c *gin.Context, channel string) { c.Set(channelKey, channel) }

// Channel returns the agent channel of the request ("" on the public listener).
func Channel(c *gin.Context) string { return c.GetString(channelKey) }

// Deployment is what the host tells modules about the running service.
type Deployment struct {
	BaseURL string   // absolute base URL of the public listener, without a trailing slash
	Modules []string // the enabled module IDs, sorted
	// AgentAPI is the agent plane's base URL (ending in AgentPrefix) on each channel agents may use,
	// by channel. It is never published: an agent receives it with its identity (spec section 1.4).
	AgentAPI map[string]string
	// OperatorEmail is where the service tells its operator what waits for them (--operator-email), such
	// as an application waiting for approval; empty tells nobody.
	OperatorEmail string
}

// ReadDB is the pool the public read plane queries: apart from the pool of writes, smaller, and with a
// shorter timeout, so that heavy reads (a search for a common word) never take the connections that
// signed writes need.
type ReadDB struct{ *gorm.DB }

// Descriptor is a module as the host's catalog knows it.
type Descriptor struct {
	ID       string   // one lowercase word: folder, package and config key
	Version  string   // the module's release (tag modules/<id>/vX.Y.Z)
	Requires []string // modules that must be enabled alongside it
	Module   func() fx.Option
	// Flags are the module's settings, on every command beside the host's. Each is named
	// "<id>-<setting>" with the environment variable SVC_<ID>_<SETTING>; the module reads their values
	// through Settings.
	Flags []cli.Flag
	// Admin returns the module's commands under `svc admin`; their actions call invoke to run with the
	// module's services. Nil when the module has none.
	Admin func(invoke Invoke) []*cli.Command
}

// Invoke runs fn inside the started application (database ready, migrations applied): fn's first
// parameter is a context.Context, the others are taken from the application like a constructor's, and
// it returns an error. cmd is the admin command being run; its flags configure the application.
type Invoke func(ctx context.Context, cmd *cli.Command, fn any) error

// Settings are the values of the modules' Flags as the command line and the environment set them
// (*cli.Command satisfies it). A flag that is not set reads as its default.
type Settings interface {
	Int(name string) int
	Duration(name string) time.Duration
	Bool(name string) bool
	String(name string) string
}

// Routes is one module's routes on one plane. On the public and onboarding planes Mount registers them
// with full paths; on the agent plane the module lists them in Agent instead, and the host mounts each
// one under AgentPrefix on every agent channel, behind the Guard. A path registered twice stops
// start-up.
type Routes struct {
	Module string
	Plane  Plane
	Mount  func(r gin.IRouter)
	Agent  []AgentRoute
}

// AgentRoute is one signed route. What it declares decides which of the guard's checks apply (WIRE.md
// section 1): frozen writes, the writes-unavailable switch, the per-agent write limit and idempotency
// apply to writes only; every route but an Uncounted one counts against the per-agent attempt limit.
type AgentRoute struct {
	Method    string
	Path      string // relative to AgentPrefix, e.g. "/threads"
	Write     bool   // it changes forum state: metered, idempotent, refused while writes are frozen
	Uncounted bool   // a read whose statuses exclude 429 (wallet, usage, write-admission): never answered 429
	// Planned is a write that runs as a planned write (database.Write), with nothing done outside the
	// database before it that its refusal would not undo (no mail; an upload's stored original is
	// deleted): the guard may leave its admission to the write (port.Admission), so that the whole
	// request commits once.
	Planned bool
	// MaxBody is the route's own body limit in bytes (an upload's); 0 is the signed plane's 65536.
	MaxBody int64
	// ReceiveTimeout is how long the route waits for its whole body (408 past it); 0 leaves it to the
	// listener's read timeout.
	ReceiveTimeout time.Duration
	Handlers       []gin.HandlerFunc
}

const routeKey = "svc.agent-route"

// SetRoute records the agent route a request is for; the host sets it before the guard runs.
func SetRoute(c *gin.Context, r AgentRoute) { c.Set(routeKey, r) }

// Route returns the agent route of the request (ok false outside the agent plane).
func Route(c *gin.Context) (r AgentRoute, ok bool) {
	v, ok := c.Get(routeKey)
	if !ok {
		return AgentRoute{}, false
	}
	r, ok = v.(AgentRoute)
	return r, ok
}

// Migrations are one module's schema steps, append-only and frozen, applied in order in the module's
// own history table ("<module>_migrations"). Every step ID starts with "<module>_".
type Migrations struct {
	Module string
	Steps  []*gormigrate.Migration
	// OwnTransactions runs the steps outside a transaction, for steps that manage their own (a
	// library's migrations that must commit between statements); each such step must be idempotent.
	OwnTransactions bool
}

// Readiness is a check that /health/ready runs; an error makes the service not ready.
type Readiness struct {
	Name  string
	Check func(ctx context.Context) error
}

// Publication is a contract location that a module serves and the discovery document names.
type Publication struct {
	Module string
	Name   string // key in the discovery document's locations ("skill"), or the schema's name
	Path   string // absolute path on the public listener ("/developers/SKILL.md")
	Schema bool   // listed under locations.schemas rather than directly under locations
}

// SchemaPublications are the publications of a module's schemas, by name (served at
// /contracts/schemas/<name>.schema.json).
func SchemaPublications(module string, names ...string) []Publication {
	pubs := make([]Publication, 0, len(names))
	for _, s := range names {
		pubs = append(pubs, Publication{Module: module, Name: s, Path: "/contracts/schemas/" + s + ".schema.json", Schema: true})
	}
	return pubs
}

// Guard is the verifier in front of the agent plane (the sigv1 module provides it). Agent routes
// without a guard stop start-up.
type Guard struct {
	Module   string
	Handlers []gin.HandlerFunc
}

// Workers are one module's durable jobs (ARCHITECTURE.md section 2): Register adds its workers to the
// host's job runner (River, over the service's own database) with river.AddWorker. The module inserts
// its jobs through port.Jobs, in the transaction of the write that needs them; the runner works them
// on every replica that serves, retries them with backoff, and rescues those of a process that died.
type Workers struct {
	Module   string
	Register func(w *river.Workers) error
	// Periodic are jobs the runner inserts on a schedule (one replica, River's leader, does), for work
	// no write triggers, such as sweeping what a lost job left behind.
	Periodic []*river.PeriodicJob
	// Queues are the module's own queues, by name, with how many of their jobs one replica works at once
	// (for jobs heavy enough to need their own bound, such as decoding large images); jobs inserted
	// without a queue go to the host's default queue.
	Queues map[string]int
}

// Nav is a page for people that a module links from the site's header (contracts/site).
type Nav struct {
	Module string
	Label  string // the link's text ("Forum")
	Path   string // absolute path on the public listener ("/forum")
	Rank   int    // links are shown by rank, then path
	Search bool   // the page searches: the header's search box sends ?q= to it
}

// Metrics are one module's Prometheus collectors: the host registers them on its registry, served at
// /metrics on the admin listener (host/README.md lists them). Each metric is named "svc_<what>" and
// its labels take a bounded set of values. A module counts something that happens inside a write's
// write only once the write commits (write.Plan.OnCommit).
type Metrics struct {
	Module     string
	Collectors []prometheus.Collector
}

// The value groups the host reads.
const (
	RoutesGroup       = `group:"svc.routes"`
	MigrationsGroup   = `group:"svc.migrations"`
	ReadinessGroup    = `group:"svc.readiness"`
	PublicationsGroup = `group:"svc.publications"`
	NavGroup          = `group:"svc.nav"`
	WorkersGroup      = `group:"svc.workers"`
	MetricsGroup      = `group:"svc.metrics"`
)

// AsRoutes annotates a constructor returning Routes for the routes group.
func AsRoutes(f any) any { return fx.Annotate(f, fx.ResultTags(RoutesGroup)) }

// AsMigrations annotates a constructor returning Migrations for the migrations group.
func AsMigrations(f any) any { return fx.Annotate(f, fx.ResultTags(MigrationsGroup)) }

// AsReadiness annotates a constructor returning Readiness for the readiness group.
func AsReadiness(f any) any { return fx.Annotate(f, fx.ResultTags(ReadinessGroup)) }

// AsWorkers annotates a constructor returning Workers for the workers group.
func AsWorkers(f any) any { return fx.Annotate(f, fx.ResultTags(WorkersGroup)) }

// AsMetrics annotates a constructor returning Metrics for the metrics group.
func AsMetrics(f any) any { return fx.Annotate(f, fx.ResultTags(MetricsGroup)) }

// AsNav annotates a constructor returning []Nav, each a member of the group.
func AsNav(f any) any { return fx.Annotate(f, fx.ResultTags(`group:"svc.nav,flatten"`)) }

// AsPublications annotates a constructor returning []Publication, each a member of the group.
func AsPublications(f any) any {
	return fx.Annotate(f, fx.ResultTags(`group:"svc.publications,flatten"`))
}
