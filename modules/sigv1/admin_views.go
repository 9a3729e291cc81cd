package sigv1

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/urfave/cli/v3"

	"github.com/svcforum/svc/contracts/plugin"
)

// The list and show commands of org, agent and key: what an operator looks up before acting.

func limitFlag() cli.Flag {
	return &cli.IntFlag{Name: "limit", Value: DefaultListLimit, Usage: fmt.Sprintf("print at most this many, newest first (1 to %d)", MaxListLimit)}
}

func stateFlag(states ...string) cli.Flag {
	return &cli.StringFlag{Name: "state", Usage: "only those in this state: " + strings.Join(states, " or ")}
}

func filterOf(cmd *cli.Command) ListFilter {
	return ListFilter{Limit: cmd.Int("limit"), State: cmd.String("state")}
}

func orgList(invoke plugin.Invoke) *cli.Command {
	return &cli.Command{
		Name:  "list",
		Usage: "list organisations, newest first: id, name, state (frozen: its writes are frozen), agents, created",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "name", Usage: "only those whose name contains this text (any case)"},
			stateFlag(OrgActive, OrgFrozen),
			limitFlag(),
		},
		Action: func(ctx context.Context, cmd *cli.Command) error {
			return invoke(ctx, cmd, func(ctx context.Context, r *Registry) error {
				f := filterOf(cmd)
				f.Name = cmd.String("name")
				orgs, more, err := r.ListOrgs(ctx, f)
				if err != nil {
					return err
				}
				return printList(cmd, "orgs", orgs, more, orgTable(orgs))
			})
		},
	}
}

func orgShow(invoke plugin.Invoke) *cli.Command {
	return &cli.Command{
		Name:  "show",
		Usage: "show one organisation and every one of its agents",
		Flags: []cli.Flag{&cli.StringFlag{Name: "org", Usage: "the organisation's org_id", Required: true}},
		Action: func(ctx context.Context, cmd *cli.Command) error {
			return invoke(ctx, cmd, func(ctx context.Context, r *Registry) error {
				o, err := r.ShowOrg(ctx, cmd.String("org"))
				if err != nil {
					return err
				}
				return printShow(cmd, o, []field{
					{"org_id", o.ID}, {"name", o.Name}, {"state", o.State},
					{"agents", strconv.FormatInt(o.Agents, 10)}, {"created_at", stamp(o.CreatedAt)},
				}, "agents", agentTable(o.AgentList, false))
			})
		},
	}
}

func agentList(invoke plugin.Invoke) *cli.Command {
	return &cli.Command{
		Name:  "list",
		Usage: "list agents, newest first: id, handle, state, whether their writes are frozen, active keys, created, organisation",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "org", Usage: "only this organisation's agents (org_id)"},
			&cli.StringFlag{Name: "handle", Usage: "only those whose handle contains this text"},
			stateFlag(AgentActive, AgentSuspended),
			limitFlag(),
		},
		Action: func(ctx context.Context, cmd *cli.Command) error {
			return invoke(ctx, cmd, func(ctx context.Context, r *Registry) error {
				f := filterOf(cmd)
				f.Org, f.Handle = cmd.String("org"), cmd.String("handle")
				agents, more, err := r.ListAgents(ctx, f)
				if err != nil {
					return err
				}
				return printList(cmd, "agents", agents, more, agentTable(agents, true))
			})
		},
	}
}

func agentShow(invoke plugin.Invoke) *cli.Command {
	return &cli.Command{
		Name:  "show",
		Usage: "show one agent, by --agent or --handle, and every one of its keys (fingerprints, never private material)",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "agent", Usage: "the agent's agent_id"},
			&cli.StringFlag{Name: "handle", Usage: "or its handle"},
		},
		Action: func(ctx context.Context, cmd *cli.Command) error {
			id, handle := cmd.String("agent"), cmd.String("handle")
			if (id == "") == (handle == "") {
				return fmt.Errorf("agent show takes --agent or --handle, one of them")
			}
			return invoke(ctx, cmd, func(ctx context.Context, r *Registry) error {
				a, err := r.ShowAgent(ctx, id, handle)
				if err != nil {
					return err
				}
				return printShow(cmd, a, []field{
					{"agent_id", a.ID}, {"handle", a.Handle}, {"state", a.State},
					{"writes_frozen", strconv.FormatBool(a.WritesFrozen)},
					{"paused_by_owner", strconv.FormatBool(a.PausedByOwner)}, {"org_id", a.OrgID}, {"org_name", a.OrgName},
					{"active_keys", strconv.FormatInt(a.ActiveKeys, 10)},
					{"created_at", stamp(a.CreatedAt)}, {"updated_at", stamp(a.UpdatedAt)},
				}, "keys", keyTable(a.Keys, false))
			})
		},
	}
}

func keyList(invoke plugin.Invoke) *cli.Command {
	return &cli.Command{
		Name:  "list",
		Usage: "list keys, newest first: id, state, fingerprint, created, revoked, agent",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "agent", Usage: "only this agent's keys (agent_id)"},
			stateFlag(KeyActive, KeyRevoked),
			limitFlag(),
		},
		Action: func(ctx context.Context, cmd *cli.Command) error {
			return invoke(ctx, cmd, func(ctx context.Context, r *Registry) error {
				f := filterOf(cmd)
				f.Agent = cmd.String("agent")
				keys, more, err := r.ListKeys(ctx, f)
				if err != nil {
					return err
				}
				return printList(cmd, "keys", keys, more, keyTable(keys, true))
			})
		},
	}
}

func keyShow(invoke plugin.Invoke) *cli.Command {
	return &cli.Command{
		Name:  "show",
		Usage: "show one key: its agent, state, fingerprint and public key",
		Flags: []cli.Flag{&cli.StringFlag{Name: "key", Usage: "the key_id", Required: true}},
		Action: func(ctx context.Context, cmd *cli.Command) error {
			return invoke(ctx, cmd, func(ctx context.Context, r *Registry) error {
				k, err := r.ShowKey(ctx, cmd.String("key"))
				if err != nil {
					return err
				}
				return printShow(cmd, k, []field{
					{"key_id", k.ID}, {"agent_id", k.AgentID}, {"handle", k.Handle}, {"state", k.State},
					{"fingerprint", k.Fingerprint}, {"public_key", k.PublicKey},
					{"created_at", stamp(k.CreatedAt)}, {"revoked_at", stampOrNone(k.RevokedAt)},
				}, "", plugin.Table{})
			})
		},
	}
}
