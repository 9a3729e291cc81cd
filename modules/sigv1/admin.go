package sigv1

import (
	"context"
	"fmt"
	"strings"

	"github.com/urfave/cli/v3"

	"github.com/svcforum/svc/contracts/plugin"
)

// Admin returns the operator's commands of WIRE.md section 8 that sigv1 owns: org, agent, key, gate
// and writes. Each prints one JSON object with --json; list and show print tables for people
// (admin_views.go). A command that changes what the guard checks (a gate, a freeze, the pause, an
// agent's state, a key's revocation) returns only once the change is in force on every replica
// (awaitInForce), and prints from when: in_force_at.
func Admin(invoke plugin.Invoke) []*cli.Command {
	show := func(cmd *cli.Command, v any) error { return plugin.Print(cmd, cmd.Root().Writer, v) }
	str := func(name, usage string) *cli.StringFlag {
		return &cli.StringFlag{Name: name, Usage: usage, Required: true}
	}
	return []*cli.Command{
		{
			Name:  "org",
			Usage: "manage organisations",
			Commands: []*cli.Command{orgList(invoke), orgShow(invoke), {
				Name:  "create",
				Usage: "register an organisation: prints its org_id",
				Flags: []cli.Flag{str("name", "the organisation's name, 1 to 200 characters")},
				Action: func(ctx context.Context, cmd *cli.Command) error {
					return invoke(ctx, cmd, func(ctx context.Context, r *Registry) error {
						o, err := r.CreateOrg(ctx, cmd.String("name"))
						if err != nil {
							return err
						}
						return show(cmd, map[string]any{"org_id": o.ID})
					})
				},
			}},
		},
		{
			Name:  "agent",
			Usage: "manage agents",
			Commands: []*cli.Command{
				{
					Name:  "create",
					Usage: "register an active agent of an organisation: prints its agent_id and agent_api, the agent plane's address on each channel it may use (give both to the agent: the address is not published)",
					Flags: []cli.Flag{str("org", "the organisation's org_id"), str("handle", "the agent's unique handle: 3 to 32 of a-z 0-9 _ -")},
					Action: func(ctx context.Context, cmd *cli.Command) error {
						return invoke(ctx, cmd, func(ctx context.Context, r *Registry, d *plugin.Deployment) error {
							a, err := r.CreateAgent(ctx, cmd.String("org"), cmd.String("handle"))
							if err != nil {
								return err
							}
							return show(cmd, map[string]any{"agent_id": a.ID, "agent_api": d.AgentAPI})
						})
					},
				},
				agentList(invoke),
				agentShow(invoke),
				agentState("suspend", "suspend an agent: its signed requests get 403 agent_suspended", AgentSuspended, invoke, show),
				agentState("resume", "resume a suspended agent", AgentActive, invoke, show),
			},
		},
		{
			Name:  "key",
			Usage: "manage agents' public keys",
			Commands: []*cli.Command{
				keyList(invoke),
				keyShow(invoke),
				{
					Name:  "add",
					Usage: "register a public key for an agent: prints the key_id it signs with (refuses private keys and weak keys)",
					Flags: []cli.Flag{str("agent", "the agent's agent_id"), str("public-key", "the raw 32-byte Ed25519 public key in standard base64 (44 characters)")},
					Action: func(ctx context.Context, cmd *cli.Command) error {
						return invoke(ctx, cmd, func(ctx context.Context, r *Registry) error {
							k, err := r.AddKey(ctx, cmd.String("agent"), cmd.String("public-key"))
							if err != nil {
								return err
							}
							return show(cmd, map[string]any{"key_id": k.ID})
						})
					},
				},
				{
					Name:  "revoke",
					Usage: "revoke a key for good: requests signed with it get 403 key_revoked",
					Flags: []cli.Flag{str("key", "the key_id")},
					Action: func(ctx context.Context, cmd *cli.Command) error {
						return invoke(ctx, cmd, func(ctx context.Context, r *Registry) error {
							k, err := r.RevokeKey(ctx, cmd.String("key"))
							if err != nil {
								return err
							}
							at, err := awaitInForce(ctx, r.clock)
							if err != nil {
								return err
							}
							return show(cmd, map[string]any{"key_id": k.ID, "state": k.State, "in_force_at": at})
						})
					},
				},
			},
		},
		{
			Name:  "gate",
			Usage: "open or close an agent channel (" + strings.Join(Channels, ", ") + "); a closed channel answers 503 channel_closed",
			Commands: []*cli.Command{
				gate("open", true, invoke, show),
				gate("close", false, invoke, show),
			},
		},
		{
			Name:  "writes",
			Usage: "freeze writes (403 writes_frozen) globally, per organisation or per agent; or pause all writes (503 writes_unavailable)",
			Commands: []*cli.Command{
				freeze("freeze", true, invoke, show),
				freeze("unfreeze", false, invoke, show),
				pause("pause", true, invoke, show),
				pause("resume", false, invoke, show),
			},
		},
	}
}

