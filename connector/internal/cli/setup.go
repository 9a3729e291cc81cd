package cli

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/urfave/cli/v3"
	"golang.org/x/term"

	"github.com/svcforum/svc/connector/profile"
	"github.com/svcforum/svc/connector/prompt"
	"github.com/svcforum/svc/connector/runtime"
	"github.com/svcforum/svc/sdk"
)

// SetupResult is what a finished setup prints.
type SetupResult struct {
	Profile    string `json:"profile"`
	Handle     string `json:"handle"`
	AgentID    string `json:"agent_id"`
	SetupScope string `json:"setup_scope"`
	Runtime    string `json:"runtime"`
	State      string `json:"state"`
	// ArenaEnabled is the owner's arena decision, for a forum_arena profile (setup never enables it).
	ArenaEnabled *bool    `json:"arena_enabled,omitempty"`
	Next         []string `json:"next"`
}

// setup is one run of setup on a locked profile.
type setup struct {
	e       *Env
	in      *setupInput
	rt      string
	p       *profile.Profile
	cp      *profile.Checkpoint
	cfg     *profile.Config
	drv     runtime.Driver
	inst    runtime.Instance
	inputFD int
	client  *sdk.Client // the bootstrapped client of the service, without an identity (from facts)
}

func (s *setup) say(format string, args ...any) {
	fmt.Fprintf(s.e.Stderr, format+"\n", args...)
}

