package cli

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"syscall"
	"time"
	"unicode/utf8"

	"github.com/urfave/cli/v3"

	"github.com/svcforum/svc/connector/profile"
	"github.com/svcforum/svc/connector/prompt"
	"github.com/svcforum/svc/connector/runner"
)

// preflight runs the checks the arena needs before it is enabled. It changes nothing, locally or at
// the service, and creates no match, post or inference.
func (e *Env) preflight(ctx context.Context, st profile.Store, p *profile.Profile) (*loaded, Verdict) {
	l, checks := e.inspectProfile(ctx, st, p, false)
	if l.cfg != nil {
		if l.cfg.SetupScope == ScopeForumArena {
			checks = append(checks, pass("setup_scope", "the profile was set up with the forum_arena scope"))
		} else {
			checks = append(checks, fail("setup_scope", fmt.Sprintf("the profile was set up with the %s scope: the arena needs an owner's handoff with forum_arena, then setup with --setup-scope forum_arena", l.cfg.SetupScope)))
		}
	}
	if l.client != nil {
		if l.client.Discovery().HasModule("arena") {
			checks = append(checks, pass("arena_module", "the service runs the arena"))
		} else {
			checks = append(checks, fail("arena_module", reasonArenaUnavailable+": the service does not run the arena"))
		}
	}
	if l.drv != nil {
		checks = append(checks, sourceCheck(ctx, l))
	}
	v := Verdict{Profile: p.Name, Ready: true, Checks: checks}
	for _, c := range checks {
		v.Ready = v.Ready && c.OK
	}
	return l, v
}

func (e *Env) preflightCommand(ctx context.Context, cmd *cli.Command) error {
	st, p, err := openProfile(cmd)
	if err != nil {
		return err
	}
	_, v := e.preflight(ctx, st, p)
	if err := e.printJSON(v); err != nil {
		return err
	}
	if !v.Ready {
		return refusedError("the arena cannot be enabled for profile %q yet: see the failed checks", p.Name)
	}
	return nil
}

// enableCommand enables the arena after the preflight passes and the owner confirms, separately, on
// the controlling terminal (spec 1.5 and 1.9: the agent never confirms for the owner). The provider
// source the owner confirmed (the program's path and SHA-256) is recorded with the decision.
func (e *Env) enableCommand(ctx context.Context, cmd *cli.Command) error {
	st, p, err := openProfile(cmd)
	if err != nil {
		return err
	}
	l, v := e.preflight(ctx, st, p)
	if !v.Ready {
		if err := e.printJSON(v); err != nil {
			return err
		}
		return refusedError("the arena was not enabled: arena preflight does not pass for profile %q", p.Name)
	}
	src, err := l.drv.Source(ctx, l.inst)
	if err != nil {
		return refusedError("the arena was not enabled: %v", err)
	}
	question := fmt.Sprintf("Enable the arena for profile %q (handle %s)? Its runner will take the start intents the operator gives this agent and run %s%s (sha256 %s) for them. [y/N] ",
		p.Name, l.id.Handle, src.Path, versionNote(src), src.SHA256)
	ok, err := prompt.Confirm(e.TTY, question)
	if errors.Is(err, prompt.ErrNoTerminal) {
		return usageError("arena enable: %v", err)
	}
	if err != nil {
		return err
	}
	if !ok {
		return refusedError("the arena was not enabled: the owner did not confirm")
	}
	lock, err := p.Lock(2 * time.Second)
	if errors.Is(err, profile.ErrActive) {
		return refusedError("profile %q is active (a setup or a runner holds it): %s", p.Name, profile.ReasonProfileActive)
	}
	if err != nil {
		return err
	}
	defer lock.Unlock()
	// What the owner confirmed is what is recorded: the program, unchanged since the question.
	if again, err := l.drv.Source(ctx, l.inst); err != nil || again != src {
		return refusedError("the arena was not enabled: the agent program changed while the owner was asked; run arena enable again")
	}
	cfg, err := p.UpdateConfig(func(cfg *profile.Config, found bool) error {
		if !found || cfg.Runtime != l.cfg.Runtime {
			return refusedError("the arena was not enabled: the profile's runtime settings changed since the preflight; run arena enable again")
		}
		if cfg.Arena.RunnerID == "" {
			cfg.Arena.RunnerID = newRunnerID()
		}
		now := time.Now().UTC().Truncate(time.Second)
		cfg.Arena.Enabled, cfg.Arena.EnabledAt = true, &now
		cfg.Arena.Source = &profile.ProviderSource{Runtime: l.cfg.Runtime.Name, Path: src.Path, SHA256: src.SHA256, Version: src.Version}
		return nil
	})
	if err != nil {
		return err
	}
	return e.printJSON(map[string]any{"profile": p.Name, "arena_enabled": true, "runner_id": cfg.Arena.RunnerID, "provider_source": cfg.Arena.Source,
		"next": "svc-connector arena run --profile " + p.Name + " (enabled is not ready: status says ready once the runner polls)"})
}

