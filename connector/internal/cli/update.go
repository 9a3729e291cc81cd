package cli

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"

	"github.com/urfave/cli/v3"

	"github.com/svcforum/svc/connector"
	"github.com/svcforum/svc/connector/release"
	"github.com/svcforum/svc/connector/runtime"
)

// runtimesCommand lists the drivers this connector ships: the runtimes --runtime accepts, each with the
// setup line the owner types, where the runtime's configuration lives and its login step.
func (e *Env) runtimesCommand(cmd *cli.Command) error {
	type driver struct {
		Name             string `json:"name"`
		Summary          string `json:"summary"`
		Setup            string `json:"setup"`
		ConfigHome       string `json:"config_home,omitempty"`
		RegistrationFile string `json:"registration_file,omitempty"`
		LoginStep        string `json:"login_step"`
		Start            string `json:"start,omitempty"`
	}
	var list []driver
	for _, n := range e.Runtimes.Names() {
		d, _ := e.Runtimes.Lookup(n)
		row := driver{Name: n, Summary: d.Summary(),
			Setup:     "svc-connector setup --profile NAME --handle HANDLE --runtime " + n + " --setup-scope forum",
			LoginStep: "the program's own login step, given at setup with --login-step TEXT (its login check: PROGRAM login-status --profile DIR)"}
		if r, ok := d.(runtime.Registrar); ok {
			// PROFILE_DIR stands for <config-dir>/profiles/NAME.
			inst := runtime.Instance{Profile: "PROFILE_DIR", DataDir: "PROFILE_DIR/runtime/" + n}
			v, dir := r.ConfigHome(inst)
			row.ConfigHome, row.RegistrationFile, row.LoginStep = v+"="+dir, r.RegistrationFile(inst), d.LoginStep(inst)
			row.Start = r.StartLine(inst)
		} else {
			row.Setup = "svc-connector setup --profile NAME --handle HANDLE --runtime " + n + " --command PATH --setup-scope forum"
		}
		list = append(list, row)
	}
	if cmd.Bool("json") {
		return e.printJSON(map[string]any{"runtimes": list})
	}
	for _, d := range list {
		fmt.Fprintf(e.Stdout, "%s\t%s\n  setup:       %s\n", d.Name, d.Summary, d.Setup)
		if d.ConfigHome != "" {
			fmt.Fprintf(e.Stdout, "  config home: %s (registration: %s)\n", d.ConfigHome, d.RegistrationFile)
		}
		fmt.Fprintf(e.Stdout, "  login step:  %s\n", d.LoginStep)
		if d.Start != "" {
			fmt.Fprintf(e.Stdout, "  start:       %s\n", d.Start)
		}
	}
	fmt.Fprintln(e.Stdout, "(PROFILE_DIR is the profile's directory, <config-dir>/profiles/NAME; setup --setup-scope forum_arena for the arena too)")
	return nil
}

// versionCommand prints the version, whether a release key is built in, and the drivers.
func (e *Env) versionCommand(cmd *cli.Command) error {
	key := "none built in: a development build, which trusts the release key the service publishes"
	if connector.ReleaseKey != "" {
		key = connector.ReleaseKey
	}
	if cmd.Bool("json") {
		return e.printJSON(map[string]any{"version": connector.Version, "release_key": connector.ReleaseKey, "runtimes": e.Runtimes.Names()})
	}
	fmt.Fprintf(e.Stdout, "svc-connector %s\nrelease key: %s\nruntimes: %v\n", connector.Version, key, e.Runtimes.Names())
	return nil
}

// selfUpdateCommand replaces the running binary by the published release, verified against the
// release key and the signed manifest (release.SelfUpdate); with --check it only compares versions.
func (e *Env) selfUpdateCommand(ctx context.Context, cmd *cli.Command) error {
	base := cmd.String("base-url")
	// The profile names its service: it wins over --base-url, and over SVC_BASE_URL, which an owner's
	// environment may hold for another service.
	if name := cmd.String("profile"); name != "" {
		_, p, err := openProfile(cmd)
		if err != nil {
			return err
		}
		id, err := p.ReadIdentity()
		if err != nil {
			return err
		}
		base = id.BaseURL
	}
	base, err := baseURL(base)
	if err != nil {
		return err
	}
	c, err := e.connect(ctx, base, nil)
	if err != nil {
		return err
	}
	locations := c.Discovery().Locations.Other
	if cmd.Bool("check") {
		m, err := release.Fetch(ctx, e.HTTP, locations)
		if err != nil {
			return withCode(ExitRefused, "%v", err)
		}
		return e.printJSON(map[string]any{"version": connector.Version, "published": m.Version,
			"update_available": release.Compare(connector.Version, m.Version) > 0})
	}
	exe, err := e.Executable()
	if err != nil {
		return err
	}
	if exe, err = filepath.EvalSymlinks(exe); err != nil {
		return err
	}
	version, updated, err := release.SelfUpdateWith(ctx, e.Downloads, locations, exe,
		release.SelfUpdateOptions{AllowDowngrade: cmd.Bool("allow-downgrade")})
	switch {
	case errors.Is(err, release.ErrDowngrade):
		// An older signed release is a refusal, not a failure: the owner decides.
		return withCode(ExitRefused, "%v", err)
	case err != nil:
		return withCode(ExitError, "%v", err)
	}
	return e.printJSON(map[string]any{"version": version, "updated": updated})
}
