package host

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"slices"
	"sync"

	"github.com/gin-gonic/gin"
	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/fx"

	"github.com/svcforum/svc/contracts/plugin"
	"github.com/svcforum/svc/contracts/site"
)

// The probes every listener answers.
const (
	livePath  = "/health/live"
	readyPath = "/health/ready"
)

// probe reports whether route is one of the probes: asked all the time, by machines, never limited,
// logged at debug level and not traced.
func probe(route string) bool { return route == livePath || route == readyPath }

// The listeners the host opens.
const (
	ListenerPublic       = "public"
	ListenerAgentEdge    = "agent-edge"
	ListenerAgentPrivate = "agent-private"
	ListenerAdmin        = "admin"
)

// Listeners are the HTTP servers of the process, built (routes mounted) at construction and bound at
// start.
type Listeners struct {
	servers []*server
}

type server struct {
	name   string
	srv    *http.Server
	mu     sync.Mutex
	bound  net.Addr
	engine *gin.Engine
}

// Addr returns the address a listener is bound to, or "" if it is not running.
func (l *Listeners) Addr(name string) string {
	for _, s := range l.servers {
		if s.name == name {
			s.mu.Lock()
			defer s.mu.Unlock()
			if s.bound != nil {
				return s.bound.String()
			}
		}
	}
	return ""
}

type listenersParams struct {
	fx.In
	Config    Config
	Log       *slog.Logger
	Registry  *prometheus.Registry
	Metrics   *httpMetrics
	Tracing   *Tracing
	Routes    []plugin.Routes    `group:"svc.routes"`
	Readiness []plugin.Readiness `group:"svc.readiness"`
	Guard     *plugin.Guard      `optional:"true"`
	Site      *site.Site
	Drain     *drain
	// The locations discovery names, which the published documents' budget covers.
	Publications []plugin.Publication `group:"svc.publications"`
}

// newListeners builds one gin engine per listener and mounts every module's routes on the listeners of
// its plane. A path registered twice, or agent routes without a guard, is an error.
func newListeners(p listenersParams) (*Listeners, error) {
	gin.SetMode(gin.ReleaseMode)
	routes := slices.Clone(p.Routes)
	slices.SortFunc(routes, func(a, b plugin.Routes) int {
		return cmp.Or(cmp.Compare(a.Plane, b.Plane), cmp.Compare(a.Module, b.Module))
	})
	ready := ready(p.Readiness, p.Config.ReadyTimeout, p.Log, p.Drain)
	ls := &Listeners{}
	add := func(name, addr string, early ...gin.HandlerFunc) (*gin.Engine, error) {
		e, err := newEngine(name, p, ready, early...)
		if err != nil {
			return nil, err
		}
		ls.servers = append(ls.servers, &server{name: name, engine: e, srv: p.Config.httpServer(addr, e, p.Log)})
		return e, nil
	}

	// CORS comes before the engine's own refusals (406, a malformed query) and the limiter, so that a
	// script on another origin reads those problems and its 429 too.
	public, err := add(ListenerPublic, p.Config.PublicAddr, readPlaneCORS())
	if err != nil {
		return nil, err
	}
	public.Use(limitAddresses(newBudgets(p.Config, p.Publications), p.Site))
	public.NoRoute(pageOr(p.Site, notFound))
	public.NoMethod(pageOr(p.Site, methodNotAllowed))
	// The agent plane is never served here, and its address is not published (spec section 1.4).
	public.Any(plugin.AgentPrefix+"/*path", agentPlaneElsewhere)
	for _, r := range routes {
		if r.Plane == plugin.Public || r.Plane == plugin.Onboarding {
			if err := mount(public, r); err != nil {
				return nil, err
			}
		}
	}

	channels := []struct{ listener, channel, addr string }{{ListenerAgentEdge, plugin.ChannelEdge, p.Config.AgentEdgeAddr}}
	if p.Config.AgentPrivateAddr != "" {
		channels = append(channels, struct{ listener, channel, addr string }{ListenerAgentPrivate, plugin.ChannelPrivate, p.Config.AgentPrivateAddr})
	}
	for _, ch := range channels {
		e, err := add(ch.listener, ch.addr)
		if err != nil {
			return nil, err
		}
		group := e.Group(plugin.AgentPrefix, func(c *gin.Context) { plugin.SetChannel(c, ch.channel); c.Next() })
		for _, r := range routes {
			if r.Plane != plugin.Agent {
				continue
			}
			if err := mountAgent(group, r, p.Guard); err != nil {
				return nil, err
			}
		}
	}

	admin, err := add(ListenerAdmin, p.Config.AdminAddr)
	if err != nil {
		return nil, err
	}
	admin.GET("/metrics", metricsHandler(p.Registry, p.Log))
	if p.Config.Pprof {
		mountPprof(admin)
	}
	return ls, nil
}

