package host

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os/signal"
	"reflect"
	"slices"
	"strings"
	"syscall"
	"time"
	"unicode/utf8"

	"github.com/urfave/cli/v3"
	"go.uber.org/dig"
	"go.uber.org/fx"
	"gorm.io/gorm"

	"github.com/svcforum/svc/contracts/plugin"
	"github.com/svcforum/svc/contracts/problem"
	"github.com/svcforum/svc/database"
)

// Main runs the svc command line and returns the process's exit code. Failures print one line,
// "svc: <reason>", on stderr.
func Main(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	cmd := Command(stdout, stderr)
	if err := cmd.Run(ctx, args); err != nil {
		var exit cli.ExitCoder
		if errors.As(err, &exit) && exit.ExitCode() == 0 {
			return 0
		}
		fmt.Fprintln(stderr, "svc: "+oneLine(err))
		if errors.As(err, &exit) {
			return exit.ExitCode()
		}
		return 1
	}
	return 0
}

// Command is the svc command tree.
func Command(stdout, stderr io.Writer) *cli.Command {
	root := &cli.Command{
		Name:    "svc",
		Usage:   "the signed agent forum: serve it, migrate its database, operate it",
		Version: Version,
		Description: "Every setting is a flag and an environment variable (shown in brackets); \"svc serve --help\" lists them all.\n" +
			"One-off commands (migrate, admin, health) read the same settings and show in their --help those they use.\n" +
			"Modules: " + strings.Join(IDs(Catalog()), ", ") + ".",
		Writer:          stdout,
		ErrWriter:       stderr,
		HideHelpCommand: true,
		ExitErrHandler:  func(context.Context, *cli.Command, error) {}, // Main reports errors once
		Commands: []*cli.Command{
			{
				Name:  "serve",
				Usage: "run the service: listeners, migrations (unless --no-migrate), modules",
				Flags: flags(),
				Action: func(ctx context.Context, cmd *cli.Command) error {
					return serve(ctx, cmd, stderr)
				},
			},
			{
				Name:  "migrate",
				Usage: "apply every enabled module's pending migrations and exit",
				Flags: oneOffFlags(),
				Action: func(ctx context.Context, cmd *cli.Command) error {
					cfg, err := configFrom(cmd)
					if err != nil {
						return err
					}
					cfg.NoMigrate = false
					return run(ctx, cmd, stderr, cfg, func(context.Context) error { return nil })
				},
			},
			{
				Name:     "admin",
				Usage:    "operate the service (organisations, agents, keys, wallets, pricing, gates, threads, ...); refuses while migrations are pending",
				Flags:    append([]cli.Flag{&cli.BoolFlag{Name: "json", Usage: "print one JSON object on stdout"}}, oneOffFlags()...),
				Commands: adminCommands(stdout, stderr),
			},
			{
				Name:  "health",
				Usage: "ask the running service on this machine whether it is ready (exit 0) or not (exit 1): the container's health check",
				Flags: append([]cli.Flag{
					&cli.StringFlag{Name: "url", Usage: "the readiness URL (default: /health/ready on --public-addr, on this machine)"},
					&cli.DurationFlag{Name: "timeout", Value: 3 * time.Second, Usage: "how long to wait for the answer"},
				}, healthFlags()...),
				Action: func(ctx context.Context, cmd *cli.Command) error { return health(ctx, cmd, stdout) },
			},
			{
				Name:  "version",
				Usage: "print the versions of the binary and its modules",
				Action: func(_ context.Context, cmd *cli.Command) error {
					fmt.Fprintf(stdout, "svc %s\n", Version)
					for _, d := range Catalog() {
						fmt.Fprintf(stdout, "  %s %s\n", d.ID, d.Version)
					}
					return nil
				},
			},
		},
	}
	usageErrorsOnOneLine(root)
	markRequired(root)
	return root
}

