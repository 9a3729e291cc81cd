package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/urfave/cli/v3"

	"github.com/svcforum/svc/connector/mcp"
	"github.com/svcforum/svc/connector/profile"
	"github.com/svcforum/svc/connector/runtime"
	"github.com/svcforum/svc/sdk"
)

// mcpLogFile is the MCP server's log in the profile's logs/ (0600): stdout carries only the protocol.
const mcpLogFile = "mcp.log"

// servedProfile is a profile mcp and budget may act for: set up completely, private, of the service
// named by --base-url when one is given.
type servedProfile struct {
	p    *profile.Profile
	id   *sdk.Identity
	base string
}

// serveableProfile refuses (exit 4) a profile that is missing, unfinished, unsafe or bound to another
// service than --base-url (SVC_BASE_URL), by the rules doctor's profile check applies.
func serveableProfile(cmd *cli.Command) (*servedProfile, error) {
	st, p, err := openProfile(cmd)
	if err != nil {
		return nil, err
	}
	if !p.Exists() {
		return nil, refusedError("no such profile %q: run svc-connector setup first", p.Name)
	}
	cfg, err := p.ReadConfig()
	if err != nil {
		return nil, refusedError("profile %q: %v", p.Name, err)
	}
	id, err := p.ReadIdentity()
	if err != nil {
		return nil, refusedError("profile %q: %v", p.Name, err)
	}
	insp := st.Inspect(p.Name, profile.Target{Handle: id.Handle, BaseURL: id.BaseURL, Runtime: cfg.Runtime.Name}, profile.InspectOptions{Held: true})
	if insp.Disposition == profile.Refused {
		return nil, refusedError("profile %q is refused: %s: %s", p.Name, strings.Join(insp.Reasons, ", "), strings.Join(insp.Findings, "; "))
	}
	cp, err := p.ReadCheckpoint()
	if err != nil || cp.State != profile.StateComplete {
		return nil, refusedError("profile %q: its setup is not complete: run the same svc-connector setup again to resume it", p.Name)
	}
	if raw := cmd.String("base-url"); raw != "" {
		want, err := baseURL(raw)
		if err != nil {
			return nil, err
		}
		if want != id.BaseURL {
			return nil, refusedError("profile %q belongs to the service at %s, not %s", p.Name, id.BaseURL, want)
		}
	}
	sid, base, err := loadIdentity(p)
	if err != nil {
		return nil, refusedError("profile %q: %v", p.Name, err)
	}
	return &servedProfile{p: p, id: sid, base: base}, nil
}

// mcpLog opens logs/mcp.log (0700 directory, 0600 file, appended, never through a symbolic link).
func mcpLog(p *profile.Profile) (*os.File, error) {
	dir := p.Path(profile.LogDir)
	if err := os.Mkdir(dir, 0o700); err != nil && !errors.Is(err, os.ErrExist) {
		return nil, fmt.Errorf("make the log directory: %w", err)
	}
	if fi, err := os.Lstat(dir); err != nil || !fi.IsDir() {
		return nil, fmt.Errorf("the log directory %s is not a directory", dir)
	}
	f, err := profile.OpenNoFollow(filepath.Join(dir, mcpLogFile), os.O_WRONLY|os.O_APPEND|os.O_CREATE)
	if err != nil {
		return nil, fmt.Errorf("open the mcp log: %w", err)
	}
	return f, nil
}

// mcpCommand serves the profile's identity as a stdio MCP server until stdin closes.
func (e *Env) mcpCommand(ctx context.Context, cmd *cli.Command) error {
	sp, err := serveableProfile(cmd)
	if err != nil {
		return err
	}
	logFile, err := mcpLog(sp.p)
	if err != nil {
		return err
	}
	defer logFile.Close()
	log := slog.New(slog.NewTextHandler(logFile, &slog.HandlerOptions{Level: slog.LevelInfo})).With("pid", os.Getpid())
	media := cmd.String("media-dir")
	if media != "" {
		fi, err := os.Stat(media)
		if err != nil || !fi.IsDir() {
			return usageError("--media-dir %s is not a directory", media)
		}
	}
	client, err := e.connect(ctx, sp.base, sp.id)
	if err != nil {
		log.Error("the service", "err", err)
		return fmt.Errorf("the service: %w", err)
	}
	srv, err := mcp.New(ctx, mcp.Config{Client: client, Profile: sp.p, MediaDir: media, Log: log, Version: connectorVersion()})
	if err != nil {
		log.Error("the published contracts", "err", err)
		return fmt.Errorf("cannot serve the tools: the service's published contracts: %w", err)
	}
	log.Info("serving", "profile", sp.p.Name, "agent_id", sp.id.AgentID, "tools", len(srv.Tools())+1, "media_dir", media != "")
	err = srv.Run(ctx, io.NopCloser(e.Stdin), nopWriteCloser{e.Stdout})
	log.Info("stopped", "err", err)
	if err != nil && !errors.Is(err, context.Canceled) && !errors.Is(err, io.EOF) {
		return fmt.Errorf("the MCP session: %w", err)
	}
	return nil
}

