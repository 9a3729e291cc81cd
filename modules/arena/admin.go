package arena

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/urfave/cli/v3"

	"github.com/svcforum/svc/contracts/plugin"
)

// Admin returns the operator's commands (WIRE.md section 12).
func Admin(invoke plugin.Invoke) []*cli.Command {
	show := func(cmd *cli.Command, v any) error { return plugin.Print(cmd, cmd.Root().Writer, v) }
	matchFlag := &cli.StringFlag{Name: "match", Usage: "the match's id", Required: true}
	return []*cli.Command{{
		Name:  "arena",
		Usage: "the arena: matches, their seats and start intents, and the grant key",
		Commands: []*cli.Command{
			{
				Name:  "match",
				Usage: "create, show and close matches",
				Commands: []*cli.Command{
					{
						Name: "create",
						Usage: "create a match whose seats are held by agents, granting tickets inside its window; each seat gets a start intent: " +
							"prints the match: match_id, its window, seats and intents",
						Flags: []cli.Flag{
							&cli.StringSliceFlag{Name: "seat", Usage: "a seat, NAME=AGENT_ID (NAME: 1..64 of A-Z a-z 0-9 _ -); repeat for each seat", Required: true},
							&cli.StringFlag{Name: "grants-from", Usage: "when grants start, RFC 3339 (default now)"},
							&cli.StringFlag{Name: "grants-until", Usage: "when grants end, RFC 3339 (default an hour after --grants-from)"},
						},
						Action: func(ctx context.Context, cmd *cli.Command) error {
							seats := map[string]string{}
							for _, s := range cmd.StringSlice("seat") {
								name, agent, ok := strings.Cut(s, "=")
								if !ok {
									return fmt.Errorf("--seat %q: give NAME=AGENT_ID", s)
								}
								if _, dup := seats[name]; dup {
									return fmt.Errorf("--seat %q: the seat %s is given twice", s, name)
								}
								seats[name] = agent
							}
							return invoke(ctx, cmd, func(ctx context.Context, m *Matches) error {
								from, until, err := window(cmd, m.clock.Now())
								if err != nil {
									return err
								}
								match, err := m.Create(ctx, seats, from, until)
								if err != nil {
									return err
								}
								return show(cmd, match)
							})
						},
					},
					{
						Name:  "show",
						Usage: "show a match, its seats and its start intents",
						Flags: []cli.Flag{matchFlag},
						Action: func(ctx context.Context, cmd *cli.Command) error {
							return invoke(ctx, cmd, func(ctx context.Context, m *Matches) error {
								match, err := m.Show(ctx, cmd.String("match"))
								if err != nil {
									return err
								}
								return show(cmd, match)
							})
						},
					},
					{
						Name:  "close",
						Usage: "close a match: it grants no more (tickets already issued live until their exp), and its unclaimed start intents are stopped",
						Flags: []cli.Flag{matchFlag},
						Action: func(ctx context.Context, cmd *cli.Command) error {
							return invoke(ctx, cmd, func(ctx context.Context, m *Matches) error {
								match, err := m.Close(ctx, cmd.String("match"))
								if err != nil {
									return err
								}
								return show(cmd, match)
							})
						},
					},
				},
			},
			{
				Name:  "intent",
				Usage: "start intents: a seat's runner claims one and reports its state",
				Commands: []*cli.Command{{
					Name:  "create",
					Usage: "create a start intent for a seat of a match that grants now: prints the intent, with its intent_id",
					Flags: []cli.Flag{matchFlag, &cli.StringFlag{Name: "seat", Usage: "the seat's name", Required: true}},
					Action: func(ctx context.Context, cmd *cli.Command) error {
						return invoke(ctx, cmd, func(ctx context.Context, m *Matches) error {
							intent, err := m.CreateIntent(ctx, cmd.String("match"), cmd.String("seat"))
							if err != nil {
								return err
							}
							return show(cmd, intent)
						})
					},
				}},
			},
			{
				Name:  "grant-key",
				Usage: "the key that signs grant tickets (--arena-grant-key)",
				Commands: []*cli.Command{{
					Name: "generate",
					Usage: "print a new grant key and its id: {\"grant_key\": ..., \"key_id\": ...}; put it first in --arena-grant-key and keep the old key " +
						"after it until the tickets it signed expired (--arena-ticket-ttl)",
					Action: func(_ context.Context, cmd *cli.Command) error {
						seed, kid, err := NewGrantKey()
						if err != nil {
							return err
						}
						return show(cmd, map[string]any{"grant_key": seed, "key_id": kid})
					},
				}},
			},
		},
	}}
}

// window reads --grants-from and --grants-until: from now for an hour by default.
func window(cmd *cli.Command, now time.Time) (from, until time.Time, err error) {
	from = now.UTC()
	if s := cmd.String("grants-from"); s != "" {
		if from, err = time.Parse(time.RFC3339, s); err != nil {
			return from, until, fmt.Errorf("--grants-from %q is not RFC 3339 (2026-11-25T18:00:00Z)", s)
		}
	}
	until = from.Add(time.Hour)
	if s := cmd.String("grants-until"); s != "" {
		if until, err = time.Parse(time.RFC3339, s); err != nil {
			return from, until, fmt.Errorf("--grants-until %q is not RFC 3339 (2026-11-25T19:00:00Z)", s)
		}
	}
	return from, until, nil
}
