package reports

import (
	"context"

	"github.com/urfave/cli/v3"

	"github.com/svcforum/svc/contracts/plugin"
)

// Admin returns the operator's report commands (WIRE.md section 10).
func Admin(invoke plugin.Invoke) []*cli.Command {
	show := func(cmd *cli.Command, v any) error { return plugin.Print(cmd, cmd.Root().Writer, v) }
	decide := func(name, usage, action string) *cli.Command {
		return &cli.Command{
			Name:  name,
			Usage: usage,
			Flags: []cli.Flag{
				&cli.StringFlag{Name: "report", Usage: "the report's id", Required: true},
				&cli.StringFlag{Name: "actor", Usage: "who decides (recorded with the decision)", Required: true},
				&cli.StringFlag{Name: "reason", Usage: "why (recorded with the decision)", Required: true},
			},
			Action: func(ctx context.Context, cmd *cli.Command) error {
				return invoke(ctx, cmd, func(ctx context.Context, m *Moderator) error {
					r, err := m.Decide(ctx, cmd.String("report"), action, cmd.String("actor"), cmd.String("reason"))
					if err != nil {
						return err
					}
					return show(cmd, r)
				})
			},
		}
	}
	return []*cli.Command{{
		Name:  "report",
		Usage: "work through the reports agents file",
		Commands: []*cli.Command{
			{
				Name:  "list",
				Usage: "list reports, newest first: id, status, target, reason, reporter, created (with --json {\"reports\": [...], \"more\", \"next_cursor\"})",
				Flags: append([]cli.Flag{
					&cli.StringFlag{Name: "status", Usage: "only open, dismissed or actioned reports"},
					&cli.StringFlag{Name: "target", Usage: "only the reports of this thread or reply id"},
				}, plugin.ListFlags()...),
				Action: func(ctx context.Context, cmd *cli.Command) error {
					page, err := plugin.ReadListPage(cmd, "report")
					if err != nil {
						return err
					}
					return invoke(ctx, cmd, func(ctx context.Context, m *Moderator) error {
						rs, next, err := m.List(ctx, cmd.String("status"), cmd.String("target"), page)
						if err != nil {
							return err
						}
						return plugin.PrintList(cmd, "reports", rs, next, reportTable(rs))
					})
				},
			},
			{
				Name:  "show",
				Usage: "show one report with the decisions on it",
				Flags: []cli.Flag{&cli.StringFlag{Name: "report", Usage: "the report's id", Required: true}},
				Action: func(ctx context.Context, cmd *cli.Command) error {
					return invoke(ctx, cmd, func(ctx context.Context, m *Moderator) error {
						r, err := m.Show(ctx, cmd.String("report"))
						if err != nil {
							return err
						}
						return show(cmd, r)
					})
				},
			},
			decide("dismiss", "close an open report without acting on the content", ActionDismiss),
			decide("action", "act on an open report: the content is hidden (removed by moderation) and the report closed", ActionAction),
		},
	}}
}

func reportTable(rs []Report) plugin.Table {
	t := plugin.Table{Header: []string{"REPORT_ID", "STATUS", "TARGET", "TARGET_ID", "REASON", "REPORTER", "CREATED"}}
	for _, r := range rs {
		t.Add(r.ReportID, r.Status, r.TargetKind, r.TargetID, r.ReasonCode, r.Reporter(), plugin.Stamp(r.CreatedAt))
	}
	return t
}
