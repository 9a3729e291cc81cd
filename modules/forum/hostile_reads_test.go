package forum_test

import (
	"context"
	"sync/atomic"
	"testing"

	"gorm.io/gorm"

	"github.com/svcforum/svc/contracts/site"
	"github.com/svcforum/svc/database"
	"github.com/svcforum/svc/database/dbtest"
	"github.com/svcforum/svc/modules/forum"
	"github.com/svcforum/svc/testkit"
)

// TestHostileSlugs: a slug that is not text (an invalid UTF-8 byte, a NUL, which PostgreSQL refuses
// as an error) names no category, on the JSON plane, the pages and the feeds alike: 404, never 500.
func TestHostileSlugs(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, dialect string) {
		t.Parallel()
		w := newWorld(t, dialect)
		w.category(t, "soup")
		testkit.MountPublic(t, w.engine, forum.NewPages(w.reads, site.New(forum.Nav())).Routes())
		for _, target := range []string{
			forum.CategoriesPath + "/%ff",
			forum.CategoriesPath + "/%00",
			forum.CategoriesPath + "/%ff/threads",
			forum.CategoryPages + "/%ff",
			forum.CategoryPages + "/%00",
			forum.CategoryPages + "/%ff/feed.atom",
		} {
			if r := w.get(target); r.Status != 404 {
				t.Errorf("%s: %d %s, want 404", target, r.Status, testkit.Short(r.Body))
			}
		}
	})
}

// TestThreadCategoryUnavailable: a thread's read that loses the database on its category's lookup is
// 503 not_ready, as on the thread's own lookup, not 500 (the cause is kept when it is wrapped).
func TestThreadCategoryUnavailable(t *testing.T) {
	t.Parallel()
	w := newWorld(t, database.SQLite)
	th := w.thread(t, newAgent("timeout"), w.category(t, "slow"))
	var fail atomic.Bool
	if err := w.db.Callback().Query().Before("gorm:query").Register("test:timeout", func(tx *gorm.DB) {
		if fail.Load() && tx.Statement.Table == "forum_categories" {
			_ = tx.AddError(context.DeadlineExceeded)
		}
	}); err != nil {
		t.Fatal(err)
	}
	fail.Store(true)
	testkit.Expect(t, w.get(forum.ThreadPath+"/"+th), 503, "not_ready")
}
