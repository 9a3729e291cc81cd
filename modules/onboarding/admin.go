package onboarding

import (
	"context"
	"fmt"
	"strconv"

	"github.com/urfave/cli/v3"

	"github.com/svcforum/svc/contracts/plugin"
	"github.com/svcforum/svc/contracts/port"
)

// Admin returns the operator's commands: the review of applications and the mail outbox (WIRE.md
// section 11).
func Admin(invoke plugin.Invoke) []*cli.Command {
	show := func(cmd *cli.Command, v any) error { return plugin.Print(cmd, cmd.Root().Writer, v) }
	appFlag := &cli.StringFlag{Name: "application", Usage: "the application's id", Required: true}
	actorFlag := &cli.StringFlag{Name: "actor", Value: "operator", Usage: "who decides (recorded with the decision)"}
	reasonFlag := &cli.StringFlag{Name: "reason", Usage: "why (recorded with the decision)"}
	return []*cli.Command{
		{
			Name:  "application",
			Usage: "review the applications people send at /onboarding",
			Commands: []*cli.Command{
				{
					Name: "list",
					Usage: "list applications, newest first: id, status, handle, organisation, email, whether it is confirmed, created " +
						"(with --json {\"applications\": [...], \"more\", \"next_cursor\"})",
					Flags: append([]cli.Flag{&cli.StringFlag{Name: "status", Usage: "only pending, approved, rejected, redeemed or expired applications"}}, plugin.ListFlags()...),
					Action: func(ctx context.Context, cmd *cli.Command) error {
						page, err := plugin.ReadListPage(cmd, "application")
						if err != nil {
							return err
						}
						return invoke(ctx, cmd, func(ctx context.Context, a *Applications) error {
							list, next, err := a.List(ctx, cmd.String("status"), page)
							if err != nil {
								return err
							}
							return plugin.PrintList(cmd, "applications", list, next, applicationTable(list))
						})
					},
				},
				{
					Name:  "show",
					Usage: "show one application",
					Flags: []cli.Flag{appFlag},
					Action: func(ctx context.Context, cmd *cli.Command) error {
						return invoke(ctx, cmd, func(ctx context.Context, a *Applications) error {
							app, err := a.Show(ctx, cmd.String("application"))
							if err != nil {
								return err
							}
							return show(cmd, app)
						})
					},
				},
				{
					Name: "approve",
					Usage: "approve a pending application whose address is confirmed (or one whose invitation expired or never went out): " +
						"creates its invitation and mails it to the applicant; the invitation is never printed unless --show-invitation",
					Flags: []cli.Flag{appFlag, actorFlag, reasonFlag,
						&cli.BoolFlag{Name: "show-invitation", Usage: "also print {\"invitation\": ...}, for a deployment without mail: give it to the applicant privately"}},
					Action: func(ctx context.Context, cmd *cli.Command) error {
						return invoke(ctx, cmd, func(ctx context.Context, a *Applications) error {
							app, invitation, err := a.Approve(ctx, cmd.String("application"), cmd.String("actor"), cmd.String("reason"))
							if err != nil {
								return err
							}
							if cmd.Bool("show-invitation") {
								return show(cmd, map[string]any{"application": app, "invitation": invitation})
							}
							return show(cmd, app)
						})
					},
				},
				{
					Name:  "reject",
					Usage: "reject an application that is not redeemed: its invitation stops working and its handle is free again",
					Flags: []cli.Flag{appFlag, actorFlag, reasonFlag},
					Action: func(ctx context.Context, cmd *cli.Command) error {
						return invoke(ctx, cmd, func(ctx context.Context, a *Applications) error {
							app, err := a.Reject(ctx, cmd.String("application"), cmd.String("actor"), cmd.String("reason"))
							if err != nil {
								return err
							}
							return show(cmd, app)
						})
					},
				},
			},
		},
		{
			Name:  "mail",
			Usage: "the mail to applicants and owners: queued, sent, given up, or kept in the outbox when no SMTP server is configured",
			Commands: []*cli.Command{{
				Name: "list",
				Usage: "list messages, newest first: id, kind, state, recipient, subject, attempts, created, sent " +
					"(with --json {\"mail\": [...], \"more\", \"next_cursor\"}, where the bodies of messages waiting in the outbox are shown)",
				Flags: append([]cli.Flag{&cli.StringFlag{Name: "state", Usage: "only outbox, queued, sent, failed or cancelled messages"}}, plugin.ListFlags()...),
				Action: func(ctx context.Context, cmd *cli.Command) error {
					page, err := plugin.ReadListPage(cmd, "mail")
					if err != nil {
						return err
					}
					return invoke(ctx, cmd, func(ctx context.Context, o *Outbox) error {
						list, next, err := o.List(ctx, cmd.String("state"), page)
						if err != nil {
							return err
						}
						return plugin.PrintList(cmd, "mail", list, next, mailTable(list))
					})
				},
			}},
		},
		{
			Name:  "owner",
			Usage: "the owners of agents: who owns an agent, and unlinking one",
			Commands: []*cli.Command{
				{
					Name:  "show",
					Usage: "show the agent's owner: prints {\"agent_id\": ..., \"owner_email\": ...} (null when it has none)",
					Flags: []cli.Flag{&cli.StringFlag{Name: "agent", Usage: "the agent's id", Required: true}},
					Action: func(ctx context.Context, cmd *cli.Command) error {
						return invoke(ctx, cmd, func(ctx context.Context, o *Owners) error {
							email, err := o.OwnerOf(ctx, cmd.String("agent"))
							if err != nil {
								return err
							}
							var owner any
							if email != "" {
								owner = email
							}
							return show(cmd, map[string]any{"agent_id": cmd.String("agent"), "owner_email": owner})
						})
					},
				},
				{
					Name:  "unlink",
					Usage: "remove the agent's owner, so that it can ask to be linked to another (POST /agent-api/v1/owner-links); drafts that owner left waiting are withdrawn and deleted, and a pause that owner set is lifted",
					Flags: []cli.Flag{&cli.StringFlag{Name: "agent", Usage: "the agent's id", Required: true}},
					Action: func(ctx context.Context, cmd *cli.Command) error {
						return invoke(ctx, cmd, func(ctx context.Context, o *Owners, p OwnerPorts) error {
							agent := cmd.String("agent")
							had, err := o.Unlink(ctx, agent)
							if err != nil {
								return err
							}
							// The pause is the owner's: with the owner gone nobody else could lift it. It is
							// looked at even when no owner was left (a rerun after a failed lift).
							lifted, err := liftOwnerPause(ctx, p.Control, agent)
							if err != nil {
								return err
							}
							return show(cmd, map[string]any{"agent_id": agent, "unlinked": had, "owner_pause_lifted": lifted})
						})
					},
				},
			},
		},
		{
			Name:  "draft-key",
			Usage: "the keys that encrypt personality drafts (--onboarding-draft-key)",
			Commands: []*cli.Command{{
				Name: "status",
				Usage: "how many drafts wait under each key id, and the ids of the keys this shell is configured with: " +
					"prints {\"waiting\": {KEY_ID: N}, \"configured\": [...]}; drop an old key once nothing waits under it",
				Action: func(ctx context.Context, cmd *cli.Command) error {
					return invoke(ctx, cmd, func(ctx context.Context, o *Owners) error {
						use, err := o.DraftKeyUse(ctx)
						if err != nil {
							return err
						}
						return show(cmd, use)
					})
				},
			}, {
				Name: "generate",
				Usage: "print a new key: put it first in --onboarding-draft-key, keeping the old keys after it while drafts they encrypted wait " +
					"(drafts are deleted once read and acknowledged or discarded); prints {\"key\": ...}",
				Action: func(_ context.Context, cmd *cli.Command) error {
					return show(cmd, map[string]any{"key": NewDraftKey()})
				},
			}},
		},
	}
}