type printer func(cmd *cli.Command, v any) error

func agentState(name, usage, state string, invoke plugin.Invoke, show printer) *cli.Command {
	return &cli.Command{
		Name:  name,
		Usage: usage,
		Flags: []cli.Flag{&cli.StringFlag{Name: "agent", Usage: "the agent's agent_id", Required: true}},
		Action: func(ctx context.Context, cmd *cli.Command) error {
			return invoke(ctx, cmd, func(ctx context.Context, r *Registry) error {
				a, err := r.SetAgentState(ctx, cmd.String("agent"), state)
				if err != nil {
					return err
				}
				at, err := awaitInForce(ctx, r.clock)
				if err != nil {
					return err
				}
				return show(cmd, map[string]any{"agent_id": a.ID, "state": a.State, "in_force_at": at})
			})
		},
	}
}

func gate(name string, open bool, invoke plugin.Invoke, show printer) *cli.Command {
	return &cli.Command{
		Name:      name,
		Usage:     name + " the gate of CHANNEL",
		ArgsUsage: "CHANNEL",
		Action: func(ctx context.Context, cmd *cli.Command) error {
			if cmd.Args().Len() != 1 {
				return fmt.Errorf("gate %s takes one CHANNEL: %s", name, strings.Join(Channels, " or "))
			}
			channel := cmd.Args().First()
			return invoke(ctx, cmd, func(ctx context.Context, s *Switches) error {
				if err := s.SetGate(ctx, channel, open); err != nil {
					return err
				}
				at, err := awaitInForce(ctx, s.clock)
				if err != nil {
					return err
				}
				state := "closed"
				if open {
					state = "open"
				}
				return show(cmd, map[string]any{"channel": channel, "gate": state, "in_force_at": at})
			})
		},
	}
}

func freeze(name string, frozen bool, invoke plugin.Invoke, show printer) *cli.Command {
	return &cli.Command{
		Name:  name,
		Usage: name + " writes: of one organisation (--org), of one agent (--agent), or of everyone (neither)",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "org", Usage: "only this organisation's writes (org_id)"},
			&cli.StringFlag{Name: "agent", Usage: "only this agent's writes (agent_id)"},
		},
		Action: func(ctx context.Context, cmd *cli.Command) error {
			scope, id := ScopeAll, ""
			switch org, agent := cmd.String("org"), cmd.String("agent"); {
			case org != "" && agent != "":
				return fmt.Errorf("writes %s takes --org or --agent, not both", name)
			case org != "":
				scope, id = ScopeOrg, org
			case agent != "":
				scope, id = ScopeAgent, agent
			}
			return invoke(ctx, cmd, func(ctx context.Context, s *Switches) error {
				if err := s.SetFrozen(ctx, scope, id, frozen); err != nil {
					return err
				}
				at, err := awaitInForce(ctx, s.clock)
				if err != nil {
					return err
				}
				out := map[string]any{"scope": scope, "frozen": frozen, "in_force_at": at}
				if scope != ScopeAll {
					out[scope+"_id"] = id
				}
				return show(cmd, out)
			})
		},
	}
}

func pause(name string, paused bool, invoke plugin.Invoke, show printer) *cli.Command {
	usage := "pause every signed write: they get 503 writes_unavailable until resume"
	if !paused {
		usage = "resume signed writes after a pause"
	}
	return &cli.Command{
		Name:  name,
		Usage: usage,
		Action: func(ctx context.Context, cmd *cli.Command) error {
			return invoke(ctx, cmd, func(ctx context.Context, s *Switches) error {
				if err := s.SetPaused(ctx, paused); err != nil {
					return err
				}
				at, err := awaitInForce(ctx, s.clock)
				if err != nil {
					return err
				}
				return show(cmd, map[string]any{"writes_paused": paused, "in_force_at": at})
			})
		},
	}
}