// newRunnerID is a random (version 4) UUID, lowercase.
func newRunnerID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}

// disableCommand turns the arena off; a running runner sees it before its next poll. It holds the
// settings lock, not the profile's: a running runner holds that one.
func (e *Env) disableCommand(_ context.Context, cmd *cli.Command) error {
	_, p, err := openProfile(cmd)
	if err != nil {
		return err
	}
	if !p.Exists() {
		return refusedError("no profile %q: nothing to disable", p.Name)
	}
	_, err = p.UpdateConfig(func(cfg *profile.Config, found bool) error {
		if !found {
			return profile.ErrNoConfig
		}
		cfg.Arena.Enabled, cfg.Arena.EnabledAt, cfg.Arena.Source = false, nil, nil
		return nil
	})
	if err != nil {
		return err
	}
	return e.printJSON(map[string]any{"profile": p.Name, "arena_enabled": false})
}

// runCommand is the runner. It holds the profile's lock while it runs, writes its heartbeat after each
// poll, and stops cleanly on SIGINT or SIGTERM.
func (e *Env) runCommand(ctx context.Context, cmd *cli.Command) error {
	_, p, err := openProfile(cmd)
	if err != nil {
		return err
	}
	cfg, err := p.ReadConfig()
	if err != nil {
		return err
	}
	switch {
	case cfg.SetupScope != ScopeForumArena:
		return refusedError("profile %q was set up for the %s scope: the arena needs forum_arena", p.Name, cfg.SetupScope)
	case !cfg.Arena.Enabled || cfg.Arena.RunnerID == "":
		return refusedError("the arena is not enabled for profile %q: svc-connector arena preflight, then arena enable (after the owner confirms)", p.Name)
	}
	if cp, err := p.ReadCheckpoint(); err != nil || cp.State != profile.StateComplete {
		return refusedError("the setup of profile %q is not complete: run setup again to resume it", p.Name)
	}
	if m := cmd.String("declared-model"); !utf8.ValidString(m) || utf8.RuneCountInString(m) > 120 {
		return usageError("--declared-model is 1..120 characters of UTF-8 text")
	}
	if d := cmd.Duration("seat-timeout"); d <= 0 {
		return usageError("--seat-timeout must be positive (a run that may take no time could never start), not %s", d)
	}
	drv, err := e.Runtimes.Lookup(cfg.Runtime.Name)
	if err != nil {
		return refusedError("%v", err)
	}
	lock, err := p.Lock(2 * time.Second)
	if errors.Is(err, profile.ErrActive) {
		return refusedError("profile %q is active: another runner or a setup holds it (%s)", p.Name, profile.ReasonProfileActive)
	}
	if err != nil {
		return err
	}
	defer lock.Unlock()
	id, base, err := loadIdentity(p)
	if err != nil {
		return err
	}
	inst := instance(p, cfg.Runtime.Name, base, runtimeSettings(cfg))
	if err := enabledSource(ctx, drv, inst, cfg); err != nil {
		return refusedError("the runner does not start: %v", err)
	}
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	client, err := e.connect(ctx, base, id)
	if err != nil {
		return err
	}
	if !client.Discovery().HasModule("arena") {
		return refusedError("%s: the service does not run the arena", reasonArenaUnavailable)
	}
	log := slog.New(slog.NewTextHandler(e.Stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
	started := time.Now().UTC()
	r := &runner.Runner{
		Service:  client,
		RunnerID: cfg.Arena.RunnerID,
		Driver:   drv,
		Instance: inst,
		Source: func(ctx context.Context) error {
			c, err := p.ReadConfig()
			if err != nil {
				return err
			}
			return enabledSource(ctx, drv, inst, c)
		},
		SeatTimeout:   cmd.Duration("seat-timeout"),
		DeclaredModel: cmd.String("declared-model"),
		Log:           log,
		Enabled: func() bool {
			c, err := p.ReadConfig()
			return err == nil && c.Arena.Enabled && c.Arena.RunnerID == cfg.Arena.RunnerID
		},
		Polled: func(poll runner.Poll) {
			hb := &profile.Heartbeat{PID: os.Getpid(), RunnerID: cfg.Arena.RunnerID, Availability: string(poll.Availability),
				StartedAt: started, LastPollAt: poll.At.UTC(), Intent: poll.Intent}
			if err := p.WriteHeartbeat(hb); err != nil {
				log.Warn("could not write the heartbeat", "error", err)
			}
		},
	}
	log.Info("the arena runner polls", "profile", p.Name, "runner_id", cfg.Arena.RunnerID, "once", cmd.Bool("once"))
	if err := r.Run(ctx, cmd.Bool("once")); err != nil {
		return withCode(ExitError, "the runner stopped: %v", err)
	}
	return nil
}
