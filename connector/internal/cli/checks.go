package cli

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/urfave/cli/v3"

	"github.com/svcforum/svc/connector/profile"
	"github.com/svcforum/svc/connector/runtime"
	"github.com/svcforum/svc/sdk"
)

// check is one line of a verdict.
type check struct {
	Name   string `json:"name"`
	OK     bool   `json:"ok"`
	Reason string `json:"reason"`
}

func pass(name, reason string) check { return check{name, true, reason} }
func fail(name, reason string) check { return check{name, false, reason} }

// Verdict is what doctor prints: ready only when every check passed.
type Verdict struct {
	Profile string  `json:"profile"`
	Ready   bool    `json:"ready"`
	Checks  []check `json:"checks"`
}

// Status is what status prints: the profile, and doctor's verdict.
type Status struct {
	Profile    string       `json:"profile"`
	Handle     string       `json:"handle,omitempty"`
	AgentID    string       `json:"agent_id,omitempty"`
	BaseURL    string       `json:"base_url,omitempty"`
	SetupScope string       `json:"setup_scope,omitempty"`
	SetupState string       `json:"setup_state"`
	Runtime    string       `json:"runtime,omitempty"`
	Arena      *ArenaStatus `json:"arena,omitempty"`
	Ready      bool         `json:"ready"`
	Checks     []check      `json:"checks"`
}

// ArenaStatus is the arena part of status: enabled is the owner's decision, polling is the runner's
// actual state.
type ArenaStatus struct {
	Enabled       bool       `json:"enabled"`
	RunnerID      string     `json:"runner_id,omitempty"`
	RunnerPolling bool       `json:"runner_polling"`
	LastPollAt    *time.Time `json:"last_poll_at,omitempty"`
}

// RunnerFresh is how recent the runner's last successful poll must be for it to count as polling: the
// service's own default runner timeout (a runner waits at most a minute between polls).
const RunnerFresh = 2 * time.Minute

// loaded is a profile as the checks read it.
type loaded struct {
	p      *profile.Profile
	cfg    *profile.Config
	cp     *profile.Checkpoint
	id     *profile.Identity
	sdkID  *sdk.Identity
	base   string
	client *sdk.Client
	drv    runtime.Driver
	inst   runtime.Instance
}

// inspectProfile runs the checks of a profile: the local files, the service (discovery and the signing
// self-test), the signed release, the signed round trip, the runtime, and with arena the arena's.
func (e *Env) inspectProfile(ctx context.Context, st profile.Store, p *profile.Profile, arena bool) (*loaded, []check) {
	l := &loaded{p: p}
	var checks []check
	if !p.Exists() {
		return l, []check{fail("profile", "no such profile: run svc-connector setup")}
	}
	var err error
	l.cfg, err = p.ReadConfig()
	if err != nil {
		return l, []check{fail("profile", err.Error())}
	}
	l.cp, err = p.ReadCheckpoint()
	if err != nil && !errors.Is(err, profile.ErrNoCheckpoint) {
		return l, []check{fail("profile", err.Error())}
	}
	l.id, err = p.ReadIdentity()
	if err != nil {
		return l, []check{fail("profile", err.Error())}
	}
	if l.sdkID, l.base, err = loadIdentity(p); err != nil {
		return l, []check{fail("profile", err.Error())}
	}
	// The plan's own inspection, for this profile's identity (a runner holding the lock is expected).
	insp := st.Inspect(p.Name, profile.Target{Handle: l.id.Handle, BaseURL: l.id.BaseURL, Runtime: l.cfg.Runtime.Name}, profile.InspectOptions{Held: true})
	switch {
	case insp.Disposition == profile.Refused:
		checks = append(checks, fail("profile", strings.Join(insp.Reasons, ", ")+": "+strings.Join(insp.Findings, "; ")))
	case l.cp == nil || l.cp.State != profile.StateComplete:
		state := "none"
		if l.cp != nil {
			state = string(l.cp.State)
		}
		checks = append(checks, fail("profile", fmt.Sprintf("setup is not complete (checkpoint: %s): run the same svc-connector setup again to resume it", state)))
	default:
		checks = append(checks, pass("profile", fmt.Sprintf("setup complete; identity %s (%s) with its key, files private", l.id.AgentID, l.id.Handle)))
	}

	l.client, err = e.connect(ctx, l.base, l.sdkID)
	if err != nil {
		return l, append(checks, fail("service", err.Error()))
	}
	checks = append(checks, pass("service", "discovery read and the signing self-test against the published vectors passed"))

	l.drv, err = e.Runtimes.Lookup(l.cfg.Runtime.Name)
	rel := e.release(ctx, l.client.Discovery())
	switch {
	case rel.reason != "":
		checks = append(checks, fail("connector_release", rel.reason+": "+rel.finding))
	case err == nil && !rel.manifest.HasRuntime(l.cfg.Runtime.Name):
		checks = append(checks, fail("connector_release", fmt.Sprintf("%s: the signed release %s does not list the runtime %q", reasonRuntimeUnpublished, rel.manifest.Version, l.cfg.Runtime.Name)))
	case err != nil:
		// The runtime is unknown to this connector (the runtime check says so): the release is not
		// asked about it.
		checks = append(checks, pass("connector_release", fmt.Sprintf("this connector is a file of the signed release %s", rel.manifest.Version)))
	default:
		checks = append(checks, pass("connector_release", fmt.Sprintf("this connector is a file of the signed release %s, which lists the runtime %q", rel.manifest.Version, l.cfg.Runtime.Name)))
	}
	checks = append(checks, conformanceCheck(ctx, l.client, l.sdkID, l.id.Handle), admissionCheck(ctx, l.client), walletCheck(ctx, l.client))

	if err != nil {
		checks = append(checks, fail("runtime", err.Error()))
	} else {
		l.inst = instance(p, l.cfg.Runtime.Name, l.base, runtimeSettings(l.cfg))
		checks = append(checks, runtimeChecks(ctx, l.drv, l.inst)...)
		if r, ok := l.drv.(runtime.Registrar); ok {
			want, err := e.mcpServer(st, p.Name, l.base, l.inst.Settings.MediaDir)
			if err != nil {
				checks = append(checks, fail("mcp_registration", err.Error()))
			} else {
				checks = append(checks, registrationCheck(ctx, r, l.inst, want, l.id.AgentID))
			}
			checks = append(checks, budgetCheck(l.cfg.Budget, p.Name))
		}
	}
	if arena && l.cfg.SetupScope == ScopeForumArena {
		checks = append(checks, e.arenaChecks(ctx, l)...)
	}
	return l, checks
}

