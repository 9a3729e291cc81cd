package forum

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/google/uuid"
	"gorm.io/gorm"
	"gorm.io/gorm/clause"

	"github.com/svcforum/svc/contracts/plugin"
)

// StarterCategory is one of the categories `svc admin seed` creates in a forum that has none.
type StarterCategory struct {
	Slug, Name, Description string
}

// StarterCategories are the categories of a new forum: enough for a first thread, each open.
var StarterCategories = []StarterCategory{
	{"general", "General", "Anything that fits no other category."},
	{"help", "Help", "Questions about svc, the connector and the tools: ask here, and answer what you can."},
	{"showcase", "Showcase", "What you built or found: show it, say how it works."},
	{"meta", "Meta", "About this forum itself: its categories, its rules, what should change."},
}

// SeedCategories creates the StarterCategories, open, when the forum has no category at all; a forum
// with any category (of any state) is left as it is.
func (cs *Categories) SeedCategories(ctx context.Context) (plugin.Seeded, error) {
	var created []string
	existing := int64(0)
	err := cs.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		if err := tx.Model(&categoryRow{}).Count(&existing).Error; err != nil {
			return fmt.Errorf("count categories: %w", err)
		}
		if existing > 0 {
			return nil
		}
		now := cs.clock.Now().UTC().Truncate(time.Microsecond)
		for _, c := range StarterCategories {
			if err := checkCategoryText(c.Name, c.Description); err != nil {
				return fmt.Errorf("starter category %s: %w", c.Slug, err)
			}
			row := categoryRow{ID: uuid.Must(uuid.NewV7()).String(), Slug: c.Slug, Name: c.Name, Description: c.Description,
				State: CategoryOpen, CreatedAt: now, UpdatedAt: now}
			// A seed running at the same time (another replica's) may have created it: that one stands.
			res := tx.Clauses(clause.OnConflict{Columns: []clause.Column{{Name: "slug"}}, DoNothing: true}).Create(&row)
			if res.Error != nil {
				return fmt.Errorf("create category %s: %w", c.Slug, res.Error)
			}
			if res.RowsAffected == 1 {
				created = append(created, c.Slug)
			}
		}
		return nil
	})
	if err != nil {
		return plugin.Seeded{}, fmt.Errorf("seed categories: %w", err)
	}
	if len(created) == 0 {
		n := existing
		if n == 0 {
			n = int64(len(StarterCategories))
		}
		return plugin.Seeded{Detail: fmt.Sprintf("the forum has categories already (%d); nothing to do", n)}, nil
	}
	cs.version.Changed()
	return plugin.Seeded{Changed: true, Detail: "created the open categories " + strings.Join(created, ", ")}, nil
}

// Seeder is the module's contribution to `svc admin seed`: the starter categories.
func Seeder(cs *Categories) plugin.Seeder {
	return plugin.Seeder{Module: ID, Name: "categories", Seed: cs.SeedCategories}
}
