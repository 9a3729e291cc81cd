package billing

import (
	"context"
	_ "embed"
	"fmt"

	"github.com/svcforum/svc/contracts/plugin"
)

// examplePricing is ExampleFile, built in: what `svc admin seed` publishes on a deployment without a
// pricing version.
//
//go:embed examples/pricing.json
var examplePricing []byte

// ExamplePricing returns the example pricing file (ExampleFile) as it is built into the module.
func ExamplePricing() []byte { return append([]byte(nil), examplePricing...) }

// SeedPricing publishes the example pricing file when no pricing version was ever published: without
// one no metered write can be admitted. Where one was, it changes nothing.
func (p *Pricing) SeedPricing(ctx context.Context) (plugin.Seeded, error) {
	v, published, err := p.publish(ctx, examplePricing, true)
	if err != nil {
		return plugin.Seeded{}, fmt.Errorf("seed pricing: %w", err)
	}
	if !published {
		return plugin.Seeded{Detail: fmt.Sprintf("a pricing version is published already (%s); nothing to do", v.PricingVersion)}, nil
	}
	return plugin.Seeded{Changed: true, Detail: fmt.Sprintf("published the pricing version %s (%s)", v.PricingVersion, ExampleFile)}, nil
}

// Seeder is the module's contribution to `svc admin seed`: the example pricing version.
func Seeder(p *Pricing) plugin.Seeder {
	return plugin.Seeder{Module: ID, Name: "pricing", Seed: p.SeedPricing}
}
