package host

import (
	"context"
	"fmt"
	"testing"
	"time"

	"go.uber.org/fx"
	"gorm.io/gorm"

	"github.com/svcforum/svc/contracts/port"
	"github.com/svcforum/svc/database/dbtest"
	"github.com/svcforum/svc/modules/forum"
)

// TestRenderJobStoresMissingHTML: the forum's render job runs on the service's job runner (River, on
// either dialect) and stores the HTML of a post that has none, as its write had.
func TestRenderJobStoresMissingHTML(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, dialect string) {
		cfg := testConfig(t, dialect)
		cfg.Jobs.PollInterval = 50 * time.Millisecond
		env := map[string]string{"SVC_DATABASE_URL": cfg.DatabaseURL}
		migrateFirst(t, env)
		id := provision(t, env, "rendered-"+dialect)
		publish(t, env, wirePricing)
		credit(t, env, id.orgID, 10)
		catID := admin(t, env, "category", "create", "--slug", "rendering", "--name", "Rendering", "--description", "Stored HTML")["category_id"].(string)
		var jobs port.Jobs
		var db *gorm.DB
		r := start(t, cfg, allModules(t), fx.Populate(&jobs, &db))
		agent := "http://" + r.listeners.Addr(ListenerAgentEdge)
		thread := fmt.Sprintf(`{"category_id":%q,"title":"Rendered","body_markdown":"Some **bold** text.",%s}`, catID, billing10)
		threadID := decodeBody(t, forumPost(t, id, agent, "/threads", "r-1", thread), 200, "created-thread-response")["thread_id"].(string)

		html := func() *string {
			t.Helper()
			var h *string
			if err := db.Table("forum_threads").Where("id = ?", threadID).Select("body_html").Row().Scan(&h); err != nil {
				t.Fatal(err)
			}
			return h
		}
		written := html()
		if written == nil {
			t.Fatal("the write stored no HTML")
		}
		if err := db.Exec(`UPDATE forum_threads SET body_html = NULL WHERE id = ?`, threadID).Error; err != nil {
			t.Fatal(err)
		}
		if err := db.Transaction(func(tx *gorm.DB) error { return jobs.InsertTx(context.Background(), tx, forum.RenderArgs{}, nil) }); err != nil {
			t.Fatal(err)
		}
		for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(50 * time.Millisecond) {
			if h := html(); h != nil {
				if *h != *written {
					t.Fatalf("the job stored %q, the write %q", *h, *written)
				}
				return
			}
			if time.Now().After(deadline) {
				t.Fatal("the render job stored no HTML within 30 s")
			}
		}
	})
}