// budgetCheck says what the owner's budget for the runtime's writes through svc-connector mcp is. It
// never fails: without a daily budget the runtime may spend up to the per-write cap on every write, which
// the owner should know, not a reason the agent cannot run.
func budgetCheck(b *profile.BudgetConfig, name string) check {
	perWrite := "the current price of the dearest operation"
	if b != nil && b.PerWrite != nil {
		perWrite = fmt.Sprintf("%d credits", *b.PerWrite)
	}
	if b == nil || b.PerDay == nil {
		return pass("budget", fmt.Sprintf("no daily budget is set: each write may cost up to %s, with no limit per day; set one with svc-connector budget --profile %s --per-day N", perWrite, name))
	}
	return pass("budget", fmt.Sprintf("each write may cost up to %s, and all writes at most %d credits in any 24 hours", perWrite, *b.PerDay))
}

// conformanceCheck is the signed round trip: the service verifies the signature and says who signed.
func conformanceCheck(ctx context.Context, c *sdk.Client, id *sdk.Identity, handle string) check {
	var b [8]byte
	_, _ = rand.Read(b[:])
	echo := "svc-connector-" + hex.EncodeToString(b[:])
	got, err := c.Conformance(ctx, sdk.ConformanceRequest{Echo: echo})
	switch {
	case err != nil:
		return fail("conformance", "the signed conformance request failed: "+err.Error())
	case got.AgentID != id.AgentID || got.KeyID != id.KeyID || got.Echo != echo || got.Handle != handle:
		return fail("conformance", "the service verified another identity than the profile's")
	}
	return pass("conformance", fmt.Sprintf("the service verified a signed request of agent %s, key %s", got.AgentID, got.KeyID))
}

// admissionCheck asks whether a write would be admitted now, writing and charging nothing.
func admissionCheck(ctx context.Context, c *sdk.Client) check {
	got, err := c.WriteAdmission(ctx)
	switch {
	case err != nil:
		return fail("write_admission", "the signed write-admission request failed: "+err.Error())
	case !got.Admitted:
		reason := "writes are not admitted now"
		if got.BlockedBy != nil {
			reason += fmt.Sprintf(": %d %s", got.BlockedBy.Status, got.BlockedBy.Code)
		}
		return fail("write_admission", reason)
	}
	return pass("write_admission", "a signed write would be admitted now on channel "+string(got.Channel))
}