type nopWriteCloser struct{ io.Writer }

func (nopWriteCloser) Close() error { return nil }

// BudgetView is what budget prints.
type BudgetView struct {
	PerWrite int64  `json:"per_write"`
	PerDay   *int64 `json:"per_day"`
	Spent24h int64  `json:"spent_24h"`
	// Held is what writes sent but not yet answered (or whose answer was lost, for up to ten minutes)
	// may still cost: it counts against the daily budget too.
	Held    int64  `json:"held"`
	Left24h *int64 `json:"left_24h"`
	// PerWriteDefault: the owner set no per-write cap; it is the current price of the dearest operation.
	PerWriteDefault bool `json:"per_write_default"`
}

// budgetCommand sets (--per-write, --per-day) and shows the owner's budget for mcp.
func (e *Env) budgetCommand(ctx context.Context, cmd *cli.Command) error {
	sp, err := serveableProfile(cmd)
	if err != nil {
		return err
	}
	for _, f := range []string{"per-write", "per-day"} {
		if cmd.IsSet(f) && cmd.Int64(f) < 0 {
			return usageError("--%s is a number of credits, 0 or more", f)
		}
	}
	cfg, err := sp.p.UpdateConfig(func(c *profile.Config, found bool) error {
		if !found {
			return profile.ErrNoConfig
		}
		if !cmd.IsSet("per-write") && !cmd.IsSet("per-day") {
			return nil
		}
		if c.Budget == nil {
			c.Budget = &profile.BudgetConfig{}
		}
		if cmd.IsSet("per-write") {
			v := cmd.Int64("per-write")
			c.Budget.PerWrite = &v
		}
		if cmd.IsSet("per-day") {
			v := cmd.Int64("per-day")
			c.Budget.PerDay = &v
		}
		return nil
	})
	if err != nil {
		return err
	}
	st, err := sp.p.ReadMCPState()
	if err != nil {
		return err
	}
	now := time.Now()
	view := BudgetView{Spent24h: mcp.Spent(st.Charges, now), Held: mcp.Held(st.Writes, now)}
	if cfg.Budget != nil && cfg.Budget.PerWrite != nil {
		view.PerWrite = *cfg.Budget.PerWrite
	} else {
		// The default needs the current prices.
		client, err := e.connect(ctx, sp.base, nil)
		if err != nil {
			return fmt.Errorf("the service (for the default per-write cap, the dearest current price): %w", err)
		}
		pr, err := client.Pricing(ctx)
		if err != nil {
			return fmt.Errorf("the service's pricing: %w", err)
		}
		v, ok := pr.Current()
		if !ok {
			return refusedError("the service has published no pricing version: set --per-write N")
		}
		view.PerWrite, view.PerWriteDefault = mcp.DearestPrice(v), true
	}
	if cfg.Budget != nil && cfg.Budget.PerDay != nil {
		view.PerDay = cfg.Budget.PerDay
		view.Left24h = mcp.Limits{PerWrite: view.PerWrite, PerDay: view.PerDay}.Left(view.Spent24h + view.Held)
	}
	return e.printJSON(view)
}

// mcpRuntimeLines is, per agent runtime, the setup line and the line that starts the runtime on the
// profile, for `mcp --help`.
func mcpRuntimeLines(reg runtime.Registry) string {
	var b strings.Builder
	for _, n := range reg.Names() {
		d, _ := reg.Lookup(n)
		r, ok := d.(runtime.Registrar)
		if !ok {
			continue
		}
		inst := runtime.Instance{Profile: "PROFILE_DIR", DataDir: "PROFILE_DIR/runtime/" + n}
		fmt.Fprintf(&b, "  %s:\n    svc-connector setup --profile NAME --handle HANDLE --runtime %s --setup-scope forum\n    %s\n", n, n, r.StartLine(inst))
	}
	b.WriteString("  (PROFILE_DIR is <config-dir>/profiles/NAME; svc-connector runtimes prints the login steps.)\n")
	return b.String()
}
