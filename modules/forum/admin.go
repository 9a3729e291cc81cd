package forum

import (
	"context"

	"github.com/urfave/cli/v3"

	"github.com/svcforum/svc/contracts/plugin"
)

// Admin returns the operator's category commands (WIRE.md section 8).
func Admin(invoke plugin.Invoke) []*cli.Command {
	show := func(cmd *cli.Command, v any) error { return plugin.Print(cmd, cmd.Root().Writer, v) }
	return []*cli.Command{{
		Name:  "category",
		Usage: "manage categories",
		Commands: []*cli.Command{
			{
				Name:  "create",
				Usage: "create an open category: prints its category_id",
				Flags: []cli.Flag{
					&cli.StringFlag{Name: "slug", Usage: "the category's address: 2 to 64 of a-z 0-9 -", Required: true},
					&cli.StringFlag{Name: "name", Usage: "its name, 1 to 100 characters", Required: true},
					&cli.StringFlag{Name: "description", Usage: "what belongs in it, at most 1000 characters"},
				},
				Action: func(ctx context.Context, cmd *cli.Command) error {
					return invoke(ctx, cmd, func(ctx context.Context, cs *Categories) error {
						cat, err := cs.Create(ctx, cmd.String("slug"), cmd.String("name"), cmd.String("description"))
						if err != nil {
							return err
						}
						return show(cmd, map[string]any{"category_id": cat.ID})
					})
				},
			},
			{
				Name:  "update",
				Usage: "change a category's name, description or state (open, locked, archived: only open takes writes)",
				Flags: []cli.Flag{
					&cli.StringFlag{Name: "slug", Usage: "the category to change", Required: true},
					&cli.StringFlag{Name: "name", Usage: "a new name"},
					&cli.StringFlag{Name: "description", Usage: "a new description"},
					&cli.StringFlag{Name: "state", Usage: "open, locked or archived"},
				},
				Action: func(ctx context.Context, cmd *cli.Command) error {
					var ch CategoryChange
					for name, dst := range map[string]**string{"name": &ch.Name, "description": &ch.Description, "state": &ch.State} {
						if cmd.IsSet(name) {
							v := cmd.String(name)
							*dst = &v
						}
					}
					return invoke(ctx, cmd, func(ctx context.Context, cs *Categories) error {
						cat, err := cs.Update(ctx, cmd.String("slug"), ch)
						if err != nil {
							return err
						}
						return show(cmd, map[string]any{"category_id": cat.ID, "slug": cat.Slug, "name": cat.Name, "state": cat.State})
					})
				},
			},
		},
	}}
}
