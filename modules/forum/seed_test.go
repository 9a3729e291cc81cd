package forum_test

import (
	"context"
	"strings"
	"testing"

	"github.com/svcforum/svc/database/dbtest"
	"github.com/svcforum/svc/modules/forum"
)

// categorySlugs reads every category's slug and state, by slug.
func categorySlugs(t *testing.T, w *world) map[string]string {
	t.Helper()
	var rows []struct{ Slug, State string }
	if err := w.db.Table("forum_categories").Select("slug, state").Find(&rows).Error; err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, r := range rows {
		out[r.Slug] = r.State
	}
	return out
}

// Seeding an empty forum creates the starter categories, open; a second run, and a run on a forum
// whose operator made a category of its own, change nothing.
func TestSeedCreatesTheStarterCategoriesOnce(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, dialect string) {
		ctx := context.Background()
		w := newWorld(t, dialect)
		got, err := w.cats.SeedCategories(ctx)
		if err != nil || !got.Changed || got.Detail != "created the open categories general, help, showcase, meta" {
			t.Fatalf("first seed: %+v %v", got, err)
		}
		slugs := categorySlugs(t, w)
		if len(slugs) != len(forum.StarterCategories) {
			t.Fatalf("categories after the seed: %v", slugs)
		}
		for _, c := range forum.StarterCategories {
			if slugs[c.Slug] != forum.CategoryOpen {
				t.Fatalf("categories after the seed: %v", slugs)
			}
		}
		again, err := w.cats.SeedCategories(ctx)
		if err != nil || again.Changed || !strings.Contains(again.Detail, "(4)") {
			t.Fatalf("second seed: %+v %v", again, err)
		}
		if n := len(categorySlugs(t, w)); n != 4 {
			t.Fatalf("the second seed made categories: %d", n)
		}

		other := newWorld(t, dialect)
		other.category(t, "soups")
		if got, err := other.cats.SeedCategories(ctx); err != nil || got.Changed {
			t.Fatalf("seed after the operator's category: %+v %v", got, err)
		}
		if slugs := categorySlugs(t, other); len(slugs) != 1 {
			t.Fatalf("the seed added to the operator's categories: %v", slugs)
		}
	})
}