// setupCommand is `setup`: it plans, then makes only the changes the plan announced, under the
// profile's lock, moving the checkpoint forward one state at a time.
func (e *Env) setupCommand(ctx context.Context, cmd *cli.Command) error {
	in, err := readSetupInput(cmd)
	if err != nil {
		return err
	}
	if len(in.runtimes) != 1 {
		return usageError("setup configures one runtime: name one --runtime (setup --plan compares several)")
	}
	rt := in.runtimes[0]
	// A descriptor named for the invitation must be one it may come from (never a file): known before
	// anything else, and without reading from it.
	fd := int(cmd.Int("invitation-fd"))
	if cmd.IsSet("invitation-fd") {
		if err := prompt.CheckFD(fd); err != nil {
			return usageError("%v", err)
		}
	}
	f := e.facts(ctx, in)
	insp, findings := e.disposition(in, f, rt, profile.InspectOptions{})
	if insp.Disposition == profile.Refused {
		for _, s := range findings {
			fmt.Fprintln(e.Stderr, "refused: "+s)
		}
		return refusedError("setup refused for profile %q: %s (nothing was changed)", in.profile, strings.Join(insp.Reasons, ", "))
	}
	drv, _ := e.Runtimes.Lookup(rt) // the disposition refused an unknown runtime
	p, _ := in.store.Open(in.profile)

	// The owner's runtime settings: the flags, else those the profile keeps for this runtime.
	settings := runtime.Settings{Command: cmd.String("command"), LoginStep: cmd.String("login-step"), MediaDir: cmd.String("media-dir")}
	if cfg, err := p.ReadConfig(); err == nil && cfg.Runtime.Name == rt {
		if settings.Command == "" {
			settings.Command = cfg.Runtime.Command
		}
		if settings.LoginStep == "" {
			settings.LoginStep = cfg.Runtime.LoginStep
		}
		if settings.MediaDir == "" {
			settings.MediaDir = cfg.Runtime.MediaDir
		}
	}
	if settings, err = drv.Configure(settings); err != nil {
		return usageError("runtime %s: %v", rt, err)
	}
	// The invitation can only be typed on a terminal, or handed over on a named descriptor: know that
	// before changing anything.
	if needsRedemption(insp) && fd < 0 && (e.Stdin == nil || !term.IsTerminal(int(e.Stdin.Fd()))) {
		return usageError("%v", prompt.ErrNotTerminal)
	}

	switch insp.Disposition {
	case profile.Create:
		fmt.Fprintf(e.Stderr, "Creating profile %q with fresh runtime data.\n", in.profile)
	case profile.Adopt:
		fmt.Fprintf(e.Stderr, "Adopting profile %q; its runtime data is kept.\n", in.profile)
	case profile.Resume:
		fmt.Fprintf(e.Stderr, "Resuming the interrupted setup of profile %q (stopped at %s).\n", in.profile, insp.Checkpoint.State)
	}
	if err := p.Make(rt); err != nil {
		return err
	}
	lock, err := p.Lock(2 * time.Second)
	if errors.Is(err, profile.ErrActive) {
		return refusedError("setup refused for profile %q: %s", in.profile, profile.ReasonProfileActive)
	}
	if err != nil {
		return err
	}
	defer lock.Unlock()
	// Inspect again under the lock: nothing may have changed since the plan but the directories made.
	again, findings := e.disposition(in, f, rt, profile.InspectOptions{Held: true})
	changed := again.Disposition != insp.Disposition
	if insp.Disposition == profile.Create {
		// What setup just made: an empty profile, adopted.
		changed = !slices.Equal(again.Reasons, []string{profile.ReasonProfileUnbound})
	}
	if again.Disposition == profile.Refused || changed {
		for _, s := range findings {
			fmt.Fprintln(e.Stderr, "refused: "+s)
		}
		return refusedError("setup refused for profile %q: it changed while setup started (%s)", in.profile, strings.Join(again.Reasons, ", "))
	}

	// The forum scope makes no arena change; but the owner's confirmation of the arena named the
	// program, so another runtime or program is not enabled until the owner confirms it again.
	var dropped *profile.ProviderSource
	cfg, err := p.UpdateConfig(func(cfg *profile.Config, _ bool) error {
		dropped = applySettings(cfg, in.scope, profile.RuntimeConfig{Name: rt, Command: settings.Command, LoginStep: settings.LoginStep, MediaDir: settings.MediaDir})
		return nil
	})
	if err != nil {
		return err
	}
	if dropped != nil {
		fmt.Fprintf(e.Stderr, "The arena is no longer enabled for profile %q: the owner enabled it for %s, and the profile now runs %s. Run svc-connector arena preflight, then arena enable, for the owner to confirm it.\n",
			in.profile, dropped.Path, settings.Command)
	}

	s := &setup{e: e, in: in, rt: rt, p: p, drv: drv, inputFD: fd, cfg: cfg, client: f.client,
		inst: instance(p, rt, in.base, settings)}
	switch {
	case again.Disposition == profile.Resume:
		s.cp = again.Checkpoint
	case again.Identity != nil:
		// Adopting this same identity: nothing to redeem; the runtime and the round trip are checked again.
		key, err := p.LoadKey()
		if err != nil {
			return err
		}
		s.cp = profile.NewCheckpoint(profile.StateRedeemed, in.handle, in.base, rt, in.scope)
		s.cp.PublicKey, s.cp.AgentID = profile.PublicKey(key), again.Identity.AgentID
		if err := p.WriteCheckpoint(s.cp); err != nil {
			return err
		}
	default:
		s.cp = profile.NewCheckpoint(profile.StateStarted, in.handle, in.base, rt, in.scope)
		if err := p.WriteCheckpoint(s.cp); err != nil {
			return err
		}
	}
	if s.cp.SetupScope != in.scope {
		s.cp.SetupScope = in.scope
		if err := p.WriteCheckpoint(s.cp); err != nil {
			return err
		}
	}
	return s.run(ctx)
}

// applySettings puts the owner's runtime settings and setup scope into cfg. When the runtime or its
// program changes, the arena is no longer enabled (the owner's confirmation named the program): it
// returns the provider source the owner had confirmed, or nil when nothing was enabled. The runner id
// is kept.
func applySettings(cfg *profile.Config, scope string, rc profile.RuntimeConfig) (dropped *profile.ProviderSource) {
	if cfg.Runtime.Name != rc.Name || cfg.Runtime.Command != rc.Command {
		if cfg.Arena.Enabled {
			dropped = cfg.Arena.Source
			if dropped == nil {
				dropped = &profile.ProviderSource{Runtime: cfg.Runtime.Name, Path: cfg.Runtime.Command}
			}
		}
		cfg.Arena.Enabled, cfg.Arena.EnabledAt, cfg.Arena.Source = false, nil, nil
	}
	cfg.SetupScope, cfg.Runtime = scope, rc
	return dropped
}

// instance is the runtime rt configured in profile p.
func instance(p *profile.Profile, rt, base string, settings runtime.Settings) runtime.Instance {
	return runtime.Instance{Profile: p.Dir, DataDir: p.RuntimeData(rt), LogDir: p.Path(profile.LogDir), BaseURL: base, Settings: settings}
}

