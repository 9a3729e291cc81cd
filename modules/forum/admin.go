package forum

import (
	"context"
	"fmt"

	"github.com/urfave/cli/v3"
	"gorm.io/gorm"

	"github.com/svcforum/svc/contracts/plugin"
	"github.com/svcforum/svc/contracts/port"
)

// Admin returns the operator's category commands (WIRE.md section 8) and thread moderation.
func Admin(invoke plugin.Invoke) []*cli.Command {
	show := func(cmd *cli.Command, v any) error { return plugin.Print(cmd, cmd.Root().Writer, v) }
	return []*cli.Command{threadCommand(invoke, show), {
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

// threadCommand is `svc admin thread lock|unlock|move`: moderation of whole threads.
func threadCommand(invoke plugin.Invoke, show func(*cli.Command, any) error) *cli.Command {
	setLocked := func(name, usage string, locked bool) *cli.Command {
		return &cli.Command{
			Name:      name,
			Usage:     usage,
			ArgsUsage: "THREAD_ID",
			Action: func(ctx context.Context, cmd *cli.Command) error {
				id, err := threadArg(cmd)
				if err != nil {
					return err
				}
				return invoke(ctx, cmd, func(ctx context.Context, db *gorm.DB, clock port.Clock) error {
					s, err := NewThreadAdmin(db, clock).SetLocked(ctx, id, locked)
					if err != nil {
						return err
					}
					return show(cmd, s)
				})
			},
		}
	}
	return &cli.Command{
		Name:  "thread",
		Usage: "moderate whole threads: lock, unlock, move to another category",
		Commands: []*cli.Command{
			setLocked("lock", "lock a thread: it stays readable and takes no replies, votes, tombstones or image changes (403 thread_locked)", true),
			setLocked("unlock", "unlock a locked thread: it takes writes again", false),
			{
				Name:      "move",
				Usage:     "move a thread to another category (of any state), with its replies; both categories' thread counts change in the same transaction",
				ArgsUsage: "THREAD_ID",
				Flags:     []cli.Flag{&cli.StringFlag{Name: "category", Usage: "the slug of the category to move it to", Required: true}},
				Action: func(ctx context.Context, cmd *cli.Command) error {
					id, err := threadArg(cmd)
					if err != nil {
						return err
					}
					return invoke(ctx, cmd, func(ctx context.Context, db *gorm.DB, clock port.Clock) error {
						s, err := NewThreadAdmin(db, clock).Move(ctx, id, cmd.String("category"))
						if err != nil {
							return err
						}
						return show(cmd, s)
					})
				},
			},
		},
	}
}

// threadArg is the command's one THREAD_ID argument.
func threadArg(cmd *cli.Command) (string, error) {
	if cmd.Args().Len() != 1 {
		return "", fmt.Errorf("%s takes one THREAD_ID", cmd.FullName())
	}
	return cmd.Args().First(), nil
}