// newEngine builds a listener's engine; early run after the request ID, the access log, recovery and
// the refusal of a body framed twice (oneFraming), and before negotiation.
func newEngine(name string, p listenersParams, ready gin.HandlerFunc, early ...gin.HandlerFunc) (*gin.Engine, error) {
	e := gin.New()
	e.HandleMethodNotAllowed = true
	// A signed request-target is exact: never redirect to a "fixed" path.
	e.RedirectTrailingSlash = false
	e.RedirectFixedPath = false
	e.ContextWithFallback = true
	if err := e.SetTrustedProxies(p.Config.TrustedProxies); err != nil {
		return nil, fmt.Errorf("--trusted-proxies: %w", err)
	}
	// Only the header a proxy appends to: X-Real-IP, which gin also reads, may come from the client.
	e.RemoteIPHeaders = []string{"X-Forwarded-For"}
	e.Use(p.Tracing.middleware(name)...)
	e.Use(requestID(), observe(name, p.Log, p.Metrics), recovery(p.Log), oneFraming(), dbBudget(p.Config.DB.Timeout))
	e.Use(early...)
	e.Use(negotiate())
	e.NoRoute(notFound)
	e.NoMethod(methodNotAllowed)
	e.GET(livePath, live)
	e.GET(readyPath, ready)
	// After the probes, which read no parameter: a probe answers what its contract says, whatever its
	// query string.
	e.Use(wellFormedQuery(p.Site))
	return e, nil
}

// mount registers one contribution, turning gin's panic on a conflicting path into an error.
func mount(r gin.IRouter, routes plugin.Routes) (err error) {
	defer func() {
		if rec := recover(); rec != nil {
			err = fmt.Errorf("module %q: route conflict: %v", routes.Module, rec)
		}
	}()
	routes.Mount(r)
	return nil
}

// mountAgent registers one module's agent routes behind the guard: each route's declaration is
// recorded on the request (plugin.SetRoute) before the guard runs, so the guard knows which checks
// apply.
func mountAgent(group gin.IRouter, r plugin.Routes, guard *plugin.Guard) error {
	if r.Mount != nil {
		return fmt.Errorf("module %q mounts agent-plane routes directly; list them in Routes.Agent so the guard knows each one", r.Module)
	}
	if len(r.Agent) > 0 && guard == nil {
		return fmt.Errorf("module %q has agent-plane routes but no module guards the agent plane (enable sigv1)", r.Module)
	}
	for _, route := range r.Agent {
		if route.Write && route.Method != http.MethodPost && route.Method != http.MethodPut {
			return fmt.Errorf("module %q: %s %s is a write, and writes are POST or PUT (they carry an Idempotency-Key)", r.Module, route.Method, route.Path)
		}
		if route.Write && route.Uncounted {
			return fmt.Errorf("module %q: %s %s is a write, and every write counts against the rate limits", r.Module, route.Method, route.Path)
		}
	}
	return mount(group, plugin.Routes{Module: r.Module, Plane: r.Plane, Mount: func(g gin.IRouter) {
		for _, route := range r.Agent {
			handlers := []gin.HandlerFunc{func(c *gin.Context) { plugin.SetRoute(c, route); c.Next() }}
			handlers = append(handlers, guard.Handlers...)
			g.Handle(route.Method, route.Path, append(handlers, route.Handlers...)...)
		}
	}})
}