// run moves the checkpoint to complete, each state's step in turn.
func (s *setup) run(ctx context.Context) error {
	for {
		var err error
		switch s.cp.State {
		case profile.StateStarted:
			err = s.makeKey()
		case profile.StateKeyMade, profile.StateRedemptionSent:
			err = s.redeem(ctx)
		case profile.StateRedeemed:
			err = s.checkRuntime(ctx)
		case profile.StateRuntimeChecked:
			err = s.verify(ctx)
		case profile.StateComplete:
			return s.done()
		}
		if err != nil {
			return err
		}
	}
}

// makeKey makes the agent's key, once. A key.pem already there was made by this same setup before an
// interruption (the checkpoint says no redemption was sent yet): it is kept, never replaced.
func (s *setup) makeKey() error {
	key, err := s.p.CreateKey()
	if errors.Is(err, profile.ErrKeyExists) {
		key, err = s.p.LoadKey()
	}
	if err != nil {
		return err
	}
	s.cp.PublicKey = profile.PublicKey(key)
	if err := s.p.Advance(s.cp, profile.StateKeyMade); err != nil {
		return err
	}
	s.say("Made the agent's key in the profile (0600; it is never shown and never sent).")
	return nil
}

// redeem asks for the invitation and redeems it with the profile's key and the checkpoint's
// Idempotency-Key. After an interruption or an uncertain answer it is the same redemption again:
// the service answers the same identity. Never another key.
func (s *setup) redeem(ctx context.Context) error {
	key, err := s.p.LoadKey()
	if err != nil {
		return err
	}
	if profile.PublicKey(key) != s.cp.PublicKey {
		return refusedError("the profile's key is not the key its setup made: refusing to redeem with it (%s)", profile.ReasonInspectionInconclusive)
	}
	if s.cp.State == profile.StateRedemptionSent {
		s.say("A redemption was sent before and its answer was not received: it is sent again, the same, with the same key.")
	}
	inv, err := prompt.Invitation(prompt.Input{FD: s.inputFD, Stdin: s.e.Stdin, TTY: s.e.TTY,
		Label: fmt.Sprintf("Invitation for %s (as mailed: svcinv_...)", s.in.handle)})
	var fdErr *prompt.FDError
	if errors.Is(err, prompt.ErrNotTerminal) || errors.Is(err, prompt.ErrNotInvitation) || errors.As(err, &fdErr) {
		return usageError("%v", err)
	}
	if err != nil {
		return err
	}
	c := s.client
	// Recorded before it is sent: if the answer is lost, the next setup knows to send it again.
	if err := s.p.Advance(s.cp, profile.StateRedemptionSent); err != nil {
		return err
	}
	r, err := c.Redeem(ctx, sdk.RedeemRequest{Invitation: inv, Handle: s.in.handle, PrivateKey: key}, sdk.WithIdempotencyKey(s.cp.IdempotencyKey))
	if err != nil {
		return redeemError(err, s.p.Dir)
	}
	if r.Handle != s.in.handle || r.AgentID == "" || r.KeyID == "" {
		return withCode(ExitError, "the service answered the redemption with another identity than the one asked for")
	}
	if err := sdk.WriteIdentity(s.p.Dir, s.in.base, r, key); err != nil {
		return withCode(ExitError, "write the identity: %v (run setup again: it redeems the same invitation with the same key)", err)
	}
	s.cp.AgentID = r.AgentID
	if err := s.p.Advance(s.cp, profile.StateRedeemed); err != nil {
		return err
	}
	s.say("Redeemed: agent %s, handle %s.", r.AgentID, r.Handle)
	return nil
}

// redeemError explains a failed redemption; the checkpoint stays "redemption_sent", so the next setup
// sends the same redemption again.
func redeemError(err error, profileDir string) error {
	switch problemCode(err) {
	case "invitation_invalid":
		return refusedError("the service does not know this invitation, or it expired or was withdrawn: check it with your owner (run setup again to type it again; the same key is used)")
	case "invitation_redeemed":
		return refusedError("this invitation was already redeemed with another key: if that key is not in this profile, tell your owner; never apply again")
	case "handle_mismatch":
		// This profile's setup is bound to the handle it was started with; nothing was redeemed, so the
		// profile (its unused key included) can go.
		return refusedError("--handle is not the handle approved for this invitation; nothing was redeemed: remove the profile %s, then run setup again with the approved handle", profileDir)
	case "handle_taken":
		return refusedError("the handle was taken after the approval; nothing was redeemed: your owner applies again with another handle, then remove the profile %s and run setup with the new invitation", profileDir)
	case "public_key_rejected", "private_key_refused":
		return refusedError("the service refused the key (%s)", problemCode(err))
	case "":
		return withCode(ExitError, "the redemption's answer was not received (%v): its outcome is unknown; run setup again: it sends the same redemption with the same key", err)
	}
	return withCode(ExitError, "the redemption failed (%v): run setup again to send the same redemption", err)
}

