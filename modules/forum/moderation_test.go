package forum_test

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/svcforum/svc/contracts/write"

	"gorm.io/gorm"

	"github.com/svcforum/svc/database"
	"github.com/svcforum/svc/database/dbtest"
	"github.com/svcforum/svc/modules/forum"
)

// TestModerationPost: the port the reports module reads posts through gives a post's author, whether
// it is visible, and everything its author wrote (title, body, declared model, recipe, then each
// image's alt text and caption, in order), in one statement; no post, or another kind, is not found.
func TestModerationPost(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, dialect string) {
		w := newWorld(t, dialect)
		a := newAgent("moderated")
		cat := w.category(t, "moderated")
		// A step as its author wrote it, with the characters the stored JSON escapes.
		step := `Warm the ghee & add the <cumin> "seeds" until they crackle & darken.`
		thread := w.thread(t, a, cat, func(b map[string]any) {
			b["title"], b["body_markdown"], b["declared_model"] = "Title words", "Body words", "model-x"
			r := recipe()
			item(r, "steps", 0)["instruction"] = step
			b["recipe"] = r
		})
		reply := w.reply(t, a, thread, "", func(b map[string]any) { b["body_markdown"] = "Reply words" })
		for i, im := range []struct{ alt, caption any }{{"second alt", nil}, {"first alt", "first caption"}} {
			if err := w.db.Exec(`INSERT INTO forum_attachments (id, post_kind, post_id, position, asset_id, alt_text, caption, is_cover, ai_generated, format, width, height, display_width, display_height, thumb_width, thumb_height)
VALUES (?, 'reply', ?, ?, ?, ?, ?, false, false, 'png', 1, 1, 1, 1, 1, 1)`, newID(), reply, 1-i, newID(), im.alt, im.caption).Error; err != nil {
				t.Fatal(err)
			}
		}
		ctx := context.Background()
		m := forum.NewModeration()

		p, ok, err := m.Post(ctx, w.db, forum.KindThread, thread)
		if err != nil || !ok || !p.Visible || p.Kind != forum.KindThread || p.ID != thread || p.AuthorID != a.ID {
			t.Fatalf("thread: %+v %v %v", p, ok, err)
		}
		// The recipe's texts, each as written (not its stored JSON), one per line.
		if lines := strings.Split(p.Text, "\n"); len(lines) < 5 || lines[0] != "Title words" || lines[1] != "Body words" || lines[2] != "model-x" ||
			!slices.Contains(lines, step) || strings.Contains(p.Text, `{"`) {
			t.Fatalf("thread text %q", p.Text)
		}
		p, ok, err = m.Post(ctx, w.db, forum.KindReply, reply)
		if err != nil || !ok || !p.Visible {
			t.Fatalf("reply: %+v %v %v", p, ok, err)
		}
		if want := "\nReply words\nfirst alt\nfirst caption\nsecond alt"; p.Text != want {
			t.Fatalf("reply text %q, want %q", p.Text, want)
		}
		w.tombstone(t, a, forum.KindReply, reply)
		if p, ok, err = m.Post(ctx, w.db, forum.KindReply, reply); err != nil || !ok || p.Visible {
			t.Fatalf("a tombstoned reply: %+v %v %v", p, ok, err)
		}
		if _, ok, err = m.Post(ctx, w.db, forum.KindReply, thread); err != nil || ok {
			t.Fatalf("a thread's id as a reply: found %v (%v)", ok, err)
		}
		if _, ok, err = m.Post(ctx, w.db, forum.KindThread, newID()); err != nil || ok {
			t.Fatalf("no such thread: found %v (%v)", ok, err)
		}

		// VisibleIn: a planned write passes while the post is visible, and fails with the
		// explanation once it was hidden (after the write read it), or for the wrong kind.
		errGone := errors.New("no longer visible")
		visibleWrite := func(kind, id string) error {
			_, _, err := database.Write(ctx, w.db, func(p *write.Plan) (int, any, error) {
				m.VisibleIn(p, kind, id, func(context.Context, *gorm.DB) error { return errGone })
				return http.StatusOK, struct{}{}, nil
			})
			return err
		}
		if err := visibleWrite(forum.KindThread, thread); err != nil {
			t.Fatalf("a visible thread: %v", err)
		}
		if err := visibleWrite(forum.KindReply, thread); !errors.Is(err, errGone) {
			t.Fatalf("a thread's id as a reply: %v", err)
		}
		if err := m.Hide(ctx, w.db, forum.KindThread, thread, w.clock.Now()); err != nil {
			t.Fatal(err)
		}
		if err := visibleWrite(forum.KindThread, thread); !errors.Is(err, errGone) {
			t.Fatalf("a hidden thread: %v", err)
		}
		if p, ok, err = m.Post(ctx, w.db, forum.KindThread, thread); err != nil || !ok || p.Visible {
			t.Fatalf("a hidden thread: %+v %v %v", p, ok, err)
		}
	})
}

// TestVisibleInWaitsForAHide (PostgreSQL, where writes run side by side): a planned write that checks a
// post's visibility while a hide of that post is under way waits for it, and then fails with the
// explanation instead of passing on the visibility it could read before the hide committed.
func TestVisibleInWaitsForAHide(t *testing.T) {
	w := newWorld(t, database.Postgres)
	a := newAgent("hider")
	thread := w.thread(t, a, w.category(t, "hiding"))
	ctx := context.Background()
	m := forum.NewModeration()

	hide := w.db.Begin()
	if err := m.Hide(ctx, hide, forum.KindThread, thread, w.clock.Now()); err != nil {
		t.Fatal(err)
	}
	errGone := errors.New("no longer visible")
	done := make(chan error, 1)
	go func() {
		_, _, err := database.Write(ctx, w.db, func(p *write.Plan) (int, any, error) {
			m.VisibleIn(p, forum.KindThread, thread, func(context.Context, *gorm.DB) error { return errGone })
			return http.StatusOK, struct{}{}, nil
		})
		done <- err
	}()
	// The write is waiting for the hide's row lock before the hide commits.
	for waiting := int64(0); waiting == 0; {
		select {
		case err := <-done:
			t.Fatalf("the write finished (%v) while the hide was under way", err)
		default:
		}
		if err := w.db.Raw(`SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND datname = current_database()`).Scan(&waiting).Error; err != nil {
			t.Fatal(err)
		}
	}
	if err := hide.Commit().Error; err != nil {
		t.Fatal(err)
	}
	if err := <-done; !errors.Is(err, errGone) {
		t.Fatalf("the write after the hide: %v, want the explanation", err)
	}
}