func (c Config) httpServer(addr string, h http.Handler, log *slog.Logger) *http.Server {
	return &http.Server{
		Addr:              addr,
		Handler:           h,
		ReadHeaderTimeout: c.HTTP.ReadHeader,
		ReadTimeout:       c.HTTP.Read,
		WriteTimeout:      c.HTTP.Write,
		IdleTimeout:       c.HTTP.Idle,
		MaxHeaderBytes:    maxHeaderBytes,
		ConnContext:       connContext,
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
	}
}

// registerServers binds every listener at start (so a taken port fails start-up) and, at stop, stops
// accepting and waits for in-flight requests up to the shutdown timeout.
func registerServers(lc fx.Lifecycle, cfg Config, ls *Listeners, d *plugin.Deployment, log *slog.Logger, shutdown fx.Shutdowner) {
	lc.Append(fx.Hook{
		OnStart: func(ctx context.Context) error {
			// Every listener is bound before any serves, so that the agent plane's addresses are those
			// of the bound listeners before a request can be handed one.
			var lcfg net.ListenConfig
			lns := make([]net.Listener, len(ls.servers))
			for i, s := range ls.servers {
				ln, err := lcfg.Listen(ctx, "tcp", s.srv.Addr)
				if err != nil {
					for _, l := range lns[:i] {
						_ = l.Close()
					}
					ls.close()
					return fmt.Errorf("listen %s on %s: %w", s.name, s.srv.Addr, err)
				}
				lns[i] = ln
				s.mu.Lock()
				s.bound = ln.Addr()
				s.mu.Unlock()
				log.Info("listening", "listener", s.name, "addr", ln.Addr().String())
			}
			handAgentAPI(cfg, ls, d, log)
			for i, s := range ls.servers {
				ln := lns[i]
				go func() {
					if err := s.srv.Serve(headListener{ln}); err != nil && !errors.Is(err, http.ErrServerClosed) {
						log.Error("listener stopped", "listener", s.name, "error", err)
						_ = shutdown.Shutdown(fx.ExitCode(1))
					}
				}()
			}
			return nil
		},
		OnStop: func(ctx context.Context) error {
			ctx, cancel := context.WithTimeout(ctx, cfg.ShutdownTimeout)
			defer cancel()
			var wg sync.WaitGroup
			errs := make([]error, len(ls.servers))
			for i, s := range ls.servers {
				wg.Go(func() {
					if err := s.srv.Shutdown(ctx); err != nil {
						errs[i] = fmt.Errorf("shut down %s: %w", s.name, err)
						_ = s.srv.Close()
					}
				})
			}
			wg.Wait()
			log.Info("listeners stopped")
			return errors.Join(errs...)
		},
	})
}

// handAgentAPI sets the agent plane's address on each channel whose URL is not set to the one derived
// from its bound listener (a listener on port 0 is bound to a port only now), and logs the address
// agents are handed on each channel.
func handAgentAPI(cfg Config, ls *Listeners, d *plugin.Deployment, log *slog.Logger) {
	channels := []struct{ channel, listener, set string }{
		{plugin.ChannelEdge, ListenerAgentEdge, cfg.AgentEdgeURL},
		{plugin.ChannelPrivate, ListenerAgentPrivate, cfg.AgentPrivateURL},
	}
	for _, ch := range channels {
		bound := ls.Addr(ch.listener)
		if bound == "" {
			continue
		}
		from := "setting"
		if ch.set == "" {
			from = "listener"
			if u := agentURL("", cfg.BaseURL, bound); u != "" && d.AgentAPI != nil {
				d.AgentAPI[ch.channel] = u + plugin.AgentPrefix
			}
		}
		log.Info("agents are handed", "channel", ch.channel, "agent_api", d.AgentAPI[ch.channel], "from", from)
	}
}

func (l *Listeners) close() {
	for _, s := range l.servers {
		_ = s.srv.Close()
	}
}