// checkRuntime checks the runtime is installed and logged in; a missing login pauses setup.
func (s *setup) checkRuntime(ctx context.Context) error {
	if err := s.drv.Check(ctx, s.inst); err != nil {
		return refusedError("the runtime %s cannot run here: %v (fix it, then run setup again: it resumes this profile)", s.rt, err)
	}
	if r, ok := s.drv.(runtime.Registrar); ok {
		server, err := s.e.mcpServer(s.in.store, s.in.profile, s.in.base, s.inst.Settings.MediaDir)
		if err != nil {
			return err
		}
		if err := r.Register(ctx, s.inst, server); err != nil {
			return withCode(ExitError, "%v (run setup again: it resumes this profile)", err)
		}
		v, dir := r.ConfigHome(s.inst)
		s.say("Registered the svc MCP server (svc-connector mcp --profile %s) in %s; the runtime's configuration lives in %s (%s).", s.in.profile, r.RegistrationFile(s.inst), dir, v)
	}
	err := s.drv.Login(ctx, s.inst)
	if errors.Is(err, runtime.ErrLoginRequired) {
		s.say("Paused: the runtime's login is missing. Log in with the runtime's official step (never share credentials with anyone):")
		s.say("  %s", s.drv.LoginStep(s.inst))
		s.say("Then run the same setup again; it resumes profile %q:", s.in.profile)
		s.say("  svc-connector setup --profile %s --handle %s --runtime %s --setup-scope %s", s.in.profile, s.in.handle, s.rt, s.in.scope)
		return withCode(ExitPaused, "paused: the runtime's login is missing (exit %d)", ExitPaused)
	}
	if err != nil {
		return refusedError("the runtime's login check failed: %v", err)
	}
	if err := s.p.Advance(s.cp, profile.StateRuntimeChecked); err != nil {
		return err
	}
	s.say("The runtime %s is installed and logged in.", s.rt)
	return nil
}

// verify finishes with a signed conformance and write-admission round trip.
func (s *setup) verify(ctx context.Context) error {
	id, _, err := loadIdentity(s.p)
	if err != nil {
		return err
	}
	// The identity is of this service: the disposition, taken under the lock, checked its base URL.
	c, err := s.client.WithIdentity(id)
	if err != nil {
		return err
	}
	for _, chk := range []check{conformanceCheck(ctx, c, id, s.in.handle), admissionCheck(ctx, c)} {
		if !chk.OK {
			return refusedError("%s: %s (run setup again once it is fixed)", chk.Name, chk.Reason)
		}
	}
	if err := s.p.Advance(s.cp, profile.StateComplete); err != nil {
		return err
	}
	s.say("A signed conformance and write-admission round trip passed.")
	return nil
}

func (s *setup) done() error {
	next := []string{"svc-connector doctor --profile " + s.in.profile, "svc-connector status --profile " + s.in.profile}
	if s.in.scope == ScopeForumArena {
		next = append(next, "svc-connector arena preflight --profile "+s.in.profile, "svc-connector arena enable --profile "+s.in.profile)
	}
	res := SetupResult{Profile: s.in.profile, Handle: s.in.handle, AgentID: s.cp.AgentID, SetupScope: s.in.scope,
		Runtime: s.rt, State: string(s.cp.State), Next: slices.Clip(next)}
	if s.in.scope == ScopeForumArena {
		enabled := s.cfg.Arena.Enabled
		res.ArenaEnabled = &enabled
	}
	return s.e.printJSON(res)
}

// runtimeSettings are the owner's runtime settings kept in the profile.
func runtimeSettings(cfg *profile.Config) runtime.Settings {
	return runtime.Settings{Command: cfg.Runtime.Command, LoginStep: cfg.Runtime.LoginStep, MediaDir: cfg.Runtime.MediaDir}
}
