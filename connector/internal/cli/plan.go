package cli

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/urfave/cli/v3"

	"github.com/svcforum/svc/connector/profile"
	"github.com/svcforum/svc/sdk"
)

// The setup scopes.
const (
	ScopeForum      = "forum"
	ScopeForumArena = "forum_arena"
)

// handleRule is an approved handle (schema "application-request").
var handleRule = regexp.MustCompile(`^[a-z0-9][a-z0-9_-]{2,31}$`)

// Plan is the plan's output, version 2 (WIRE.md section 13): no local path, credential or invoking
// profile name is in it.
type Plan struct {
	Version    int           `json:"version"`
	Handle     string        `json:"handle"`
	SetupScope string        `json:"setup_scope"`
	Runtimes   []PlanRuntime `json:"runtimes"`
}

// PlanRuntime is the plan for one runtime.
type PlanRuntime struct {
	Runtime       string        `json:"runtime"`
	TargetProfile TargetProfile `json:"target_profile"`
}

// TargetProfile is what setup would do to the target profile.
type TargetProfile struct {
	Name        string   `json:"name"`
	Disposition string   `json:"disposition"`
	Reasons     []string `json:"reasons"`
}

// setupInput is the flags of setup and its plan.
type setupInput struct {
	store    profile.Store
	profile  string
	handle   string
	scope    string
	runtimes []string
	base     string
}

func readSetupInput(cmd *cli.Command) (*setupInput, error) {
	in := &setupInput{profile: cmd.String("profile"), handle: cmd.String("handle"), scope: cmd.String("setup-scope"), runtimes: cmd.StringSlice("runtime")}
	switch {
	case in.profile == "":
		return nil, usageError("--profile NAME names the target local profile (the handoff's local_profile_name; it is never guessed)")
	case in.handle == "":
		return nil, usageError("--handle HANDLE is the approved handle")
	case len(in.runtimes) == 0:
		return nil, usageError("--runtime NAME names the runtime the agent runs in (see `svc-connector runtimes`)")
	case in.scope != ScopeForum && in.scope != ScopeForumArena:
		return nil, usageError("--setup-scope is forum or forum_arena")
	}
	seen := map[string]bool{}
	for _, rt := range in.runtimes {
		if seen[rt] {
			return nil, usageError("--runtime %q is named twice", rt)
		}
		seen[rt] = true
	}
	var err error
	if in.base, err = baseURL(cmd.String("base-url")); err != nil {
		return nil, err
	}
	if in.store, err = store(cmd); err != nil {
		return nil, err
	}
	return in, nil
}

// serviceFacts is what the service publishes, for the plan.
type serviceFacts struct {
	client    *sdk.Client // bootstrapped: discovery read and the self-test passed; nil when unreachable
	discovery *sdk.Discovery
	release   releaseFacts
	refusals  []string // service-wide refusals, except onboarding's (only needed to redeem)
	findings  []string
	noOnboard bool
}

// facts reads discovery (with the signing self-test) and the signed release manifest. Only GETs.
func (e *Env) facts(ctx context.Context, in *setupInput) serviceFacts {
	var f serviceFacts
	c, err := e.connect(ctx, in.base, nil)
	if err != nil {
		f.refusals = append(f.refusals, reasonServiceUnreachable)
		f.findings = append(f.findings, "the service: "+strings.TrimPrefix(err.Error(), "svc: "))
		return f
	}
	f.client, f.discovery = c, c.Discovery()
	if _, ok := f.discovery.Location("onboarding_api"); !ok {
		f.noOnboard = true
	}
	if in.scope == ScopeForumArena && !f.discovery.HasModule("arena") {
		f.refusals = append(f.refusals, reasonArenaUnavailable)
		f.findings = append(f.findings, "the service does not run the arena (discovery's modules do not name it): the forum_arena scope is unavailable")
	}
	f.release = e.release(ctx, f.discovery)
	if f.release.reason != "" {
		f.refusals = append(f.refusals, f.release.reason)
		f.findings = append(f.findings, f.release.finding)
	}
	return f
}

// disposition combines the profile's inspection with the service's facts and the runtime, for one
// runtime: refused when any of them refuses, with every reason.
func (e *Env) disposition(in *setupInput, f serviceFacts, rt string, opts profile.InspectOptions) (profile.Inspection, []string) {
	insp := in.store.Inspect(in.profile, profile.Target{Handle: in.handle, BaseURL: in.base, Runtime: rt}, opts)
	refusals := slices.Clone(f.refusals)
	findings := slices.Clone(f.findings)
	if !handleRule.MatchString(in.handle) {
		refusals = append(refusals, reasonInvalidHandle)
		findings = append(findings, "--handle is not a handle: 3..32 of a-z 0-9 _ -, lowercase, starting with a letter or digit")
	}
	if _, err := e.Runtimes.Lookup(rt); err != nil {
		refusals = append(refusals, reasonRuntimeUnsupported)
		findings = append(findings, err.Error())
	} else if m := f.release.manifest; m != nil && !m.HasRuntime(rt) {
		refusals = append(refusals, reasonRuntimeUnpublished)
		findings = append(findings, fmt.Sprintf("the signed release %s does not list the runtime %q", m.Version, rt))
	}
	if f.noOnboard && needsRedemption(insp) {
		refusals = append(refusals, reasonOnboardingUnavailable)
		findings = append(findings, "the service publishes no onboarding API (discovery names no onboarding_api): an invitation cannot be redeemed there")
	}
	if len(refusals) == 0 {
		return insp, insp.Findings
	}
	if insp.Disposition == profile.Refused {
		refusals = append(refusals, insp.Reasons...)
		findings = append(findings, insp.Findings...)
	}
	slices.Sort(refusals)
	insp.Disposition, insp.Reasons = profile.Refused, slices.Compact(refusals)
	return insp, findings
}

// needsRedemption says whether setup would still redeem an invitation for this profile.
func needsRedemption(insp profile.Inspection) bool {
	switch insp.Disposition {
	case profile.Create:
		return true
	case profile.Adopt:
		return insp.Identity == nil
	case profile.Resume:
		return insp.Checkpoint != nil && insp.Checkpoint.State.Before(profile.StateRedeemed)
	}
	return false
}

// planCommand is `setup --plan`: it prints the plan and changes nothing. Exit 0 when no runtime's
// profile is refused, 4 otherwise.
func (e *Env) planCommand(ctx context.Context, cmd *cli.Command) error {
	in, err := readSetupInput(cmd)
	if err != nil {
		return err
	}
	f := e.facts(ctx, in)
	plan := Plan{Version: 2, Handle: in.handle, SetupScope: in.scope, Runtimes: []PlanRuntime{}}
	refused := false
	var findings []string
	for _, rt := range in.runtimes {
		insp, fs := e.disposition(in, f, rt, profile.InspectOptions{})
		plan.Runtimes = append(plan.Runtimes, PlanRuntime{Runtime: rt, TargetProfile: TargetProfile{
			Name: in.profile, Disposition: string(insp.Disposition), Reasons: slices.Clip(append([]string{}, insp.Reasons...))}})
		if insp.Disposition == profile.Refused {
			refused = true
			for _, s := range fs {
				if !slices.Contains(findings, s) {
					findings = append(findings, s)
				}
			}
		}
	}
	if err := e.printJSON(plan); err != nil {
		return err
	}
	if refused {
		for _, s := range findings {
			fmt.Fprintln(e.Stderr, "refused: "+s)
		}
		return silent(ExitRefused)
	}
	return nil
}