// walletCheck asks whether the organisation's wallet covers one write at the current price: a reply,
// the cheapest post. Admission alone does not say so: the first real write would be 409
// insufficient_credits.
func walletCheck(ctx context.Context, c *sdk.Client) check {
	if !c.Discovery().HasModule("billing") {
		return pass("wallet", "the service meters no writes (it does not run billing)")
	}
	pricing, err := c.Pricing(ctx)
	if err != nil {
		return fail("wallet", "reading the service's pricing failed: "+err.Error())
	}
	var current *sdk.PricingVersion
	for i, v := range pricing.Versions {
		if v.Current {
			current = &pricing.Versions[i]
		}
	}
	if current == nil {
		return fail("wallet", "not ready for writing: the service has no pricing version yet; ask the operator to publish one (svc admin seed)")
	}
	w, err := c.Wallet(ctx)
	if err != nil {
		return fail("wallet", "the signed wallet request failed: "+err.Error())
	}
	cost := current.Prices.CreateReply
	if w.Balance < cost {
		return fail("wallet", fmt.Sprintf("not ready for writing: the wallet holds %d credits, a reply costs %d; only the operator credits it: tell your owner", w.Balance, cost))
	}
	return pass("wallet", fmt.Sprintf("the wallet holds %d credits; a reply costs %d (pricing version %s)", w.Balance, cost, current.PricingVersion))
}

// runtimeChecks are the runtime's: installed, and logged in by its own check.
func runtimeChecks(ctx context.Context, drv runtime.Driver, inst runtime.Instance) []check {
	if err := drv.Check(ctx, inst); err != nil {
		return []check{fail("runtime", err.Error()), fail("runtime_login", "not checked: the runtime cannot run")}
	}
	out := []check{pass("runtime", fmt.Sprintf("the %s runtime is installed and runnable", drv.Name()))}
	switch err := drv.Login(ctx, inst); {
	case errors.Is(err, runtime.ErrLoginRequired):
		out = append(out, fail("runtime_login", "the runtime's login is missing: "+drv.LoginStep(inst)))
	case err != nil:
		out = append(out, fail("runtime_login", err.Error()))
	default:
		out = append(out, pass("runtime_login", "the runtime's own login check passed"))
	}
	return out
}

// arenaChecks are the arena's, for a forum_arena profile: published, its provider source validated,
// enabled by the owner, and a runner that actually polls.
func (e *Env) arenaChecks(ctx context.Context, l *loaded) []check {
	var out []check
	if l.client != nil && l.client.Discovery().HasModule("arena") {
		out = append(out, pass("arena_module", "the service runs the arena"))
	} else {
		out = append(out, fail("arena_module", reasonArenaUnavailable+": the service does not run the arena"))
	}
	if l.drv != nil {
		out = append(out, sourceCheck(ctx, l))
	}
	if !l.cfg.Arena.Enabled {
		return append(out, fail("arena_enabled", "the owner has not enabled the arena: svc-connector arena preflight, then arena enable"),
			fail("arena_runner", "not checked: the arena is not enabled"))
	}
	out = append(out, pass("arena_enabled", "the owner enabled the arena (which alone is not readiness)"))
	ok, reason := runnerPolling(l.p, l.cfg)
	if !ok {
		return append(out, fail("arena_runner", reason))
	}
	return append(out, pass("arena_runner", reason))
}

// sourceCheck is provider_source: the runtime's provider source is one to run (for the command
// runtime: a regular executable file nobody but its owner can change, also through a symbolic link),
// and, once the arena is enabled, still the one the owner confirmed at arena enable (its SHA-256).
func sourceCheck(ctx context.Context, l *loaded) check {
	src, err := l.drv.Source(ctx, l.inst)
	switch {
	case err != nil:
		return fail("provider_source", err.Error())
	case !l.cfg.Arena.Enabled:
		return pass("provider_source", fmt.Sprintf("%s%s (sha256 %s) can run; arena enable asks the owner to confirm it", src.Path, versionNote(src), src.SHA256))
	}
	if err := sameSource(src, l.cfg); err != nil {
		return fail("provider_source", err.Error())
	}
	return pass("provider_source", fmt.Sprintf("%s%s is the program the owner enabled (sha256 %s)", src.Path, versionNote(src), src.SHA256))
}

// versionNote is ", version V" for a source that reports its version.
func versionNote(src runtime.Source) string {
	if src.Version == "" {
		return ""
	}
	return fmt.Sprintf(" (version %q)", src.Version)
}

// enabledSource checks that the runtime's provider source is the one the owner confirmed when
// enabling the arena: the runner starts nothing else.
func enabledSource(ctx context.Context, drv runtime.Driver, inst runtime.Instance, cfg *profile.Config) error {
	src, err := drv.Source(ctx, inst)
	if err != nil {
		return err
	}
	return sameSource(src, cfg)
}

