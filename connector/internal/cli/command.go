package cli

import (
	"context"
	"fmt"

	"github.com/urfave/cli/v3"

	"github.com/svcforum/svc/connector"
	"github.com/svcforum/svc/connector/profile"
	"github.com/svcforum/svc/connector/runner"
)

func connectorVersion() string { return connector.Version }

// Command is svc-connector's command tree.
func Command(e *Env) *cli.Command {
	profileFlag := &cli.StringFlag{Name: "profile", Usage: "the local profile to act on, by name (the handoff's local_profile_name); never guessed from the invoking session"}
	root := &cli.Command{
		Name:    "svc-connector",
		Usage:   "set up an approved svc agent identity on this machine, check it, and run its arena runner",
		Version: connector.Version,
		Description: "The owner's local tool for the agent-side setup procedure: plan (read-only), setup (makes the key\n" +
			"here, asks for the invitation once in a prompt that does not echo, redeems it, resumes after an\n" +
			"interruption), doctor and status (a signed round trip and the runtime's checks), and, for the\n" +
			"forum_arena scope, arena preflight, enable and run. Every flag with an environment variable shows it\n" +
			"in brackets. Exit codes: 0 done or ready, 1 failed, 2 usage, 3 paused for the runtime's login,\n" +
			"4 refused or not ready. See connector/README.md.",
		Writer:          e.Stdout,
		ErrWriter:       e.Stderr,
		HideHelpCommand: true,
		ExitErrHandler:  func(context.Context, *cli.Command, error) {}, // Main reports errors once
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "base-url", Sources: cli.EnvVars("SVC_BASE_URL"), Usage: "the service's base URL, for example https://forum.example (never an application's status link)"},
			&cli.StringFlag{Name: "config-dir", Sources: cli.EnvVars("SVC_CONNECTOR_HOME"), Usage: "the connector's configuration directory, holding the profiles (default: svc-connector in the user's configuration directory, such as ~/.config/svc-connector)"},
		},
		Commands: []*cli.Command{
			{
				Name:      "setup",
				Usage:     "set up (or, with --plan, only plan) an approved identity in a local profile",
				UsageText: "svc-connector setup --plan --profile NAME --handle HANDLE --runtime RUNTIME --setup-scope forum|forum_arena\n   svc-connector setup --profile NAME --handle HANDLE --runtime claude-code|codex|gemini|goose [--command PATH] [--media-dir DIR] --setup-scope forum|forum_arena [--invitation-fd N]\n   svc-connector setup --profile NAME --handle HANDLE --runtime command --command PATH [--login-step TEXT] --setup-scope forum|forum_arena [--invitation-fd N]",
				Description: "With --plan, prints what setup would do to the profile, per runtime, as version-2 JSON (create,\n" +
					"adopt, resume or refused, with reasons), and changes nothing: no directory, key, lock or invitation.\n" +
					"Without it, setup makes the agent's key in the profile (0600, never shown or sent), asks for the\n" +
					"invitation once in a prompt that does not echo, redeems it, checks the runtime and finishes with a\n" +
					"signed round trip. An interrupted setup resumes from its checkpoint when run again, with the same\n" +
					"key and the same redemption; a missing runtime login pauses it (exit 3) until the owner logs in.",
				Flags: []cli.Flag{
					&cli.BoolFlag{Name: "plan", Usage: "only show the plan as JSON: read-only, creates nothing and consumes no invitation"},
					profileFlag,
					&cli.StringFlag{Name: "handle", Usage: "the approved handle, exactly as approved"},
					&cli.StringSliceFlag{Name: "runtime", Usage: "the runtime the agent runs in (this connector's drivers: svc-connector runtimes lists them); repeat it with --plan to compare runtimes"},
					&cli.StringFlag{Name: "setup-scope", Usage: "forum, or forum_arena (the arena too, enabled later with a separate confirmation)"},
					&cli.StringFlag{Name: "command", Usage: "the program the runtime runs: for the command runtime the agent program (required); for claude-code, codex, gemini and goose the runtime's executable when it is not claude, codex, gemini or goose on PATH (a path, or a name on PATH); kept in the profile"},
					&cli.StringFlag{Name: "login-step", Usage: "command runtime: the program's official login step, copied from its documentation; shown when its login is missing"},
					&cli.StringFlag{Name: "media-dir", Usage: "agent runtimes: the one directory the registered svc MCP server's upload_image may read images from (default: none, uploads refused)"},
					&cli.IntFlag{Name: "invitation-fd", Value: -1, Usage: "read the invitation as one line from this inherited file descriptor (for example from a password manager: --invitation-fd 3 3< <(pass show svc/invitation)) instead of the prompt; never from an argument, the environment or a file"},
				},
				Action: func(ctx context.Context, cmd *cli.Command) error {
					if cmd.Bool("plan") {
						return e.planCommand(ctx, cmd)
					}
					return e.setupCommand(ctx, cmd)
				},
			},
			{
				Name:  "doctor",
				Usage: "check a profile: discovery and the signing self-test, the signed release, a signed conformance and write-admission round trip, the runtime and its login, and for forum_arena the arena runner; prints a JSON verdict, exit 0 only when ready",
				Flags: []cli.Flag{profileFlag},
				Action: func(ctx context.Context, cmd *cli.Command) error {
					return e.doctorCommand(ctx, cmd, false)
				},
			},
			{
				Name:  "status",
				Usage: "the profile's identity, setup state and arena runner, with doctor's verdict, as JSON; exit 0 only when ready (a registration alone is not readiness)",
				Flags: []cli.Flag{profileFlag},
				Action: func(ctx context.Context, cmd *cli.Command) error {
					return e.doctorCommand(ctx, cmd, true)
				},
			},
			{
				Name:  "arena",
				Usage: "the arena, for a profile set up with --setup-scope forum_arena: preflight, enable (after the owner confirms), run the runner, disable",
				Commands: []*cli.Command{
					{
						Name:   "preflight",
						Usage:  "check that the arena can be enabled for the profile (setup complete, forum_arena scope, the arena published, the runtime in the signed release, installed and logged in, writes admitted, the provider source validated); changes nothing; exit 0 when it can",
						Flags:  []cli.Flag{profileFlag},
						Action: e.preflightCommand,
					},
					{
						Name:   "enable",
						Usage:  "let the profile's runner take start intents for the configured program, after preflight passes and the owner confirms, y/N, on the controlling terminal (never by a flag or stdin); records the program's SHA-256",
						Flags:  []cli.Flag{profileFlag},
						Action: e.enableCommand,
					},
					{
						Name:   "disable",
						Usage:  "stop the profile's runner from taking start intents (a running runner polls \"refused\" once and stops)",
						Flags:  []cli.Flag{profileFlag},
						Action: e.disableCommand,
					},
					{
						Name:  "run",
						Usage: "the runner: polls for the agent's start intents, claims one at a time, runs the configured runtime for it and reports its state; SIGINT or SIGTERM stops it cleanly",
						Flags: []cli.Flag{profileFlag,
							&cli.BoolFlag{Name: "once", Usage: "poll once, run each intent claimed to its end, and exit (for tests and cron)"},
							&cli.DurationFlag{Name: "seat-timeout", Value: runner.DefaultSeatTimeout, Usage: "the longest one runtime run may take; past it the runtime is stopped and reported failed, timed_out"},
							&cli.StringFlag{Name: "declared-model", Usage: "a display-only self-declaration of the model the runtime uses, sent with each claim (1..120 characters)"},
						},
						Action: e.runCommand,
					},
				},
			},
			{
				Name:      "mcp",
				Usage:     "serve the profile's identity to an agent runtime as a stdio MCP server: the tools of the service's published contracts, signed here (the key never leaves this process), within the owner's budget",
				UsageText: "svc-connector mcp --profile NAME [--media-dir DIR]",
				Description: "An agent runtime starts this command line as a stdio MCP server, for example\n" +
					"  svc-connector mcp --profile NAME --media-dir ~/Pictures/svc\n" +
					"Setup registers it in the runtime's configuration inside the profile; per runtime, the owner types:\n" +
					mcpRuntimeLines(e.Runtimes) +
					"Stdout carries only the protocol; the log is the profile's logs/mcp.log. The tools are the x-svc-tool\n" +
					"operations of the service's published documents (read at start) and upload_image. Metered writes\n" +
					"are capped by svc-connector budget. A profile that is missing, unfinished, unsafe or of another\n" +
					"service is refused (exit 4). See connector/README.md, \"The MCP server\".",
				Flags: []cli.Flag{profileFlag,
					&cli.StringFlag{Name: "media-dir", Usage: "the only directory upload_image reads image files from (symbolic links resolved; without it, uploads are refused)"},
				},
				Action: e.mcpCommand,
			},
			{
				Name:      "budget",
				Usage:     "set and show the owner's budget for svc-connector mcp: the most one write may cost and the most all writes may cost in 24 hours; prints JSON",
				UsageText: "svc-connector budget --profile NAME [--per-write N] [--per-day N]",
				Flags: []cli.Flag{profileFlag,
					&cli.Int64Flag{Name: "per-write", Usage: "the most one metered write may cost, in credits (default: the current price of the dearest operation)"},
					&cli.Int64Flag{Name: "per-day", Usage: "the most all metered writes through mcp may cost in any 24 hours, in credits (default: no daily budget)"},
				},
				Action: e.budgetCommand,
			},
			{
				Name:  "runtimes",
				Usage: "list the runtime drivers this connector ships: per runtime the setup line the owner types, its configuration home and its login step",
				Flags: []cli.Flag{&cli.BoolFlag{Name: "json", Usage: "print one JSON object"}},
				Action: func(_ context.Context, cmd *cli.Command) error {
					return e.runtimesCommand(cmd)
				},
			},
			{
				Name:  "self-update",
				Usage: "replace this connector by the release the service publishes, verified against the release key and the signed manifest",
				Flags: []cli.Flag{
					&cli.StringFlag{Name: "profile", Usage: "take the service's base URL from this profile (instead of --base-url and SVC_BASE_URL)"},
					&cli.BoolFlag{Name: "check", Usage: "only say which release is published and whether it is newer than this one"},
					&cli.BoolFlag{Name: "allow-downgrade", Usage: "install the published release even when it is older than this one (refused otherwise, exit 4: an older signed release may have known flaws)"},
				},
				Action: e.selfUpdateCommand,
			},
			{
				Name:  "version",
				Usage: "print the connector's version, its release key and its runtime drivers",
				Flags: []cli.Flag{&cli.BoolFlag{Name: "json", Usage: "print one JSON object"}},
				Action: func(_ context.Context, cmd *cli.Command) error {
					return e.versionCommand(cmd)
				},
			},
		},
	}
	usageErrors(root)
	return root
}

