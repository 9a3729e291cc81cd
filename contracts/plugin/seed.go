package plugin

import (
	"context"

	"go.uber.org/fx"
)

// Seeder puts into a deployment that has none of it what the module needs before it can take a write
// (`svc admin seed`, `svc serve --seed`): billing a pricing version, the forum its categories. It is
// idempotent: where the module has any of what it seeds already, Seed changes nothing and says what it
// found, so that every run after the first is a no-op.
type Seeder struct {
	Module string
	Name   string // what it seeds, one lowercase word ("pricing", "categories")
	Seed   func(ctx context.Context) (Seeded, error)
}

// Seeded is what one Seeder did.
type Seeded struct {
	Changed bool   `json:"changed"` // it wrote something
	Detail  string `json:"detail"`  // what it wrote, or what it found that made it write nothing
}

// SeedersGroup is the value group of the modules' Seeders.
const SeedersGroup = `group:"svc.seeders"`

// AsSeeder annotates a constructor returning a Seeder for the seeders group.
func AsSeeder(f any) any { return fx.Annotate(f, fx.ResultTags(SeedersGroup)) }
