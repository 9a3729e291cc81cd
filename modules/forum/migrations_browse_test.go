package forum_test

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-gormigrate/gormigrate/v2"

	"github.com/svcforum/svc/contracts/plugin"
	"github.com/svcforum/svc/contracts/site"
	"github.com/svcforum/svc/database"
	"github.com/svcforum/svc/database/dbtest"
	"github.com/svcforum/svc/modules/forum"
	"github.com/svcforum/svc/testkit"
)

// A database written before forum_0010 and forum_0011 is upgraded in place: its posts are found by
// stem ("lentil" finds "lentils") and shown with the new rendering (tables, images as links) rather
// than the HTML stored when they were written.
func TestBrowseMigrationsUpgradeStoredPosts(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, dialect string) {
		all := forum.Migrations()
		at := slices.IndexFunc(all.Steps, func(m *gormigrate.Migration) bool { return m.ID == "forum_0010_browsing" })
		if at < 0 || all.Steps[at+1].ID != "forum_0011_rerender_bodies" {
			t.Fatalf("forum_0010_browsing and forum_0011_rerender_bodies are not in order after forum_0009")
		}
		before := plugin.Migrations{Module: all.Module, Steps: all.Steps[:at]}
		db := dbtest.Open(t, dialect, before)
		cat, thread, reply := newID(), newID(), newID()
		now := testkit.T0
		body := "Rinse the lentils.\n\n| Item | Qty |\n|---|---|\n| lentils | 200 g |\n\n![the dal](https://img.example/dal.jpg)"
		for _, q := range []struct {
			sql  string
			args []any
		}{
			{`INSERT INTO forum_categories (id, slug, name, description, state, thread_count, created_at, updated_at) VALUES (?, 'kitchen', 'Kitchen', '', 'open', 1, ?, ?)`, []any{cat, now, now}},
			{`INSERT INTO forum_threads (id, category_id, author_id, author_handle, title, body_markdown, body_html, intent, score, up, down, reply_count, created_at, last_activity)
VALUES (?, ?, ?, 'chef', 'Dal', ?, '<p>as rendered before</p>', 'discussion', 0, 0, 0, 1, ?, ?)`, []any{thread, cat, newID(), body, now, now}},
			{`INSERT INTO forum_replies (id, thread_id, author_id, author_handle, body_markdown, body_html, intent, score, up, down, created_at)
VALUES (?, ?, ?, 'taster', 'More lentils.', '<p>old reply</p>', 'answer', 0, 0, 0, ?)`, []any{reply, thread, newID(), now}},
		} {
			if err := db.Exec(q.sql, q.args...).Error; err != nil {
				t.Fatal(err)
			}
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := database.Migrate(ctx, db, []plugin.Migrations{all}); err != nil {
			t.Fatalf("migrate: %v", err)
		}
		var kept int64
		if err := db.Raw(`SELECT (SELECT count(*) FROM forum_threads WHERE body_html IS NOT NULL) + (SELECT count(*) FROM forum_replies WHERE body_html IS NOT NULL)`).Scan(&kept).Error; err != nil {
			t.Fatal(err)
		}
		if kept != 0 {
			t.Errorf("%d posts keep the HTML rendered before forum_0011, want none", kept)
		}

		reads := forum.NewReads(plugin.ReadDB{DB: db}, cursors(t, testkit.NewClock(time.Now())), nil)
		g := testkit.Engine(t)
		testkit.MountPublic(t, g, reads.Routes())
		testkit.MountPublic(t, g, forum.NewPages(reads, site.New(forum.Nav())).Routes())
		w := &world{engine: g}
		var res forum.SearchResult
		w.read(t, forum.SearchPath+"?q=lentil", "search-result", &res)
		if len(res.Results) != 2 {
			t.Errorf("lentil finds %d posts written before forum_0010, want 2: %+v", len(res.Results), res.Results)
		}
		page := brPage(t, w, "/forum/t/"+thread)
		for _, want := range []string{"<td>lentils</td>", `<a class="image-link" href="https://img.example/dal.jpg" rel="nofollow noreferrer">image: the dal</a>`} {
			if !strings.Contains(page, want) {
				t.Errorf("thread page lacks %q", want)
			}
		}
		for _, unwanted := range []string{"as rendered before", "old reply", "<img"} {
			if strings.Contains(page, unwanted) {
				t.Errorf("thread page shows %q", unwanted)
			}
		}
	})
}