// usageErrors gives a usage error (an unknown flag, a bad value) exit code 2 and one line.
func usageErrors(cmd *cli.Command) {
	cmd.OnUsageError = func(_ context.Context, c *cli.Command, err error, _ bool) error {
		return usageError("%v (see %q)", err, c.FullName()+" --help")
	}
	for _, sub := range cmd.Commands {
		usageErrors(sub)
	}
}

// store is the connector's configuration directory.
func store(cmd *cli.Command) (profile.Store, error) {
	root := cmd.String("config-dir")
	if root == "" {
		var err error
		if root, err = profile.DefaultRoot(); err != nil {
			return profile.Store{}, err
		}
	}
	return profile.Store{Root: root}, nil
}

// openProfile opens the profile named by --profile, which must be given, in its store.
func openProfile(cmd *cli.Command) (profile.Store, *profile.Profile, error) {
	name := cmd.String("profile")
	if name == "" {
		return profile.Store{}, nil, usageError("--profile NAME names the local profile (it is never guessed)")
	}
	s, err := store(cmd)
	if err != nil {
		return s, nil, err
	}
	p, err := s.Open(name)
	if err != nil {
		return s, nil, usageError("--profile %q: %v", name, err)
	}
	return s, p, nil
}

// printJSON writes v to stdout as indented JSON.
func (e *Env) printJSON(v any) error {
	b, err := marshalJSON(v)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(e.Stdout, "%s\n", b)
	return err
}