// usageErrorsOnOneLine makes a usage error (a missing required flag, a bad value) one line, like every
// other failure, instead of the help text: --help shows that.
func usageErrorsOnOneLine(cmd *cli.Command) {
	cmd.OnUsageError = func(_ context.Context, c *cli.Command, err error, _ bool) error {
		return fmt.Errorf("%w (see %q)", err, c.FullName()+" --help")
	}
	for _, sub := range cmd.Commands {
		usageErrorsOnOneLine(sub)
	}
}

// serve runs the service until SIGINT or SIGTERM, then drains in-flight requests.
func serve(ctx context.Context, cmd *cli.Command, stderr io.Writer) error {
	cfg, err := configFrom(cmd)
	if err != nil {
		return err
	}
	mods, err := Select(Catalog(), cfg.Modules)
	if err != nil {
		return err
	}
	log := NewLogger(cfg, stderr)
	var d *drain
	app := fx.New(Serve(cfg, log, mods), fx.Populate(&d))
	if err := app.Err(); err != nil {
		return err
	}
	// A signal while waiting for the database or migrating aborts start-up cleanly, too.
	sigCtx, stopSignals := signal.NotifyContext(ctx, syscall.SIGINT, syscall.SIGTERM)
	defer stopSignals()
	startCtx, cancel := context.WithTimeout(sigCtx, app.StartTimeout())
	defer cancel()
	if err := app.Start(startCtx); err != nil {
		if sigCtx.Err() != nil {
			return errors.New("stopped by a signal during start-up")
		}
		return err
	}
	log.Info("svc started", "version", Version, "modules", strings.Join(IDs(mods), ","))
	// fx and sigCtx both hear SIGINT and SIGTERM, whichever first; a listener that failed asks fx to
	// stop with a non-zero exit code, and then there is nothing to wait for.
	code := 0
	select {
	case <-sigCtx.Done():
	case sig := <-app.Wait():
		code = sig.ExitCode
	}
	if code == 0 {
		log.Info("stopping", "lame_duck", cfg.ShutdownDelay)
		lameDuck(ctx, d, cfg.ShutdownDelay)
	}
	stopCtx, cancel := context.WithTimeout(context.Background(), app.StopTimeout())
	defer cancel()
	if err := app.Stop(stopCtx); err != nil {
		return err
	}
	if code != 0 {
		return cli.Exit("a listener failed", code)
	}
	return nil
}

// lameDuck turns readiness to 503 and waits delay before the listeners stop accepting, so that load
// balancers take the replica out of rotation while it still answers; a second signal ends the wait.
func lameDuck(ctx context.Context, d *drain, delay time.Duration) {
	d.start()
	if delay <= 0 {
		return
	}
	again, stop := signal.NotifyContext(ctx, syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	t := time.NewTimer(delay)
	defer t.Stop()
	select {
	case <-t.C:
	case <-again.Done():
	}
}

// health asks a running service whether it is ready: GET /health/ready, exit 0 on 200, else a line
// saying why and exit 1. It is the image's health check (the image has no shell or curl).
func health(ctx context.Context, cmd *cli.Command, stdout io.Writer) error {
	target := cmd.String("url")
	if target == "" {
		cfg, err := configFrom(cmd)
		if err != nil {
			return err
		}
		host, port, err := net.SplitHostPort(cfg.PublicAddr)
		if err != nil {
			return fmt.Errorf("--public-addr %q: %w", cfg.PublicAddr, err)
		}
		if host == "" || host == "0.0.0.0" || host == "::" {
			host = "127.0.0.1"
		}
		target = "http://" + net.JoinHostPort(host, port) + readyPath
	}
	ctx, cancel := context.WithTimeout(ctx, cmd.Duration("timeout"))
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, target, nil)
	if err != nil {
		return fmt.Errorf("health: %w", err)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("health: %w", err)
	}
	defer res.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(res.Body, 4096))
	if res.StatusCode != http.StatusOK {
		var p struct {
			Detail string `json:"detail"`
		}
		_ = json.Unmarshal(body, &p)
		return cli.Exit(fmt.Sprintf("not ready: %s %s", res.Status, p.Detail), 1)
	}
	fmt.Fprintln(stdout, "ready")
	return nil
}