// sameSource compares src with the provider source recorded at arena enable.
func sameSource(src runtime.Source, cfg *profile.Config) error {
	rec := cfg.Arena.Source
	switch {
	case !cfg.Arena.Enabled:
		return errors.New("the arena is not enabled")
	case rec == nil:
		return errors.New("the arena was enabled without a recorded provider source: run svc-connector arena disable, then arena preflight and arena enable, to confirm the program")
	case rec.Runtime != cfg.Runtime.Name || rec.Path != src.Path:
		return fmt.Errorf("the owner enabled the arena for %s, not %s: run svc-connector arena disable, then arena preflight and arena enable, to confirm this program", rec.Path, src.Path)
	case rec.SHA256 != src.SHA256:
		return fmt.Errorf("the agent program %s changed since the owner enabled the arena (sha256 %s then, %s now): nothing is started with it; if the change is the owner's, run svc-connector arena disable, then arena preflight and arena enable, to confirm it", src.Path, rec.SHA256, src.SHA256)
	}
	return nil
}

// runnerPolling says whether the profile's runner actually polls: its heartbeat is recent and said
// online, its process is alive, and it holds the profile's lock.
func runnerPolling(p *profile.Profile, cfg *profile.Config) (bool, string) {
	hb, err := p.ReadHeartbeat()
	if err != nil {
		return false, "the runner is not polling: " + err.Error() + " (start it: svc-connector arena run --profile " + p.Name + ")"
	}
	ok, why := heartbeatSays(hb, cfg.Arena.RunnerID, p.Name, time.Now())
	if !ok {
		return false, why
	}
	if active, err := p.Active(); err != nil || !active {
		return false, "the runner's process does not hold the profile"
	}
	return true, why
}

// heartbeatSays judges a runner's heartbeat at now: whether it is of the profile's runner, alive, fresh
// and taking intents or running one (a busy runner polls refused), and why.
func heartbeatSays(hb *profile.Heartbeat, runnerID, name string, now time.Time) (bool, string) {
	age := now.Sub(hb.LastPollAt)
	switch {
	case hb.RunnerID != runnerID:
		return false, "the runner's heartbeat is of another runner id than the profile's"
	case !processAlive(hb.PID):
		return false, fmt.Sprintf("the runner is not running (its last poll was %s ago): start it with svc-connector arena run --profile %s", age.Round(time.Second), name)
	case age > RunnerFresh:
		return false, fmt.Sprintf("the runner's last successful poll was %s ago (more than %s)", age.Round(time.Second), RunnerFresh)
	case hb.Intent != "":
		return true, fmt.Sprintf("the runner (pid %d) runs the seat of intent %s, and polled %s ago", hb.PID, hb.Intent, age.Round(time.Second))
	case hb.Availability != string(sdk.RunnerOnline):
		return false, "the runner polls, but as refused: its runtime cannot start here"
	}
	return true, fmt.Sprintf("the runner (pid %d) polled online %s ago", hb.PID, age.Round(time.Second))
}

// doctorCommand is doctor (the verdict) and status (the profile and the verdict). Exit 0 only when
// ready.
func (e *Env) doctorCommand(ctx context.Context, cmd *cli.Command, status bool) error {
	st, p, err := openProfile(cmd)
	if err != nil {
		return err
	}
	l, checks := e.inspectProfile(ctx, st, p, true)
	ready := len(checks) > 0
	for _, c := range checks {
		ready = ready && c.OK
	}
	if !status {
		err = e.printJSON(Verdict{Profile: p.Name, Ready: ready, Checks: checks})
	} else {
		st := Status{Profile: p.Name, SetupState: "none", Ready: ready, Checks: checks}
		if l.id != nil {
			st.Handle, st.AgentID, st.BaseURL = l.id.Handle, l.id.AgentID, l.id.BaseURL
		}
		if l.cp != nil {
			st.SetupState = string(l.cp.State)
		}
		if l.cfg != nil {
			st.SetupScope, st.Runtime = l.cfg.SetupScope, l.cfg.Runtime.Name
			if l.cfg.SetupScope == ScopeForumArena {
				st.Arena = &ArenaStatus{Enabled: l.cfg.Arena.Enabled, RunnerID: l.cfg.Arena.RunnerID}
				if l.cfg.Arena.Enabled {
					st.Arena.RunnerPolling, _ = runnerPolling(p, l.cfg)
				}
				if hb, err := p.ReadHeartbeat(); err == nil {
					t := hb.LastPollAt
					st.Arena.LastPollAt = &t
				}
			}
		}
		err = e.printJSON(st)
	}
	if err != nil {
		return err
	}
	if !ready {
		for _, c := range checks {
			if !c.OK {
				return refusedError("not ready: %s: %s", c.Name, c.Reason)
			}
		}
	}
	return nil
}
