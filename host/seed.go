package host

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"log/slog"
	"slices"

	"github.com/urfave/cli/v3"
	"go.uber.org/fx"

	"github.com/svcforum/svc/contracts/plugin"
)

// seeders are the modules' Seeders.
type seeders struct {
	fx.In
	Seeders []plugin.Seeder `group:"svc.seeders"`
}

// seedResult is what one seeder did, as `svc admin seed --json` prints it.
type seedResult struct {
	Module  string `json:"module"`
	Name    string `json:"name"`
	Changed bool   `json:"changed"`
	Detail  string `json:"detail"`
}

// seed runs every seeder, in the order of their modules and then their names, and returns what each
// did; it stops at the first that fails. Two seeders of one name in one module are refused.
func seed(ctx context.Context, in []plugin.Seeder) ([]seedResult, error) {
	ss := slices.Clone(in)
	slices.SortFunc(ss, func(a, b plugin.Seeder) int {
		return cmp.Or(cmp.Compare(a.Module, b.Module), cmp.Compare(a.Name, b.Name))
	})
	out := make([]seedResult, 0, len(ss))
	for i, s := range ss {
		if i > 0 && ss[i-1].Module == s.Module && ss[i-1].Name == s.Name {
			return nil, fmt.Errorf("seed: module %s has two seeders named %q", s.Module, s.Name)
		}
		r, err := s.Seed(ctx)
		if err != nil {
			return out, fmt.Errorf("seed %s %s: %w", s.Module, s.Name, err)
		}
		out = append(out, seedResult{Module: s.Module, Name: s.Name, Changed: r.Changed, Detail: r.Detail})
	}
	return out, nil
}

// seedCommand is `svc admin seed`: what a deployment needs before it can take a write, where it has
// none of it (the example pricing version, the starter categories).
func seedCommand(stdout, stderr io.Writer) *cli.Command {
	return &cli.Command{
		Name: "seed",
		Usage: "give a deployment that has none what it needs to take writes: the example pricing version (billing) and the starter categories " +
			"(forum: general, help, showcase, meta); a module that has any already is left as it is, so a second run changes nothing",
		Action: func(ctx context.Context, cmd *cli.Command) error {
			return invoker(stderr, true, "")(ctx, cmd, func(ctx context.Context, in seeders) error {
				done, err := seed(ctx, in.Seeders)
				if err != nil {
					return err
				}
				return printSeeded(cmd, stdout, done)
			})
		},
	}
}

// printSeeded prints what the seeders did: with --json one object ({"changed", "seeded": [...]}), else
// one line per seeder and a last line saying whether anything changed.
func printSeeded(cmd *cli.Command, w io.Writer, done []seedResult) error {
	changed := slices.ContainsFunc(done, func(r seedResult) bool { return r.Changed })
	if cmd.Bool("json") {
		return plugin.Print(cmd, w, map[string]any{"changed": changed, "seeded": done})
	}
	for _, r := range done {
		if _, err := fmt.Fprintf(w, "%s %s: %s\n", r.Module, r.Name, plugin.Printable(r.Detail)); err != nil {
			return err
		}
	}
	last := "seeded: the deployment can take writes once an organisation has credits"
	if !changed {
		last = "nothing to seed: every module has what it needs already"
	}
	_, err := fmt.Fprintln(w, last)
	return err
}

// registerSeed runs the seeders at start-up, after the migrations and before any listener opens, when
// --seed is set.
func registerSeed(lc fx.Lifecycle, cfg Config, log *slog.Logger, in seeders) {
	if !cfg.Seed {
		return
	}
	lc.Append(fx.Hook{OnStart: func(ctx context.Context) error {
		done, err := seed(ctx, in.Seeders)
		if err != nil {
			return err
		}
		for _, r := range done {
			log.Info("seed", "module", r.Module, "seeder", r.Name, "changed", r.Changed, "detail", r.Detail)
		}
		return nil
	}})
}