// run starts the application without listeners (database ready, migrations applied unless
// --no-migrate), calls fn, and stops.
func run(ctx context.Context, cmd *cli.Command, stderr io.Writer, cfg Config, fn func(context.Context) error, extra ...fx.Option) error {
	mods, err := Select(Catalog(), cfg.Modules)
	if err != nil {
		return err
	}
	if cfg.LogLevel == DefaultConfig().LogLevel && !cmd.IsSet("log-level") {
		cfg.LogLevel = "warn" // one-shot commands print their result, not the lifecycle
	}
	app := fx.New(Core(cfg, NewLogger(cfg, stderr), mods), fx.Options(extra...))
	if err := app.Err(); err != nil {
		return err
	}
	startCtx, cancel := context.WithTimeout(ctx, app.StartTimeout())
	defer cancel()
	if err := app.Start(startCtx); err != nil {
		return err
	}
	runErr := fn(ctx)
	stopCtx, cancelStop := context.WithTimeout(context.Background(), app.StopTimeout())
	defer cancelStop()
	return errors.Join(runErr, app.Stop(stopCtx))
}

// Invoker is what an admin command calls to run with its module's services: fn's first parameter is a
// context.Context, its others are taken from the application, and it returns an error. It never
// migrates: while an enabled module has a pending migration it refuses, naming `svc migrate`.
func Invoker(stderr io.Writer) plugin.Invoke {
	return invoker(stderr, true, "")
}

// invoker is Invoker; with refusePending false it also runs on a database with pending migrations
// (for commands that only inspect it, like `admin modules`, or copy it, like a backup). With a module,
// the command is that module's: while the deployment leaves it out, the command says so (it could not
// find its services).
func invoker(stderr io.Writer, refusePending bool, module string) plugin.Invoke {
	return func(ctx context.Context, cmd *cli.Command, fn any) error {
		if err := plainArguments(cmd); err != nil {
			return err
		}
		cfg, err := configFrom(cmd)
		if err != nil {
			return err
		}
		if module != "" && len(cfg.Modules) > 0 && !slices.Contains(cfg.Modules, module) { // none named: all
			return fmt.Errorf("module %s is not enabled here: add it to --modules (SVC_MODULES=%s)", module, strings.Join(cfg.Modules, ","))
		}
		cfg.NoMigrate = true
		call, deps, err := bind(fn)
		if err != nil {
			return err
		}
		var opts []fx.Option
		if refusePending {
			opts = append(opts, fx.Invoke(refuseWhilePending))
		}
		return run(ctx, cmd, stderr, cfg, call, append(opts, fx.Invoke(deps))...)
	}
}

var (
	contextType = reflect.TypeFor[context.Context]()
	errorType   = reflect.TypeFor[error]()
)

// bind splits fn(ctx, deps...) error into an fx invocation that captures deps and a call that runs
// fn with them once the application has started.
func bind(fn any) (call func(context.Context) error, capture any, err error) {
	fv := reflect.ValueOf(fn)
	ft := fv.Type()
	if ft.Kind() != reflect.Func || ft.NumIn() < 1 || ft.In(0) != contextType || ft.NumOut() != 1 || ft.Out(0) != errorType {
		return nil, nil, fmt.Errorf("admin: %s is not func(context.Context, ...) error", ft)
	}
	in := make([]reflect.Type, ft.NumIn()-1)
	for i := range in {
		in[i] = ft.In(i + 1)
	}
	var deps []reflect.Value
	capture = reflect.MakeFunc(reflect.FuncOf(in, nil, false), func(args []reflect.Value) []reflect.Value {
		deps = args
		return nil
	}).Interface()
	call = func(ctx context.Context) error {
		out := fv.Call(append([]reflect.Value{reflect.ValueOf(ctx)}, deps...))
		err, _ := out[0].Interface().(error)
		return err
	}
	return call, capture, nil
}

