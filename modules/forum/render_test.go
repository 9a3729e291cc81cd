package forum_test

import (
	"context"
	"io"
	"log/slog"
	"testing"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"

	"github.com/svcforum/svc/database/dbtest"
	"github.com/svcforum/svc/modules/forum"
)

// TestRenderStoresMissingHTML: posts without stored HTML (cleared by a migration, as forum_0011 did)
// get, from the render job, exactly the HTML their write stored; a post that has its HTML is left as
// it is, and a run with nothing to do finds nothing.
func TestRenderStoresMissingHTML(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, dialect string) {
		w := newWorld(t, dialect)
		a := newAgent("renderer")
		cat := w.category(t, "kitchen")
		thread := w.thread(t, a, cat, func(b map[string]any) {
			b["body_markdown"] = "A **bold** question, with [a link](https://example.com)."
		})
		reply := w.reply(t, a, thread, "", func(b map[string]any) { b["body_markdown"] = "- one\n- two\n\n<script>alert(1)</script>" })
		kept := w.reply(t, a, thread, "")
		stored := func(table, id string) string {
			t.Helper()
			var html *string
			if err := w.db.Table(table).Where("id = ?", id).Select("body_html").Row().Scan(&html); err != nil {
				t.Fatal(err)
			}
			if html == nil {
				return "<nil>"
			}
			return *html
		}
		wantThread, wantReply, wantKept := stored("forum_threads", thread), stored("forum_replies", reply), stored("forum_replies", kept)
		if wantThread == "<nil>" || wantReply == "<nil>" {
			t.Fatal("a write stored no HTML")
		}
		if err := w.db.Exec(`UPDATE forum_threads SET body_html = NULL`).Error; err != nil {
			t.Fatal(err)
		}
		if err := w.db.Exec(`UPDATE forum_replies SET body_html = NULL WHERE id = ?`, reply).Error; err != nil {
			t.Fatal(err)
		}

		r := forum.NewRenderer(w.db, slog.New(slog.NewTextHandler(io.Discard, nil)))
		n, err := r.RenderBatch(context.Background())
		if err != nil || n != 2 {
			t.Fatalf("rendered %d posts (%v), want the thread and the cleared reply", n, err)
		}
		if got := stored("forum_threads", thread); got != wantThread {
			t.Fatalf("thread HTML %q, its write stored %q", got, wantThread)
		}
		if got := stored("forum_replies", reply); got != wantReply {
			t.Fatalf("reply HTML %q, its write stored %q", got, wantReply)
		}
		if got := stored("forum_replies", kept); got != wantKept {
			t.Fatalf("a post with its HTML changed: %q, was %q", got, wantKept)
		}
		if n, err := r.RenderBatch(context.Background()); err != nil || n != 0 {
			t.Fatalf("a second batch rendered %d (%v), want none", n, err)
		}
		if err := r.Work(context.Background(), &river.Job[forum.RenderArgs]{JobRow: &rivertype.JobRow{}}); err != nil {
			t.Fatalf("a run with nothing to render: %v", err)
		}
	})
}