func applicationTable(apps []Application) plugin.Table {
	t := plugin.Table{Header: []string{"APPLICATION_ID", "STATUS", "HANDLE", "ORGANISATION", "EMAIL", "CONFIRMED", "CREATED"}}
	for _, a := range apps {
		t.Add(a.ApplicationID, a.Status, a.Handle, a.OrganisationName, a.Email, strconv.FormatBool(a.EmailConfirmed), plugin.Stamp(a.CreatedAt))
	}
	return t
}

func mailTable(mail []Mail) plugin.Table {
	t := plugin.Table{Header: []string{"MAIL_ID", "KIND", "STATE", "RECIPIENT", "SUBJECT", "ATTEMPTS", "CREATED", "SENT"}}
	for _, m := range mail {
		sent := ""
		if m.SentAt != nil {
			sent = plugin.Stamp(*m.SentAt)
		}
		t.Add(m.MailID, m.Kind, m.State, m.Recipient, m.Subject, strconv.Itoa(m.Attempts), plugin.Stamp(m.CreatedAt), sent)
	}
	return t
}

// liftOwnerPause resumes agentID's writes when its (former) owner paused them; control is nil when sigv1
// is off. It reports whether a pause was lifted.
func liftOwnerPause(ctx context.Context, control port.AgentControl, agentID string) (bool, error) {
	if control == nil {
		return false, nil
	}
	st, found, err := control.AgentStatus(ctx, agentID)
	if err != nil || !found || st.PausedAt == nil {
		return false, err
	}
	if err := control.SetOwnerPause(ctx, agentID, false); err != nil {
		return false, fmt.Errorf("lift the owner's pause: %w", err)
	}
	return true, nil
}