// adminCommands are the host's own admin commands and those of every module built in.
func adminCommands(stdout, stderr io.Writer) []*cli.Command {
	cmds := []*cli.Command{{
		Name:  "modules",
		Usage: "list the enabled modules with their versions, applied and pending migrations, and the host's own (jobs) (it runs while migrations are pending)",
		Action: func(ctx context.Context, cmd *cli.Command) error {
			return invoker(stderr, false, "")(ctx, cmd, func(ctx context.Context, db *gorm.DB, dep *plugin.Deployment, sets migrationSets) error {
				type row struct {
					ID         string `json:"id"`
					Version    string `json:"version"`
					Migrations int64  `json:"migrations_applied"`
					Pending    int    `json:"migrations_pending"`
				}
				pending, err := pendingMigrations(ctx, db, sets.Migrations)
				if err != nil {
					return err
				}
				// The enabled modules in the catalog's order, then the host's own migrations (the job
				// runner's tables), which are pending like any module's and refuse the other commands alike.
				versions := map[string]string{}
				for _, d := range Catalog() {
					versions[d.ID] = d.Version
				}
				var ids []string
				for _, d := range Catalog() {
					if slices.Contains(dep.Modules, d.ID) {
						ids = append(ids, d.ID)
					}
				}
				for _, set := range sets.Migrations {
					if _, module := versions[set.Module]; !module {
						ids, versions[set.Module] = append(ids, set.Module), Version
					}
				}
				rows := []row{}
				for _, id := range ids {
					r := row{ID: id, Version: versions[id], Pending: pending[id]}
					if db.Migrator().HasTable(database.HistoryTable(id)) {
						if err := db.WithContext(ctx).Table(database.HistoryTable(id)).Count(&r.Migrations).Error; err != nil {
							return fmt.Errorf("count migrations of %s: %w", id, err)
						}
					}
					rows = append(rows, r)
				}
				return plugin.Print(cmd, stdout, map[string]any{"modules": rows})
			})
		},
	}}
	cmds = append(cmds, backupCommand(stdout), seedCommand(stdout, stderr))
	for _, d := range Catalog() {
		if d.Admin != nil {
			cmds = append(cmds, d.Admin(invoker(stderr, true, d.ID))...)
		}
	}
	return cmds
}

// plainArguments refuses a flag value or argument that is not valid UTF-8 or holds a NUL: each ends up
// in a query or a row, and PostgreSQL answers such text with an encoding error rather than "not found".
func plainArguments(cmd *cli.Command) error {
	plain := func(s string) bool { return utf8.ValidString(s) && !strings.ContainsRune(s, 0) }
	for _, name := range cmd.FlagNames() {
		var values []string
		switch v := cmd.Value(name).(type) {
		case string:
			values = []string{v}
		case []string:
			values = v
		}
		for _, v := range values {
			if !plain(v) {
				return problem.Newf(problem.ValidationFailed, "--%s is not valid UTF-8 text (or holds a NUL byte)", name)
			}
		}
	}
	for i, a := range cmd.Args().Slice() {
		if !plain(a) {
			return problem.Newf(problem.ValidationFailed, "argument %d is not valid UTF-8 text (or holds a NUL byte)", i+1)
		}
	}
	return nil
}

// migrationSets are the enabled modules' migrations, as an admin command's dependency.
type migrationSets struct {
	fx.In
	Migrations []plugin.Migrations `group:"svc.migrations"`
}

// oneLine reports the cause of err on one line: fx and dig wrap a constructor's error in the story of
// how it was reached, which operators do not need.
func oneLine(err error) string {
	return strings.Join(strings.Fields(dig.RootCause(err).Error()), " ")
}
