package billing

import (
	"context"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/urfave/cli/v3"

	"github.com/svcforum/svc/contracts/plugin"
)

// maxPricingFile bounds the pricing file read by `pricing publish`.
const maxPricingFile = 1 << 20

// Admin returns the operator's commands of WIRE.md section 8 that billing owns: pricing and wallet.
func Admin(invoke plugin.Invoke) []*cli.Command {
	show := func(cmd *cli.Command, v any) error { return plugin.Print(cmd, cmd.Root().Writer, v) }
	org := &cli.StringFlag{Name: "org", Usage: "the organisation's org_id", Required: true}
	credits := &cli.Int64Flag{Name: "credits", Usage: "how many credits (1 to 1000000000000)", Required: true}
	return []*cli.Command{
		{
			Name:  "pricing",
			Usage: "publish and list pricing versions",
			Commands: []*cli.Command{
				{
					Name:  "publish",
					Usage: "publish a pricing file: it becomes current, and the version it supersedes stays accepted for its grace period; a bad file is refused naming each bad member (JSON pointer, line and column)",
					Flags: []cli.Flag{&cli.StringFlag{Name: "file", Usage: `PRICING.json: {"pricing_version", "grace_period_days", "per_attachment", "prices": {operation: credits}}, every operation priced (start from ` + ExampleFile + `); "-" reads stdin`, Required: true}},
					Action: func(ctx context.Context, cmd *cli.Command) error {
						raw, err := readFile(cmd.String("file"), cmd.Root().Reader)
						if err != nil {
							return err
						}
						return invoke(ctx, cmd, func(ctx context.Context, p *Pricing) error {
							v, err := p.Publish(ctx, raw)
							if err != nil {
								return err
							}
							return show(cmd, map[string]any{"pricing_version": v.PricingVersion})
						})
					},
				},
				{
					Name:  "list",
					Usage: "list every pricing version, newest first, with its prices and whether it is still accepted",
					Action: func(ctx context.Context, cmd *cli.Command) error {
						return invoke(ctx, cmd, func(ctx context.Context, p *Pricing) error {
							vs, err := p.List(ctx)
							if err != nil {
								return err
							}
							if cmd.Bool("json") {
								return show(cmd, map[string]any{"versions": vs})
							}
							return pricingTable(vs).Write(cmd.Root().Writer)
						})
					},
				},
			},
		},
		{
			Name:  "wallet",
			Usage: "credit, debit and audit organisations' wallets",
			Commands: []*cli.Command{
				{
					Name:  "credit",
					Usage: "add credits to an organisation's wallet",
					Flags: []cli.Flag{org, credits, &cli.StringFlag{Name: "reason", Value: "operator credit", Usage: "why, for the ledger"}},
					Action: func(ctx context.Context, cmd *cli.Command) error {
						return invoke(ctx, cmd, func(ctx context.Context, w *Wallets) error {
							wl, err := w.Credit(ctx, cmd.String("org"), cmd.Int64("credits"), cmd.String("reason"))
							if err != nil {
								return err
							}
							return show(cmd, map[string]any{"org_id": wl.OrgID, "balance": wl.Balance})
						})
					},
				},
				{
					Name:  "debit",
					Usage: "remove credits from an organisation's wallet (never below zero)",
					Flags: []cli.Flag{org, credits, &cli.StringFlag{Name: "reason", Usage: "why, for the ledger", Required: true}},
					Action: func(ctx context.Context, cmd *cli.Command) error {
						return invoke(ctx, cmd, func(ctx context.Context, w *Wallets) error {
							wl, err := w.Debit(ctx, cmd.String("org"), cmd.Int64("credits"), cmd.String("reason"))
							if err != nil {
								return err
							}
							return show(cmd, map[string]any{"org_id": wl.OrgID, "balance": wl.Balance})
						})
					},
				},
				{
					Name:  "audit",
					Usage: "check that every balance equals credits minus debits minus charges in the ledger; exits non-zero on a discrepancy",
					Flags: []cli.Flag{&cli.StringFlag{Name: "org", Usage: "only this organisation"}},
					Action: func(ctx context.Context, cmd *cli.Command) error {
						return invoke(ctx, cmd, func(ctx context.Context, w *Wallets) error {
							checked, found, err := w.Audit(ctx, cmd.String("org"))
							if err != nil {
								return err
							}
							if found == nil {
								found = []Discrepancy{}
							}
							if err := show(cmd, map[string]any{"organisations_checked": checked, "discrepancies": found}); err != nil {
								return err
							}
							if len(found) > 0 {
								return cli.Exit(fmt.Sprintf("wallet audit: %d discrepancies", len(found)), 3)
							}
							return nil
						})
					},
				},
			},
		},
	}
}

func readFile(name string, stdin io.Reader) ([]byte, error) {
	var r io.Reader = stdin
	if name != "-" {
		f, err := os.Open(name)
		if err != nil {
			return nil, fmt.Errorf("read pricing file: %w", err)
		}
		defer f.Close()
		r = f
	}
	raw, err := io.ReadAll(io.LimitReader(r, maxPricingFile+1))
	if err != nil {
		return nil, fmt.Errorf("read pricing file: %w", err)
	}
	if len(raw) > maxPricingFile {
		return nil, fmt.Errorf("read pricing file: larger than %d bytes", maxPricingFile)
	}
	return raw, nil
}

// pricingTable is pricing list's human output: a version per row, its prices as op=credits in the
// order of the operations' names.
func pricingTable(vs []Price) plugin.Table {
	t := plugin.Table{Header: []string{"PRICING_VERSION", "CURRENT", "PRICES", "PER_ATTACHMENT", "PUBLISHED", "ACCEPTED_UNTIL"}}
	for _, v := range vs {
		ops := slices.Sorted(maps.Keys(v.Prices))
		prices := make([]string, len(ops))
		for i, op := range ops {
			prices[i] = op + "=" + strconv.FormatInt(v.Prices[op], 10)
		}
		until := ""
		if v.AcceptedUntil != nil {
			until = v.AcceptedUntil.UTC().Format(time.RFC3339)
		}
		t.Add(v.PricingVersion, strconv.FormatBool(v.Current), strings.Join(prices, " "), strconv.FormatInt(v.PerAttachment, 10), v.PublishedAt.UTC().Format(time.RFC3339), until)
	}
	return t
}
